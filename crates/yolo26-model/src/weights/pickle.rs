//! A small, safe Python unpickler (protocols 0-5 as far as `torch.save` needs them) that builds a [`Value`] tree.
//!
//! Nothing is ever executed: `GLOBAL`/`STACK_GLOBAL` produce [`Value::Global`] names, `REDUCE`/`NEWOBJ`/`NEWOBJ_EX`
//! produce opaque [`Value::Object`]s that record the callable and its arguments, and `BUILD` records the state on
//! the object. A handful of well-known builtins are folded into plain values because `torch.save` (pickle protocol
//! 2 by default) emits them for ordinary data: `collections.OrderedDict()` → [`Value::Dict`], `builtins.set(list)` /
//! `frozenset(list)` → [`Value::Set`] / [`Value::FrozenSet`], `_codecs.encode(str, "latin1")` → [`Value::Bytes`] and
//! `copyreg._reconstructor(cls, object, None)` → an object of class `cls`.
//!
//! Python's reference semantics are kept while parsing (mutable containers live in an arena and the memo stores
//! references, so a dict filled by `SETITEMS` after `BINPUT` is seen filled through a later `BINGET`); the result is
//! then copied out into an owned tree. Shared objects are duplicated in the tree, a reference to an object that
//! encloses itself becomes [`Value::Recursive`].
//!
//! Hostile input is handled with errors, never panics: every length is checked against the remaining input before
//! anything is allocated, the memo is a map (indices are not trusted for allocation), stack underflow / missing
//! marks are errors, and the output tree is limited in depth ([`MAX_DEPTH`]) and size ([`MAX_NODES`], which stops
//! "billion laughs" memo bombs that would expand shared references exponentially).

use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

/// Maximum nesting depth of the produced tree.
pub const MAX_DEPTH: usize = 512;
/// Maximum number of nodes in the produced tree (shared references count once per occurrence).
pub const MAX_NODES: usize = 8_000_000;
/// Maximum total size of the strings/bytes in the produced tree, on top of 4× the input size.
pub const MAX_BYTES: usize = 256 << 20;

/// A decoded pickle value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    /// An integer that fits in `i64`.
    Int(i64),
    /// An integer that does not fit in `i64`: little-endian two's complement bytes (as `LONG1`/`LONG4` store it).
    BigInt(Vec<u8>),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    /// Insertion-ordered `(key, value)` pairs (a `dict` or `OrderedDict`); a key set twice keeps its first position
    /// and its last value, as in Python.
    Dict(Vec<(Value, Value)>),
    Set(Vec<Value>),
    FrozenSet(Vec<Value>),
    /// A name imported by `GLOBAL`/`STACK_GLOBAL`/`INST`/`OBJ` (Python 2 module names `__builtin__`/`copy_reg` are
    /// mapped to `builtins`/`copyreg`).
    Global {
        module: String,
        name: String,
    },
    /// The result of calling `class` (`REDUCE`, `NEWOBJ`, `NEWOBJ_EX`, `OBJ`, `INST`) — never actually called.
    Object(Box<Object>),
    /// The argument of `PERSID`/`BINPERSID` (for `torch.save`, a `('storage', type, key, location, numel)` tuple).
    PersistentId(Box<Value>),
    /// A reference back to an object that (transitively) contains itself.
    Recursive,
}

/// An opaque object: what was called, with what, and what was set on it afterwards.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// The callable (usually a [`Value::Global`]).
    pub class: Value,
    /// Positional arguments (the `REDUCE`/`NEWOBJ` argument tuple).
    pub args: Vec<Value>,
    /// Keyword arguments (`NEWOBJ_EX`).
    pub kwargs: Vec<(Value, Value)>,
    /// The `BUILD` state (for most classes the instance `__dict__`, a [`Value::Dict`]).
    pub state: Option<Value>,
    /// Items stored with `SETITEM(S)` (dict subclasses).
    pub dict_items: Vec<(Value, Value)>,
    /// Items added with `APPEND(S)`/`ADDITEMS` (list or set subclasses).
    pub list_items: Vec<Value>,
}

/// Why unpickling failed, and at which byte of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickleError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for PickleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pickle error at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for PickleError {}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            Value::Int(i) => Some(*i != 0),
            _ => None,
        }
    }

    /// Elements of a tuple or list.
    pub fn as_seq(&self) -> Option<&[Value]> {
        match self {
            Value::Tuple(v) | Value::List(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_dict(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Dict(d) => Some(d),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn is_none(&self) -> bool {
        matches!(self, Value::None)
    }

    /// `self` is the global `module.name`.
    pub fn is_global(&self, module: &str, name: &str) -> bool {
        matches!(self, Value::Global { module: m, name: n } if m == module && n == name)
    }

    /// Looks up a string key in a dict (the last occurrence wins).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_dict()?.iter().rev().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
    }

    /// A short description of the value's type for error messages (`dict`, `str`, `object __main__.Foo`, ...).
    pub fn type_name(&self) -> String {
        match self {
            Value::None => "None".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) | Value::BigInt(_) => "int".into(),
            Value::Float(_) => "float".into(),
            Value::Str(_) => "str".into(),
            Value::Bytes(_) => "bytes".into(),
            Value::List(_) => "list".into(),
            Value::Tuple(_) => "tuple".into(),
            Value::Dict(_) => "dict".into(),
            Value::Set(_) => "set".into(),
            Value::FrozenSet(_) => "frozenset".into(),
            Value::Global { module, name } => format!("global {module}.{name}"),
            Value::Object(o) => match &o.class {
                Value::Global { module, name } => format!("object {module}.{name}"),
                other => format!("object of {}", other.type_name()),
            },
            Value::PersistentId(_) => "persistent id".into(),
            Value::Recursive => "recursive reference".into(),
        }
    }
}

/// Unpickles one pickle from `data` (bytes after its `STOP` are ignored).
pub fn unpickle(data: &[u8]) -> Result<Value, PickleError> {
    let mut m = Machine {
        data,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        arena: Vec::new(),
        copy_budget: data.len().saturating_mul(2).saturating_add(1 << 20),
    };
    let root = m.run()?;
    let bytes_left = MAX_BYTES.saturating_add(data.len().saturating_mul(4));
    let mut fr = Freezer { arena: &m.arena, visiting: vec![false; m.arena.len()], nodes: 0, bytes_left };
    fr.freeze(&root, 0).map_err(|message| PickleError { offset: data.len().min(m.pos), message })
}

// ---------------------------------------------------------------------------------------------------------------
// Parse-time representation: cheap-to-clone values; mutable containers live in the arena and are shared by index.

#[derive(Debug, Clone)]
enum V {
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
enum Node {
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

struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    stack: Vec<V>,
    marks: Vec<usize>,
    memo: HashMap<u64, V>,
    arena: Vec<Node>,
    /// Elements/bytes that folding builtins may still copy (see [`Machine::spend`]).
    copy_budget: usize,
}

mod op {
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

    fn run(&mut self) -> R<V> {
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
fn long_from_le(b: &[u8]) -> V {
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

// ---------------------------------------------------------------------------------------------------------------
// Copying the arena graph out into an owned tree.

struct Freezer<'a> {
    arena: &'a [Node],
    visiting: Vec<bool>,
    nodes: usize,
    bytes_left: usize,
}

#[derive(Hash, PartialEq, Eq)]
enum HashKey {
    None,
    Int(i64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    FloatBits(u64),
}

fn hash_key(v: &V) -> Option<HashKey> {
    Some(match v {
        V::None => HashKey::None,
        V::Bool(b) => HashKey::Int(*b as i64),
        V::Int(i) => HashKey::Int(*i),
        V::Str(s) => HashKey::Str(s.clone()),
        V::Bytes(b) => HashKey::Bytes(b.clone()),
        V::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => HashKey::Int(*f as i64),
        V::Float(f) => HashKey::FloatBits(f.to_bits()),
        _ => return None,
    })
}

impl Freezer<'_> {
    fn count(&mut self) -> Result<(), String> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(format!(
                "pickle expands to more than {MAX_NODES} values (shared references nested too deeply?)"
            ));
        }
        Ok(())
    }

    fn count_bytes(&mut self, n: usize) -> Result<(), String> {
        match self.bytes_left.checked_sub(n) {
            Some(left) => {
                self.bytes_left = left;
                Ok(())
            }
            None => Err("pickle expands to too many string bytes (shared references reused too often?)".into()),
        }
    }

    /// Elements of a tuple node (an object's `args`).
    fn args(&mut self, v: &V, depth: usize) -> Result<Vec<Value>, String> {
        match v {
            V::Ref(i) => match &self.arena[*i] {
                Node::Tuple(t) => self.seq(t, depth),
                _ => Err("object arguments are not a tuple".into()),
            },
            _ => Err("object arguments are not a tuple".into()),
        }
    }

    fn kwargs(&mut self, v: &Option<V>, depth: usize) -> Result<Vec<(Value, Value)>, String> {
        match v {
            None => Ok(Vec::new()),
            Some(V::Ref(i)) => match &self.arena[*i] {
                Node::Dict(d) => self.dict(d, depth),
                _ => Err("keyword arguments are not a dict".into()),
            },
            Some(_) => Err("keyword arguments are not a dict".into()),
        }
    }

    fn seq(&mut self, items: &[V], depth: usize) -> Result<Vec<Value>, String> {
        items.iter().map(|v| self.freeze(v, depth + 1)).collect()
    }

    fn dict(&mut self, items: &[(V, V)], depth: usize) -> Result<Vec<(Value, Value)>, String> {
        let mut out: Vec<(Value, Value)> = Vec::with_capacity(items.len());
        let mut index: HashMap<HashKey, usize> = HashMap::new();
        for (k, v) in items {
            let fv = self.freeze(v, depth + 1)?;
            if let Some(h) = hash_key(k) {
                if let Some(&i) = index.get(&h) {
                    out[i].1 = fv;
                    continue;
                }
                index.insert(h, out.len());
            }
            let fk = self.freeze(k, depth + 1)?;
            out.push((fk, fv));
        }
        Ok(out)
    }

    fn set(&mut self, items: &[V], depth: usize) -> Result<Vec<Value>, String> {
        let mut out = Vec::with_capacity(items.len());
        let mut seen = std::collections::HashSet::new();
        for v in items {
            if let Some(h) = hash_key(v) {
                if !seen.insert(h) {
                    continue;
                }
            }
            out.push(self.freeze(v, depth + 1)?);
        }
        Ok(out)
    }

    fn freeze(&mut self, v: &V, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!("values nested deeper than {MAX_DEPTH} levels"));
        }
        self.count()?;
        Ok(match v {
            V::None => Value::None,
            V::Bool(b) => Value::Bool(*b),
            V::Int(i) => Value::Int(*i),
            V::Float(f) => Value::Float(*f),
            V::Str(s) => {
                self.count_bytes(s.len())?;
                Value::Str(s.to_string())
            }
            V::Bytes(b) => {
                self.count_bytes(b.len())?;
                Value::Bytes(b.to_vec())
            }
            V::BigInt(b) => {
                self.count_bytes(b.len())?;
                Value::BigInt(b.to_vec())
            }
            V::Global(g) => Value::Global { module: g.0.clone(), name: g.1.clone() },
            V::Ref(i) => {
                let i = *i;
                if self.visiting[i] {
                    return Ok(Value::Recursive);
                }
                self.visiting[i] = true;
                let arena = self.arena;
                let r = match &arena[i] {
                    Node::List(l) => self.seq(l, depth).map(Value::List),
                    Node::Tuple(t) => self.seq(t, depth).map(Value::Tuple),
                    Node::Dict(d) => self.dict(d, depth).map(Value::Dict),
                    Node::Set(s) => self.set(s, depth).map(Value::Set),
                    Node::FrozenSet(s) => self.set(s, depth).map(Value::FrozenSet),
                    Node::PersistentId(p) => self.freeze(p, depth + 1).map(|p| Value::PersistentId(Box::new(p))),
                    Node::Object { class, args, kwargs, state, dict_items, list_items } => (|| {
                        Ok(Value::Object(Box::new(Object {
                            class: self.freeze(class, depth + 1)?,
                            args: self.args(args, depth)?,
                            kwargs: self.kwargs(kwargs, depth)?,
                            state: match state {
                                Some(s) => Some(self.freeze(s, depth + 1)?),
                                None => None,
                            },
                            dict_items: self.dict(dict_items, depth)?,
                            list_items: self.seq(list_items, depth)?,
                        })))
                    })(),
                };
                self.visiting[i] = false;
                r?
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pickle.dumps({'a': [1, -2, 3.5, None, True], 'b': ('x', b'\x00\xff', 2**70), 's': {1, 2}, 'f': frozenset(),
    /// 'o': collections.OrderedDict([('k', 'v')])}, protocol=2)`
    const P2: &[u8] = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01J\xfe\xff\xff\xffG@\x0c\x00\x00\x00\x00\x00\x00N\x88eX\x01\x00\x00\x00bq\x03X\x01\x00\x00\x00xq\x04c_codecs\nencode\nq\x05X\x03\x00\x00\x00\x00\xc3\xbfq\x06X\x06\x00\x00\x00latin1q\x07\x86q\x08Rq\x09\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00@\x87q\nX\x01\x00\x00\x00sq\x0bc__builtin__\nset\nq\x0c]q\x0d(K\x01K\x02e\x85q\x0eRq\x0fX\x01\x00\x00\x00fq\x10c__builtin__\nfrozenset\nq\x11]q\x12\x85q\x13Rq\x14X\x01\x00\x00\x00oq\x15ccollections\nOrderedDict\nq\x16)Rq\x17X\x01\x00\x00\x00kq\x18X\x01\x00\x00\x00vq\x19su.";

    /// The same object with protocol 4 (FRAME, MEMOIZE, SHORT_BINUNICODE, SHORT_BINBYTES, EMPTY_SET, ADDITEMS,
    /// FROZENSET, STACK_GLOBAL).
    const P4: &[u8] = b"\x80\x04\x95z\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01J\xfe\xff\xff\xffG@\x0c\x00\x00\x00\x00\x00\x00N\x88e\x8c\x01b\x94\x8c\x01x\x94C\x02\x00\xff\x94\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00@\x87\x94\x8c\x01s\x94\x8f\x94(K\x01K\x02\x90\x8c\x01f\x94(\x91\x94\x8c\x01o\x94\x8c\x0bcollections\x94\x8c\x0bOrderedDict\x94\x93\x94)R\x94\x8c\x01k\x94\x8c\x01v\x94su.";

    fn check_sample(v: &Value) {
        let d = v.as_dict().expect("dict");
        assert_eq!(d.len(), 5);
        let a = v.get("a").unwrap().as_seq().unwrap();
        assert_eq!(a, &[Value::Int(1), Value::Int(-2), Value::Float(3.5), Value::None, Value::Bool(true)]);
        let b = v.get("b").unwrap();
        assert!(matches!(b, Value::Tuple(_)));
        let b = b.as_seq().unwrap();
        assert_eq!(b[0], Value::Str("x".into()));
        assert_eq!(b[1], Value::Bytes(vec![0, 255]));
        let mut big = vec![0u8; 9];
        big[8] = 0x40; // 2**70
        assert_eq!(b[2], Value::BigInt(big));
        assert_eq!(v.get("s").unwrap(), &Value::Set(vec![Value::Int(1), Value::Int(2)]));
        assert_eq!(v.get("f").unwrap(), &Value::FrozenSet(vec![]));
        assert_eq!(v.get("o").unwrap(), &Value::Dict(vec![(Value::Str("k".into()), Value::Str("v".into()))]));
    }

    #[test]
    fn protocol2_sample() {
        check_sample(&unpickle(P2).unwrap());
    }

    #[test]
    fn protocol4_sample() {
        check_sample(&unpickle(P4).unwrap());
    }

    #[test]
    fn every_truncation_is_an_error() {
        for p in [P2, P4] {
            for n in 0..p.len() {
                assert!(unpickle(&p[..n]).is_err(), "prefix of {n} bytes parsed");
            }
        }
    }

    #[test]
    fn garbage_never_panics() {
        // xorshift garbage, plus single-byte corruptions of valid pickles.
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for len in [0usize, 1, 2, 5, 17, 64, 300] {
            for _ in 0..400 {
                let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                let _ = unpickle(&bytes);
                let mut with_proto = vec![0x80, 2];
                with_proto.extend(&bytes);
                let _ = unpickle(&with_proto);
            }
        }
        for p in [P2, P4] {
            for i in 0..p.len() {
                for b in [0x00u8, 0xff, b'.', b'(', b'q', b'h', 0x94, b'R', b'b', b'e', b'u', next() as u8] {
                    let mut c = p.to_vec();
                    c[i] = b;
                    let _ = unpickle(&c);
                }
            }
        }
    }

    #[test]
    fn huge_lengths_are_rejected_without_allocating() {
        let cases: &[&[u8]] = &[
            b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\xff.",
            b"\x80\x04\x8e\x00\x00\x00\x00\x00\x00\x00\x80.",
            b"\x80\x02X\xff\xff\xff\xff.",
            b"\x80\x02\x8b\xff\xff\xff\x7f.",
            b"\x80\x02\x8b\xff\xff\xff\xff.",
            b"\x80\x02T\xff\xff\xff\xff.",
        ];
        for c in cases {
            let e = unpickle(c).unwrap_err();
            assert!(e.message.contains("truncated") || e.message.contains("length"), "{e}");
        }
    }

    #[test]
    fn memo_and_stack_abuse() {
        // BINGET of a key never stored; LONG_BINPUT at a huge index (no allocation); underflows; missing marks.
        assert!(unpickle(b"\x80\x02h\x07.").unwrap_err().message.contains("memo"));
        assert_eq!(unpickle(b"\x80\x02K\x05r\xff\xff\xff\xffj\xff\xff\xff\xff.").unwrap(), Value::Int(5));
        assert!(unpickle(b"\x80\x02.").is_err());
        assert!(unpickle(b"\x80\x02R.").is_err());
        assert!(unpickle(b"\x80\x02(K\x01\x87.").is_err(), "TUPLE3 across a mark");
        assert!(unpickle(b"\x80\x02K\x01t.").is_err(), "TUPLE without MARK");
        assert!(unpickle(b"\x80\x02K\x01K\x02s.").is_err(), "SETITEM on an int");
        assert!(unpickle(b"\x80\x02}(K\x01u.").is_err(), "odd SETITEMS");
        assert!(unpickle(b"\x80\x02K\x01}b.").is_err(), "BUILD on an int");
        assert!(unpickle(b"\x80\x06N.").is_err(), "protocol 6");
        assert!(unpickle(b"\x80\x02\xff.").unwrap_err().message.contains("unknown opcode"));
    }

    #[test]
    fn billion_laughs_is_bounded() {
        // l0 = [0]; l(i+1) = [l(i), l(i)] ... 40 levels: 2^40 nodes if expanded naively.
        let mut p = b"\x80\x02]q\x00K\x00a".to_vec();
        for i in 0..40u8 {
            p.extend([b'(', b'h', i, b'h', i, b'l', b'q', i + 1]);
        }
        p.push(b'.');
        let t = std::time::Instant::now();
        let e = unpickle(&p).unwrap_err();
        assert!(e.message.contains("more than"), "{e}");
        assert!(t.elapsed().as_secs() < 30);
    }

    #[test]
    fn shared_string_bomb_is_bounded() {
        // s = 'x' * 100_000 memoised once, then a list holding it 100_000 times (10 GB if copied naively).
        let mut p = b"\x80\x02]q\x00(X\xa0\x86\x01\x00".to_vec();
        p.extend(std::iter::repeat_n(b'x', 100_000));
        p.extend(b"q\x01");
        for _ in 0..100_000 {
            p.extend(b"h\x01");
        }
        p.extend(b"e.");
        let e = unpickle(&p).unwrap_err();
        assert!(e.message.contains("string bytes"), "{e}");
    }

    #[test]
    fn repeated_fold_copies_are_bounded() {
        // a = ([0] * 200_000,); then set(*a) 20_000 times: each fold copies the list (4e9 element copies).
        let mut p = b"\x80\x02c__builtin__\nset\nq\x00](".to_vec();
        for _ in 0..200_000 {
            p.extend(b"K\x00");
        }
        p.extend(b"e\x85q\x01");
        for _ in 0..20_000 {
            p.extend(b"h\x00h\x01R0");
        }
        p.extend(b"N.");
        let e = unpickle(&p).unwrap_err();
        assert!(e.message.contains("copies too much"), "{e}");
        // while ordinary REDUCEs share their argument tuple and cost nothing extra
        let mut p = b"\x80\x02c__main__\nf\nq\x00](".to_vec();
        for _ in 0..200_000 {
            p.extend(b"K\x00");
        }
        p.extend(b"e\x85q\x01");
        for _ in 0..20_000 {
            p.extend(b"h\x00h\x01R0");
        }
        p.extend(b"N.");
        assert_eq!(unpickle(&p).unwrap(), Value::None);
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let mut p = b"\x80\x02".to_vec();
        p.extend(std::iter::repeat_n(b']', 100_000));
        p.extend(std::iter::repeat_n(b'a', 99_999));
        p.push(b'.');
        let e = unpickle(&p).unwrap_err();
        assert!(e.message.contains("deeper"), "{e}");
    }

    #[test]
    fn cycles_become_recursive() {
        // l = []; l.append(l)
        let v = unpickle(b"\x80\x02]q\x00h\x00a.").unwrap();
        assert_eq!(v, Value::List(vec![Value::Recursive]));
    }

    #[test]
    fn shared_reference_sees_later_mutation() {
        // d = {}; memoised before SETITEMS; the tuple (d, d) must show both filled.
        let v = unpickle(b"\x80\x02}q\x00(X\x01\x00\x00\x00kK\x07uh\x00\x86.").unwrap();
        let t = v.as_seq().unwrap();
        assert_eq!(t[0], t[1]);
        assert_eq!(t[1].get("k"), Some(&Value::Int(7)));
    }

    #[test]
    fn objects_are_recorded_not_executed() {
        // os.system('x') via REDUCE; a NEWOBJ + BUILD instance.
        let v = unpickle(b"\x80\x02cposix\nsystem\nX\x01\x00\x00\x00x\x85R.").unwrap();
        let o = v.as_object().unwrap();
        assert!(o.class.is_global("posix", "system"));
        assert_eq!(o.args, vec![Value::Str("x".into())]);
        let v = unpickle(b"\x80\x02c__main__\nFoo\n)\x81}X\x01\x00\x00\x00aK\x01sb.").unwrap();
        let o = v.as_object().unwrap();
        assert!(o.class.is_global("__main__", "Foo"));
        assert_eq!(o.state.as_ref().unwrap().get("a"), Some(&Value::Int(1)));
        assert_eq!(v.type_name(), "object __main__.Foo");
    }

    #[test]
    fn long_decoding() {
        assert!(matches!(long_from_le(&[]), V::Int(0)));
        assert!(matches!(long_from_le(&[0xff]), V::Int(-1)));
        assert!(matches!(long_from_le(&[0x80, 0x00]), V::Int(128)));
        assert!(matches!(long_from_le(&[0xff; 12]), V::Int(-1)));
        let mut m = [0u8; 9];
        m[7] = 0x80; // 2**63 (needs the 9th byte 0x00 as sign)
        assert!(matches!(long_from_le(&m), V::BigInt(_)));
        let mut m = [0u8; 8];
        m[7] = 0x80; // -2**63
        assert!(matches!(long_from_le(&m), V::Int(i64::MIN)));
    }
}
