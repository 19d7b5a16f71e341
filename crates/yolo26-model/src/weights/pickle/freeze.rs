//! Copying the parse-time arena graph out into an owned [`Value`] tree, within the depth/size limits.

use std::collections::HashMap;
use std::rc::Rc;

use super::machine::{Node, V};
use super::{Object, Value, MAX_DEPTH};

// ---------------------------------------------------------------------------------------------------------------
// Copying the arena graph out into an owned tree.

pub(super) struct Freezer<'a> {
    pub(super) arena: &'a [Node],
    pub(super) visiting: Vec<bool>,
    /// Values the tree may still hold.
    pub(super) nodes_left: usize,
    /// String / bytes / global-name bytes the tree may still hold.
    pub(super) bytes_left: usize,
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
        match self.nodes_left.checked_sub(1) {
            Some(left) => {
                self.nodes_left = left;
                Ok(())
            }
            None => {
                Err("pickle expands to more values than its size allows (shared references nested too deeply?)".into())
            }
        }
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

    pub(super) fn freeze(&mut self, v: &V, depth: usize) -> Result<Value, String> {
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
            V::Global(g) => {
                self.count_bytes(g.0.len() + g.1.len())?;
                Value::Global { module: g.0.clone(), name: g.1.clone() }
            }
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
