//! Parse time of the unpickler: the opcode machine over cheap-to-clone values, mutable containers in an arena.

use std::collections::HashMap;
use std::rc::Rc;

use super::PickleError;

// ---------------------------------------------------------------------------------------------------------------
// Parse-time representation: cheap-to-clone values; mutable containers live in the arena and are shared by index.

#[derive(Debug, Clone)]
pub(super) enum V {
    None,
    Bool(bool),
    Int(i64),
    BigInt(Rc<[u8]>),
    Float(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    Global(Rc<(String, String)>),
    Ref(usize),
}

#[derive(Debug)]
pub(super) enum Node {
    List(Vec<V>),
    Tuple(Vec<V>),
    Dict(Vec<(V, V)>),
    Set(Vec<V>),
    FrozenSet(Vec<V>),
    /// `args`: a tuple node (shared, never copied); `kwargs`: a dict node.
    Object {
        class: V,
        args: V,
        kwargs: Option<V>,
        state: Option<V>,
        dict_items: Vec<(V, V)>,
        list_items: Vec<V>,
    },
    PersistentId(V),
}

pub(super) struct Machine<'a> {
    pub(super) data: &'a [u8],
    pub(super) pos: usize,
    pub(super) stack: Vec<V>,
    pub(super) marks: Vec<usize>,
    pub(super) memo: HashMap<u64, V>,
    pub(super) arena: Vec<Node>,
    /// Elements/bytes that folding builtins may still copy (see [`Machine::spend`]).
    pub(super) copy_budget: usize,
}

pub(crate) mod op {
    pub const MARK: u8 = b'(';
    pub const STOP: u8 = b'.';
    pub const POP: u8 = b'0';
    pub const POP_MARK: u8 = b'1';
    pub const DUP: u8 = b'2';
    pub const FLOAT: u8 = b'F';
    pub const INT: u8 = b'I';
    pub const BININT: u8 = b'J';
    pub const BININT1: u8 = b'K';
    pub const LONG: u8 = b'L';
    pub const BININT2: u8 = b'M';
    pub const NONE: u8 = b'N';
    pub const PERSID: u8 = b'P';
    pub const BINPERSID: u8 = b'Q';
    pub const REDUCE: u8 = b'R';
    pub const STRING: u8 = b'S';
    pub const BINSTRING: u8 = b'T';
    pub const SHORT_BINSTRING: u8 = b'U';
    pub const UNICODE: u8 = b'V';
    pub const BINUNICODE: u8 = b'X';
    pub const APPEND: u8 = b'a';
    pub const BUILD: u8 = b'b';
    pub const GLOBAL: u8 = b'c';
    pub const DICT: u8 = b'd';
    pub const EMPTY_DICT: u8 = b'}';
    pub const APPENDS: u8 = b'e';
    pub const GET: u8 = b'g';
    pub const BINGET: u8 = b'h';
    pub const INST: u8 = b'i';
    pub const LONG_BINGET: u8 = b'j';
    pub const LIST: u8 = b'l';
    pub const EMPTY_LIST: u8 = b']';
    pub const OBJ: u8 = b'o';
    pub const PUT: u8 = b'p';
    pub const BINPUT: u8 = b'q';
    pub const LONG_BINPUT: u8 = b'r';
    pub const SETITEM: u8 = b's';
    pub const TUPLE: u8 = b't';
    pub const EMPTY_TUPLE: u8 = b')';
    pub const SETITEMS: u8 = b'u';
    pub const BINFLOAT: u8 = b'G';
    pub const PROTO: u8 = 0x80;
    pub const NEWOBJ: u8 = 0x81;
    pub const EXT1: u8 = 0x82;
    pub const EXT2: u8 = 0x83;
    pub const EXT4: u8 = 0x84;
    pub const TUPLE1: u8 = 0x85;
    pub const TUPLE2: u8 = 0x86;
    pub const TUPLE3: u8 = 0x87;
    pub const NEWTRUE: u8 = 0x88;
    pub const NEWFALSE: u8 = 0x89;
    pub const LONG1: u8 = 0x8a;
    pub const LONG4: u8 = 0x8b;
    pub const BINBYTES: u8 = b'B';
    pub const SHORT_BINBYTES: u8 = b'C';
    pub const SHORT_BINUNICODE: u8 = 0x8c;
    pub const BINUNICODE8: u8 = 0x8d;
    pub const BINBYTES8: u8 = 0x8e;
    pub const EMPTY_SET: u8 = 0x8f;
    pub const ADDITEMS: u8 = 0x90;
    pub const FROZENSET: u8 = 0x91;
    pub const NEWOBJ_EX: u8 = 0x92;
    pub const STACK_GLOBAL: u8 = 0x93;
    pub const MEMOIZE: u8 = 0x94;
    pub const FRAME: u8 = 0x95;
    pub const BYTEARRAY8: u8 = 0x96;
    pub const NEXT_BUFFER: u8 = 0x97;
    pub const READONLY_BUFFER: u8 = 0x98;
}

type R<T> = Result<T, PickleError>;

impl<'a> Machine<'a> {
    fn err<T>(&self, message: impl Into<String>) -> R<T> {
        Err(PickleError { offset: self.pos, message: message.into() })
    }

    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = match self.pos.checked_add(n) {
            Some(e) if e <= self.data.len() => e,
            _ => {
                return self
                    .err(format!("truncated input: need {n} bytes, {} left", self.data.len().saturating_sub(self.pos)))
            }
        };
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn take_len(&mut self, n: u64) -> R<&'a [u8]> {
        match usize::try_from(n) {
            Ok(n) => self.take(n),
            Err(_) => self.err(format!("length {n} exceeds the input")),
        }
    }

    fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> R<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> R<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> R<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A text line (without the trailing `\n`), for the protocol-0 opcodes.
    fn line(&mut self) -> R<&'a str> {
        let rest = &self.data[self.pos..];
        let Some(n) = rest.iter().position(|&b| b == b'\n') else {
            return self.err("truncated input: missing end of line");
        };
        let raw = &rest[..n];
        self.pos += n + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        match std::str::from_utf8(raw) {
            Ok(s) => Ok(s),
            Err(_) => self.err("text line is not valid UTF-8"),
        }
    }

    fn utf8(&self, b: &[u8]) -> R<V> {
        match std::str::from_utf8(b) {
            Ok(s) => Ok(V::Str(Rc::from(s))),
            Err(e) => self.err(format!("string is not valid UTF-8: {e}")),
        }
    }

    fn push(&mut self, v: V) {
        self.stack.push(v);
    }

    fn alloc(&mut self, n: Node) -> V {
        self.arena.push(n);
        V::Ref(self.arena.len() - 1)
    }

    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn pop(&mut self) -> R<V> {
        if self.stack.len() <= self.floor() {
            return self.err("stack underflow");
        }
        Ok(self.stack.pop().expect("checked non-empty"))
    }

    fn top(&self) -> R<&V> {
        if self.stack.len() <= self.floor() {
            return self.err("stack underflow");
        }
        Ok(self.stack.last().expect("checked non-empty"))
    }

    fn pop_mark(&mut self) -> R<Vec<V>> {
        let Some(m) = self.marks.pop() else {
            return self.err("no MARK on the stack");
        };
        // `m <= stack.len()` holds: pops never go below the innermost mark.
        Ok(self.stack.split_off(m))
    }

    fn memo_put(&mut self, idx: u64) -> R<()> {
        let v = self.top()?.clone();
        self.memo.insert(idx, v);
        Ok(())
    }

    fn memo_get(&mut self, idx: u64) -> R<()> {
        match self.memo.get(&idx) {
            Some(v) => {
                let v = v.clone();
                self.push(v);
                Ok(())
            }
            None => self.err(format!("memo key {idx} not found")),
        }
    }

    fn global(&self, module: &str, name: &str) -> V {
        let module = match module {
            "__builtin__" => "builtins",
            "copy_reg" => "copyreg",
            m => m,
        };
        V::Global(Rc::new((module.to_string(), name.to_string())))
    }

    /// Elements of a tuple (or, where `lists` is set, a list) node, borrowed.
    fn seq_of(&self, v: &V, lists: bool) -> Option<&[V]> {
        match v {
            V::Ref(i) => match &self.arena[*i] {
                Node::Tuple(t) => Some(t),
                Node::List(l) if lists => Some(l),
                _ => None,
            },
            _ => None,
        }
    }

    /// Charges `n` copied elements/bytes against the copy budget (stops quadratic blow-ups through shared refs).
    fn spend(&mut self, n: usize) -> R<()> {
        match self.copy_budget.checked_sub(n) {
            Some(left) => {
                self.copy_budget = left;
                Ok(())
            }
            None => self.err("pickle copies too much data (shared references reused too often?)"),
        }
    }

    fn object(&mut self, class: V, args: V, kwargs: Option<V>) -> V {
        self.alloc(Node::Object { class, args, kwargs, state: None, dict_items: Vec::new(), list_items: Vec::new() })
    }

    /// `class(*args, **kwargs)` (`args` a tuple node, `kwargs` a dict node), folding the few builtins that
    /// `torch.save` uses for plain data; everything else becomes an opaque object that shares `args`.
    fn call(&mut self, class: V, args: V, kwargs: Option<V>) -> R<V> {
        let g = match (&class, &kwargs) {
            (V::Global(g), None) => g.clone(),
            _ => return Ok(self.object(class, args, kwargs)),
        };
        let argv = self.seq_of(&args, false).unwrap_or(&[]);
        match (g.0.as_str(), g.1.as_str(), argv) {
            ("collections", "OrderedDict", []) | ("builtins", "dict", []) => {
                return Ok(self.alloc(Node::Dict(Vec::new())));
            }
            ("collections", "OrderedDict", [a]) | ("builtins", "dict", [a]) => {
                if let Some(pairs) = self.seq_of(a, true) {
                    let mut items = Vec::with_capacity(pairs.len());
                    for p in pairs {
                        match self.seq_of(p, true) {
                            Some([k, v]) => items.push((k.clone(), v.clone())),
                            _ => return self.err(format!("{}.{}: argument is not a sequence of pairs", g.0, g.1)),
                        }
                    }
                    self.spend(items.len())?;
                    return Ok(self.alloc(Node::Dict(items)));
                }
            }
            ("builtins", n @ ("set" | "frozenset"), []) => {
                let node = if n == "set" { Node::Set(Vec::new()) } else { Node::FrozenSet(Vec::new()) };
                return Ok(self.alloc(node));
            }
            ("builtins", n @ ("set" | "frozenset"), [a]) => {
                if let Some(items) = self.seq_of(a, true) {
                    let items = items.to_vec();
                    self.spend(items.len())?;
                    let node = if n == "set" { Node::Set(items) } else { Node::FrozenSet(items) };
                    return Ok(self.alloc(node));
                }
            }
            ("builtins", "list", []) => return Ok(self.alloc(Node::List(Vec::new()))),
            ("builtins", "bytes" | "bytearray", []) => return Ok(V::Bytes(Rc::from(&[][..]))),
            ("_codecs", "encode", [V::Str(s), V::Str(enc)])
                if matches!(&**enc, "latin1" | "latin-1" | "iso-8859-1") =>
            {
                let s = s.clone();
                self.spend(s.len())?;
                let mut out = Vec::with_capacity(s.len());
                for c in s.chars() {
                    match u8::try_from(u32::from(c)) {
                        Ok(b) => out.push(b),
                        Err(_) => return self.err("_codecs.encode: character outside latin-1"),
                    }
                }
                return Ok(V::Bytes(Rc::from(out)));
            }
            // copyreg._reconstructor(cls, object, None) == object.__new__(cls)
            ("copyreg", "_reconstructor", [cls, V::Global(base), V::None])
                if base.0 == "builtins" && base.1 == "object" =>
            {
                let cls = cls.clone();
                let no_args = self.alloc(Node::Tuple(Vec::new()));
                return Ok(self.object(cls, no_args, None));
            }
            _ => {}
        }
        Ok(self.object(class, args, kwargs))
    }

    fn set_items(&mut self, target: &V, items: Vec<(V, V)>) -> R<()> {
        match target {
            V::Ref(i) => match &mut self.arena[*i] {
                Node::Dict(d) => d.extend(items),
                Node::Object { dict_items, .. } => dict_items.extend(items),
                _ => return self.err("SETITEM(S) on a value that is not a dict or an object"),
            },
            _ => return self.err("SETITEM(S) on a value that is not a dict or an object"),
        }
        Ok(())
    }

    fn append_items(&mut self, target: &V, items: Vec<V>, what: &str) -> R<()> {
        match target {
            V::Ref(i) => match &mut self.arena[*i] {
                Node::List(l) if what != "ADDITEMS" => l.extend(items),
                Node::Set(s) if what == "ADDITEMS" => s.extend(items),
                Node::Object { list_items, .. } => list_items.extend(items),
                _ => return self.err(format!("{what} on a value of the wrong type")),
            },
            _ => return self.err(format!("{what} on a value of the wrong type")),
        }
        Ok(())
    }

    pub(super) fn run(&mut self) -> R<V> {
        loop {
            let at = self.pos;
            let code = self.u8()?;
            match code {
                op::PROTO => {
                    let p = self.u8()?;
                    if p > 5 {
                        return self.err(format!("unsupported pickle protocol {p}"));
                    }
                }
                op::FRAME => {
                    let _frame_len = self.u64()?;
                }
                op::STOP => {
                    let v = self.pop()?;
                    return Ok(v);
                }
                op::MARK => self.marks.push(self.stack.len()),
                op::POP => {
                    if self.stack.len() > self.floor() {
                        self.stack.pop();
                    } else {
                        self.pop_mark()?;
                    }
                }
                op::POP_MARK => {
                    self.pop_mark()?;
                }
                op::DUP => {
                    let v = self.top()?.clone();
                    self.push(v);
                }
                // --- scalars -----------------------------------------------------------------------------------
                op::NONE => self.push(V::None),
                op::NEWTRUE => self.push(V::Bool(true)),
                op::NEWFALSE => self.push(V::Bool(false)),
                op::BININT => {
                    let v = self.u32()? as i32;
                    self.push(V::Int(v as i64));
                }
                op::BININT1 => {
                    let v = self.u8()?;
                    self.push(V::Int(v as i64));
                }
                op::BININT2 => {
                    let v = self.u16()?;
                    self.push(V::Int(v as i64));
                }
                op::LONG1 => {
                    let n = self.u8()? as u64;
                    let b = self.take_len(n)?;
                    self.push(long_from_le(b));
                }
                op::LONG4 => {
                    let n = self.u32()? as i32;
                    if n < 0 {
                        return self.err("LONG4 with negative length");
                    }
                    let b = self.take_len(n as u64)?;
                    self.push(long_from_le(b));
                }
                op::INT => {
                    let l = self.line()?;
                    let v = match l {
                        "00" => V::Bool(false),
                        "01" => V::Bool(true),
                        s => match s.parse::<i64>() {
                            Ok(i) => V::Int(i),
                            Err(_) => return self.err(format!("bad INT literal {s:?}")),
                        },
                    };
                    self.push(v);
                }
                op::LONG => {
                    let l = self.line()?;
                    let s = l.strip_suffix('L').unwrap_or(l);
                    match s.parse::<i64>() {
                        Ok(i) => self.push(V::Int(i)),
                        Err(_) => return self.err(format!("unsupported LONG literal {s:?}")),
                    }
                }
                op::BINFLOAT => {
                    let b = self.take(8)?;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    self.push(V::Float(f64::from_be_bytes(a)));
                }
                op::FLOAT => {
                    let l = self.line()?;
                    match l.parse::<f64>() {
                        Ok(f) => self.push(V::Float(f)),
                        Err(_) => return self.err(format!("bad FLOAT literal {l:?}")),
                    }
                }
                // --- strings and bytes -------------------------------------------------------------------------
                op::BINUNICODE => {
                    let n = self.u32()? as u64;
                    let b = self.take_len(n)?;
                    let v = self.utf8(b)?;
                    self.push(v);
                }
                op::SHORT_BINUNICODE => {
                    let n = self.u8()? as u64;
                    let b = self.take_len(n)?;
                    let v = self.utf8(b)?;
                    self.push(v);
                }
                op::BINUNICODE8 => {
                    let n = self.u64()?;
                    let b = self.take_len(n)?;
                    let v = self.utf8(b)?;
                    self.push(v);
                }
                op::BINSTRING => {
                    // Python 2 `str`; unpickled as text like Python 3 does with encoding="ASCII"/"latin1".
                    let n = self.u32()? as i32;
                    if n < 0 {
                        return self.err("BINSTRING with negative length");
                    }
                    let b = self.take_len(n as u64)?;
                    self.push(V::Str(Rc::from(latin1(b))));
                }
                op::SHORT_BINSTRING => {
                    let n = self.u8()? as u64;
                    let b = self.take_len(n)?;
                    self.push(V::Str(Rc::from(latin1(b))));
                }
                op::BINBYTES => {
                    let n = self.u32()? as u64;
                    let b = self.take_len(n)?;
                    self.push(V::Bytes(Rc::from(b)));
                }
                op::SHORT_BINBYTES => {
                    let n = self.u8()? as u64;
                    let b = self.take_len(n)?;
                    self.push(V::Bytes(Rc::from(b)));
                }
                op::BINBYTES8 | op::BYTEARRAY8 => {
                    let n = self.u64()?;
                    let b = self.take_len(n)?;
                    self.push(V::Bytes(Rc::from(b)));
                }
                op::STRING | op::UNICODE => {
                    return self.err("text-mode STRING/UNICODE opcodes (pickle protocol 0) are not supported")
                }
                op::NEXT_BUFFER => return self.err("out-of-band buffers (NEXT_BUFFER) are not supported"),
                op::READONLY_BUFFER => {
                    self.top()?;
                }
                // --- containers --------------------------------------------------------------------------------
                op::EMPTY_DICT => {
                    let v = self.alloc(Node::Dict(Vec::new()));
                    self.push(v);
                }
                op::EMPTY_LIST => {
                    let v = self.alloc(Node::List(Vec::new()));
                    self.push(v);
                }
                op::EMPTY_TUPLE => {
                    let v = self.alloc(Node::Tuple(Vec::new()));
                    self.push(v);
                }
                op::EMPTY_SET => {
                    let v = self.alloc(Node::Set(Vec::new()));
                    self.push(v);
                }
                op::TUPLE => {
                    let items = self.pop_mark()?;
                    let v = self.alloc(Node::Tuple(items));
                    self.push(v);
                }
                op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                    let n = (code - op::TUPLE1 + 1) as usize;
                    if self.stack.len() < self.floor() + n {
                        return self.err("stack underflow");
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    let v = self.alloc(Node::Tuple(items));
                    self.push(v);
                }
                op::LIST => {
                    let items = self.pop_mark()?;
                    let v = self.alloc(Node::List(items));
                    self.push(v);
                }
                op::DICT => {
                    let items = self.pop_mark()?;
                    if items.len() % 2 != 0 {
                        return self.err("DICT with an odd number of items");
                    }
                    let pairs = pairs(items);
                    let v = self.alloc(Node::Dict(pairs));
                    self.push(v);
                }
                op::FROZENSET => {
                    let items = self.pop_mark()?;
                    let v = self.alloc(Node::FrozenSet(items));
                    self.push(v);
                }
                op::APPEND => {
                    let v = self.pop()?;
                    let t = self.top()?.clone();
                    self.append_items(&t, vec![v], "APPEND")?;
                }
                op::APPENDS => {
                    let items = self.pop_mark()?;
                    let t = self.top()?.clone();
                    self.append_items(&t, items, "APPENDS")?;
                }
                op::ADDITEMS => {
                    let items = self.pop_mark()?;
                    let t = self.top()?.clone();
                    self.append_items(&t, items, "ADDITEMS")?;
                }
                op::SETITEM => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    let t = self.top()?.clone();
                    self.set_items(&t, vec![(k, v)])?;
                }
                op::SETITEMS => {
                    let items = self.pop_mark()?;
                    if items.len() % 2 != 0 {
                        return self.err("SETITEMS with an odd number of items");
                    }
                    let t = self.top()?.clone();
                    self.set_items(&t, pairs(items))?;
                }
                // --- memo --------------------------------------------------------------------------------------
                op::BINPUT => {
                    let i = self.u8()? as u64;
                    self.memo_put(i)?;
                }
                op::LONG_BINPUT => {
                    let i = self.u32()? as u64;
                    self.memo_put(i)?;
                }
                op::PUT => {
                    let l = self.line()?;
                    let Ok(i) = l.parse::<u64>() else { return self.err(format!("bad PUT index {l:?}")) };
                    self.memo_put(i)?;
                }
                op::MEMOIZE => {
                    let i = self.memo.len() as u64;
                    self.memo_put(i)?;
                }
                op::BINGET => {
                    let i = self.u8()? as u64;
                    self.memo_get(i)?;
                }
                op::LONG_BINGET => {
                    let i = self.u32()? as u64;
                    self.memo_get(i)?;
                }
                op::GET => {
                    let l = self.line()?;
                    let Ok(i) = l.parse::<u64>() else { return self.err(format!("bad GET index {l:?}")) };
                    self.memo_get(i)?;
                }
                // --- globals and objects -----------------------------------------------------------------------
                op::GLOBAL => {
                    let module = self.line()?;
                    let name = self.line()?;
                    let g = self.global(module, name);
                    self.push(g);
                }
                op::STACK_GLOBAL => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    match (&module, &name) {
                        (V::Str(m), V::Str(n)) => {
                            let g = self.global(m, n);
                            self.push(g);
                        }
                        _ => return self.err("STACK_GLOBAL needs two strings"),
                    }
                }
                op::REDUCE | op::NEWOBJ => {
                    let args = self.pop()?;
                    let cls = self.pop()?;
                    if self.seq_of(&args, false).is_none() {
                        return self.err(format!("{} arguments are not a tuple", opname(code)));
                    }
                    let v = self.call(cls, args, None)?;
                    self.push(v);
                }
                op::NEWOBJ_EX => {
                    let kwargs = self.pop()?;
                    let args = self.pop()?;
                    let cls = self.pop()?;
                    if self.seq_of(&args, false).is_none() {
                        return self.err("NEWOBJ_EX arguments are not a tuple");
                    }
                    if !matches!(&kwargs, V::Ref(i) if matches!(self.arena[*i], Node::Dict(_))) {
                        return self.err("NEWOBJ_EX keyword arguments are not a dict");
                    }
                    let v = self.call(cls, args, Some(kwargs))?;
                    self.push(v);
                }
                op::OBJ => {
                    let mut items = self.pop_mark()?;
                    if items.is_empty() {
                        return self.err("OBJ without a class");
                    }
                    let cls = items.remove(0);
                    let args = self.alloc(Node::Tuple(items));
                    let v = self.call(cls, args, None)?;
                    self.push(v);
                }
                op::INST => {
                    let module = self.line()?;
                    let name = self.line()?;
                    let cls = self.global(module, name);
                    let items = self.pop_mark()?;
                    let args = self.alloc(Node::Tuple(items));
                    let v = self.call(cls, args, None)?;
                    self.push(v);
                }
                op::BUILD => {
                    let state = self.pop()?;
                    let target = self.top()?.clone();
                    match target {
                        V::Ref(i) => match &mut self.arena[i] {
                            Node::Object { state: s, .. } => *s = Some(state),
                            // e.g. the `_metadata` attribute of a state_dict OrderedDict: dropped.
                            Node::Dict(_) | Node::List(_) | Node::Set(_) => {}
                            _ => return self.err("BUILD on a value that is not an object"),
                        },
                        _ => return self.err("BUILD on a value that is not an object"),
                    }
                }
                op::PERSID => {
                    let l = self.line()?;
                    let id = V::Str(Rc::from(l));
                    let v = self.alloc(Node::PersistentId(id));
                    self.push(v);
                }
                op::BINPERSID => {
                    let id = self.pop()?;
                    let v = self.alloc(Node::PersistentId(id));
                    self.push(v);
                }
                op::EXT1 | op::EXT2 | op::EXT4 => {
                    return self.err("extension registry opcodes (EXT1/2/4) are not supported")
                }
                other => {
                    self.pos = at;
                    return self.err(format!("unknown opcode 0x{other:02x}"));
                }
            }
        }
    }
}

fn opname(code: u8) -> &'static str {
    match code {
        op::REDUCE => "REDUCE",
        op::NEWOBJ => "NEWOBJ",
        _ => "opcode",
    }
}

fn pairs(items: Vec<V>) -> Vec<(V, V)> {
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    out
}

fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| c as char).collect()
}

/// Decodes a little-endian two's complement integer (`LONG1`/`LONG4`).
pub(super) fn long_from_le(b: &[u8]) -> V {
    if b.is_empty() {
        return V::Int(0);
    }
    let neg = b[b.len() - 1] & 0x80 != 0;
    // Strip redundant sign-extension bytes, then see whether it fits in 8 bytes.
    let fill = if neg { 0xff } else { 0x00 };
    let mut n = b.len();
    while n > 1 && b[n - 1] == fill && (b[n - 2] & 0x80 != 0) == neg {
        n -= 1;
    }
    if n <= 8 {
        let mut a = [fill; 8];
        a[..n].copy_from_slice(&b[..n]);
        V::Int(i64::from_le_bytes(a))
    } else {
        V::BigInt(Rc::from(&b[..n]))
    }
}
