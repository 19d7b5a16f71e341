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
//! marks are errors, and the output tree is limited in depth ([`MAX_DEPTH`]) and in size relative to the input
//! ([`EXPANSION`] values and string bytes per input byte, above small floors; at most [`MAX_NODES`] values), which
//! stops "billion laughs" memo bombs that would expand shared references exponentially: what a pickle can make the
//! unpickler allocate is proportional to its own length.

mod freeze;
mod machine;
/// The opcode table the unpickler reads, shared with the `.pt` writer.
pub(crate) use machine::op;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;

use freeze::Freezer;
use machine::Machine;

/// Maximum nesting depth of the produced tree.
pub const MAX_DEPTH: usize = 512;
/// Maximum number of nodes in the produced tree (shared references count once per occurrence), whatever the input
/// size.
pub const MAX_NODES: usize = 8_000_000;
/// Values, and bytes of strings / bytes / global names, that the produced tree may hold per byte of input (shared
/// references count once per occurrence). Real `torch.save` pickles stay below 0.3 values and 2 string bytes per
/// input byte (the ultralytics yolo26n checkpoints in assets/ and tests/fixtures/: 0.24 and 1.6).
pub const EXPANSION: usize = 16;
/// Floor of the value limit, for tiny pickles.
pub const MIN_NODES: usize = 1 << 16;
/// Floor of the string-byte limit, for tiny pickles.
pub const MIN_BYTES: usize = 1 << 20;

/// A decoded pickle value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An integer that fits in `i64`.
    Int(i64),
    /// An integer that does not fit in `i64`: little-endian two's complement bytes (as `LONG1`/`LONG4` store it).
    BigInt(Vec<u8>),
    /// A `float`.
    Float(f64),
    /// A `str`.
    Str(String),
    /// A `bytes` (or `bytearray`).
    Bytes(Vec<u8>),
    /// A `list`.
    List(Vec<Value>),
    /// A `tuple`.
    Tuple(Vec<Value>),
    /// Insertion-ordered `(key, value)` pairs (a `dict` or `OrderedDict`); a key set twice keeps its first position
    /// and its last value, as in Python.
    Dict(Vec<(Value, Value)>),
    /// A `set`.
    Set(Vec<Value>),
    /// A `frozenset`.
    FrozenSet(Vec<Value>),
    /// A name imported by `GLOBAL`/`STACK_GLOBAL`/`INST`/`OBJ` (Python 2 module names `__builtin__`/`copy_reg` are
    /// mapped to `builtins`/`copyreg`).
    Global {
        /// Module path (`torch._utils`).
        module: String,
        /// Attribute name (`_rebuild_tensor_v2`).
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
    /// Byte offset in the pickle where decoding stopped.
    pub offset: usize,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for PickleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pickle error at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for PickleError {}

impl Value {
    /// The string of a [`Value::Str`].
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer of a [`Value::Int`] (or a [`Value::Bool`] as 0/1).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }

    /// The truth value of a [`Value::Bool`] or [`Value::Int`].
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

    /// The pairs of a [`Value::Dict`].
    pub fn as_dict(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Dict(d) => Some(d),
            _ => None,
        }
    }

    /// The object of a [`Value::Object`].
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// `self` is `None`.
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
        copy_budget: data.len().saturating_mul(2).saturating_add(MIN_NODES),
    };
    let root = m.run()?;
    let nodes_left = data.len().saturating_mul(EXPANSION).clamp(MIN_NODES, MAX_NODES);
    let bytes_left = data.len().saturating_mul(EXPANSION).max(MIN_BYTES);
    let mut fr = Freezer { arena: &m.arena, visiting: vec![false; m.arena.len()], nodes_left, bytes_left };
    fr.freeze(&root, 0).map_err(|message| PickleError { offset: data.len().min(m.pos), message })
}
