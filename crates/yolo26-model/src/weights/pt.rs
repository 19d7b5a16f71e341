//! Native reader for PyTorch `.pt` files (the zip format `torch.save` has written since torch 1.6).
//!
//! A `.pt` archive holds `<prefix>/data.pkl` (the pickled object graph), `<prefix>/data/<key>` (one raw little-endian
//! blob per storage, referenced from the pickle by persistent id `('storage', type, key, location, numel)`) and an
//! optional `<prefix>/byteorder`. The pickle is decoded with the safe [`super::pickle`] unpickler (nothing executes)
//! and tensors are rebuilt from the `torch._utils._rebuild_tensor_v2` / `_rebuild_tensor_v3` / `_rebuild_parameter`
//! / `_rebuild_parameter_with_state` / `torch._tensor._rebuild_from_type_v2` calls recorded in it, honouring
//! storage offset and strides (non-contiguous views are materialised in logical row-major order).
//!
//! Accepted top-level objects:
//! * ultralytics checkpoints: a dict whose `model` (or, when that is `None`, `ema`) is a fully pickled `nn.Module`;
//!   its `_parameters` / `_buffers` / `_modules` are walked to produce exactly the keys `model.state_dict()` would
//!   (None entries and buffers in `_non_persistent_buffers_set` skipped), and its `names` attribute (dict int → str,
//!   or a list) becomes [`WeightMap::names`];
//! * plain state_dicts: a dict of tensors, at the top level or under a key `model` / `ema` / `state_dict`;
//! * a bare pickled `nn.Module`.
//!
//! The file is untrusted input: every archive entry is read only as far as its bytes in the archive allow
//! (`read_entry`), every view is checked against its storage before anything is allocated, all index arithmetic
//! is checked, the `f32` values materialised over the whole file are limited to [`EXPANSION`]× the file size
//! (stride-0 views could otherwise repeat a few bytes into gigabytes), and NaN / infinite float weights are refused
//! naming the tensor.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Cursor, Read};
use std::path::Path;

use super::pickle::{self, Object, Value};
use super::{FileDType, WeightMap, WeightTensor, WeightsError};

const FORMAT: &str = "PyTorch .pt";

/// Bytes of `f32` values a `.pt` file may expand into: `EXPANSION`× its own size, at least [`MIN_BUDGET`]. Real
/// checkpoints stay far below (widening f16 → f32 doubles, u8 → f32 quadruples, a storage shared by two tensors
/// is read twice); only stride-0 or overlapping views can repeat bytes beyond that, and a crafted one is refused.
pub const EXPANSION: usize = 16;
/// Floor of the expansion budget, so that tiny files may still hold a broadcast (stride-0) tensor or two.
pub const MIN_BUDGET: usize = 16 << 20;
/// Most a compressed archive entry may inflate to, relative to its compressed size (`torch.save` stores entries
/// uncompressed; a deflate bomb is refused instead of filling memory).
const MAX_INFLATE: u64 = 64;

/// Reads a PyTorch zip-format `.pt` file (ultralytics checkpoint, state_dict, or pickled module) into a [`WeightMap`].
pub fn read_pt(path: &Path) -> Result<WeightMap, WeightsError> {
    let bytes = std::fs::read(path).map_err(|source| WeightsError::Io { path: path.to_path_buf(), source })?;
    read_pt_bytes(&bytes, path)
}

/// [`read_pt`] on a file already in memory; `path` is only used in error messages and as [`WeightMap::source`].
pub fn read_pt_bytes(bytes: &[u8], path: &Path) -> Result<WeightMap, WeightsError> {
    let fmt_err = |reason: String| WeightsError::Format { path: path.to_path_buf(), format: FORMAT, reason };
    if is_legacy_torch(bytes) {
        return Err(fmt_err(
            "legacy (pre-1.6, non-zip) torch serialization is not supported; re-save it with a current torch: \
             `torch.save(torch.load(f, weights_only=False), f)`"
                .into(),
        ));
    }
    if !bytes.starts_with(b"PK") {
        return Err(fmt_err("not a zip archive (a torch.save file starts with 'PK')".into()));
    }
    let mut archive =
        zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| fmt_err(format!("cannot open zip archive: {e}")))?;

    // `<prefix>/data.pkl`: the shallowest one (nested archives would be unusual, but never pick them first).
    let pkl_name = archive
        .file_names()
        .filter(|n| *n == "data.pkl" || n.ends_with("/data.pkl"))
        .min_by_key(|n| (n.matches('/').count(), n.len()))
        .map(str::to_string)
        .ok_or_else(|| fmt_err("no data.pkl in the archive (not a torch.save file?)".into()))?;
    let prefix = pkl_name[..pkl_name.len() - "data.pkl".len()].to_string();

    let pkl = read_entry(&mut archive, &pkl_name, bytes.len()).map_err(|e| fmt_err(format!("{pkl_name}: {e}")))?;
    let big_endian = match read_entry(&mut archive, &format!("{prefix}byteorder"), bytes.len()) {
        Ok(b) => match std::str::from_utf8(&b).map(str::trim) {
            Ok("little") => false,
            Ok("big") => true,
            _ => {
                return Err(fmt_err(format!("{prefix}byteorder: unexpected content {:?}", String::from_utf8_lossy(&b))))
            }
        },
        Err(_) => false,
    };
    let root = pickle::unpickle(&pkl).map_err(|e| fmt_err(format!("{pkl_name}: {e}")))?;

    let budget = bytes.len().saturating_mul(EXPANSION).max(MIN_BUDGET);
    let mut ctx = Ctx {
        path,
        archive,
        archive_len: bytes.len(),
        prefix,
        big_endian,
        storages: HashMap::new(),
        tensors: BTreeMap::new(),
        budget,
    };
    let names = ctx.interpret(&root)?;
    Ok(WeightMap { tensors: ctx.tensors, source: path.to_path_buf(), names })
}

/// A pre-1.6 torch file (pickle stream starting with the protocol opcode, or the even older tar layout).
fn is_legacy_torch(bytes: &[u8]) -> bool {
    (bytes.len() >= 2 && bytes[0] == 0x80 && (1..=5).contains(&bytes[1]))
        || (bytes.len() > 262 && &bytes[257..262] == b"ustar")
}

/// Reads one archive entry, never trusting its declared size: a stored entry yields at most its bytes in the
/// archive, a compressed one at most [`MAX_INFLATE`]× its compressed size (+1 KiB); the capacity reserved up front
/// is bounded the same way.
fn read_entry(archive: &mut zip::ZipArchive<Cursor<&[u8]>>, name: &str, archive_len: usize) -> Result<Vec<u8>, String> {
    let f = archive.by_name(name).map_err(|e| e.to_string())?;
    let packed = f.compressed_size().min(archive_len as u64);
    let limit = match f.compression() {
        zip::CompressionMethod::Stored => packed,
        _ => packed.saturating_mul(MAX_INFLATE).saturating_add(1024),
    };
    if f.size() > limit {
        return Err(format!("entry claims {} bytes, more than its {packed} bytes in the archive can hold", f.size()));
    }
    let mut out = Vec::with_capacity(f.size() as usize);
    f.take(limit + 1).read_to_end(&mut out).map_err(|e| e.to_string())?;
    if out.len() as u64 > limit {
        return Err(format!("entry inflates beyond {limit} bytes"));
    }
    Ok(out)
}

struct Ctx<'a> {
    path: &'a Path,
    archive: zip::ZipArchive<Cursor<&'a [u8]>>,
    archive_len: usize,
    prefix: String,
    big_endian: bool,
    storages: HashMap<String, Vec<u8>>,
    tensors: BTreeMap<String, WeightTensor>,
    /// Bytes of `f32` values the remaining tensors may still materialise (see [`EXPANSION`]).
    budget: usize,
}

/// `(dtype, bytes per element)` for a storage class or dtype global.
fn dtype_of_global(v: &Value) -> Option<Result<(FileDType, usize), String>> {
    let Value::Global { module, name } = v else { return None };
    if module != "torch" && module != "torch.cuda" && module != "torch.storage" {
        return None;
    }
    Some(Ok(match name.as_str() {
        "HalfStorage" | "float16" | "half" => (FileDType::F16, 2),
        "FloatStorage" | "float32" | "float" => (FileDType::F32, 4),
        "DoubleStorage" | "float64" | "double" => (FileDType::F64, 8),
        "BFloat16Storage" | "bfloat16" => (FileDType::BF16, 2),
        "LongStorage" | "int64" | "long" => (FileDType::I64, 8),
        "IntStorage" | "int32" | "int" => (FileDType::I32, 4),
        "ByteStorage" | "uint8" | "UntypedStorage" | "_UntypedStorage" => (FileDType::U8, 1),
        "BoolStorage" | "bool" => (FileDType::Bool, 1),
        other => return Some(Err(format!("unsupported storage/dtype torch.{other}"))),
    }))
}

fn as_usize_list(v: &Value) -> Option<Vec<i64>> {
    match v {
        Value::Tuple(t) | Value::List(t) => t.iter().map(Value::as_int).collect(),
        // torch.Size is a tuple subclass; it pickles as a plain tuple, but accept torch.Size((...)) too.
        Value::Object(o) if o.class.is_global("torch", "Size") && o.args.len() == 1 => as_usize_list(&o.args[0]),
        _ => None,
    }
}

/// The rebuild function a tensor value was pickled with, if it is one.
fn tensor_call(v: &Value) -> Option<(&str, &Object)> {
    let o = v.as_object()?;
    let Value::Global { module, name } = &o.class else { return None };
    match (module.as_str(), name.as_str()) {
        (
            "torch._utils",
            n @ ("_rebuild_tensor"
            | "_rebuild_tensor_v2"
            | "_rebuild_tensor_v3"
            | "_rebuild_parameter"
            | "_rebuild_parameter_with_state"
            | "_rebuild_qtensor"
            | "_rebuild_sparse_tensor"
            | "_rebuild_nested_tensor"
            | "_rebuild_device_tensor_from_numpy"
            | "_rebuild_meta_tensor_no_storage"
            | "_rebuild_wrapper_subclass"),
        ) => Some((n, o)),
        ("torch._tensor", "_rebuild_from_type_v2" | "_rebuild_from_type") => Some((name.as_str(), o)),
        _ => None,
    }
}

fn is_module(v: &Value) -> Option<&[(Value, Value)]> {
    let o = v.as_object()?;
    let state = match o.state.as_ref()? {
        // (instance dict, slots dict) for classes with __slots__
        Value::Tuple(t) if t.len() == 2 => &t[0],
        s => s,
    };
    let d = state.as_dict()?;
    let has = |k: &str| d.iter().any(|(key, _)| key.as_str() == Some(k));
    (has("_modules") && (has("_parameters") || has("_buffers"))).then_some(d)
}

fn dict_get<'v>(d: &'v [(Value, Value)], key: &str) -> Option<&'v Value> {
    d.iter().rev().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
}

/// Class names from a `names` attribute: `{0: 'person', ...}` or `['person', ...]`.
fn names_from(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::List(l) | Value::Tuple(l) => l.iter().map(|s| s.as_str().map(str::to_string)).collect(),
        Value::Dict(d) => {
            let mut pairs = Vec::with_capacity(d.len());
            for (k, v) in d {
                let i = match k {
                    Value::Int(i) if *i >= 0 => *i as usize,
                    Value::Str(s) => s.parse::<usize>().ok()?,
                    _ => return None,
                };
                pairs.push((i, v.as_str()?.to_string()));
            }
            let n = pairs.iter().map(|(i, _)| i.saturating_add(1)).max().unwrap_or(0);
            if n > d.len().saturating_mul(2).max(16) {
                return None; // absurdly sparse ids
            }
            let mut out: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            for (i, s) in pairs {
                out[i] = s;
            }
            Some(out)
        }
        _ => None,
    }
}

impl Ctx<'_> {
    fn fmt_err(&self, reason: impl Into<String>) -> WeightsError {
        WeightsError::Format { path: self.path.to_path_buf(), format: FORMAT, reason: reason.into() }
    }

    fn tensor_err(&self, key: &str, reason: impl Into<String>) -> WeightsError {
        WeightsError::Tensor { path: self.path.to_path_buf(), key: key.to_string(), reason: reason.into() }
    }

    /// Fills `self.tensors` from the top-level object; returns the class names if found.
    fn interpret(&mut self, root: &Value) -> Result<Option<Vec<String>>, WeightsError> {
        if is_module(root).is_some() {
            return self.read_container(root, "<root>");
        }
        let Some(d) = root.as_dict() else {
            return Err(self.fmt_err(format!(
                "top-level object is a {}, expected a checkpoint dict, a state_dict or an nn.Module",
                root.type_name()
            )));
        };
        let model = dict_get(d, "model");
        let ema = dict_get(d, "ema");
        let state = dict_get(d, "state_dict").filter(|v| v.as_dict().is_some());
        let container = match (model, ema) {
            // a `.pt` written by `pt_write`: `model` is a constructor call, the weights are in `state_dict`
            (Some(m), _) if is_module(m).is_none() && m.as_dict().is_none() && state.is_some() => {
                state.map(|v| ("state_dict", v))
            }
            (Some(m), _) if !m.is_none() => Some(("model", m)),
            (_, Some(e)) if !e.is_none() => Some(("ema", e)),
            (Some(_), _) => return Err(self.fmt_err("checkpoint key 'model' is None and there is no 'ema' to use")),
            _ => dict_get(d, "state_dict").filter(|v| !v.is_none()).map(|v| ("state_dict", v)),
        };
        if let Some((key, v)) = container {
            let names = self.read_container(v, key)?;
            return Ok(names.or_else(|| dict_get(d, "names").and_then(names_from)));
        }
        self.state_dict(d, "<root>")?;
        if self.tensors.is_empty() {
            let keys: Vec<String> = d.iter().take(12).map(|(k, _)| format!("{k:?}")).collect();
            return Err(self.fmt_err(format!(
                "no tensors found: the top-level dict has no 'model', 'ema' or 'state_dict' and no tensor values \
                 (keys: {})",
                keys.join(", ")
            )));
        }
        Ok(dict_get(d, "names").and_then(names_from))
    }

    /// `v` under checkpoint key `key` must be an nn.Module or a state_dict.
    fn read_container(&mut self, v: &Value, key: &str) -> Result<Option<Vec<String>>, WeightsError> {
        if let Some(state) = is_module(v) {
            self.walk_module(state, "", 0)?;
            return Ok(dict_get(state, "names").and_then(names_from));
        }
        if let Some(d) = v.as_dict() {
            self.state_dict(d, key)?;
            if self.tensors.is_empty() {
                return Err(self.fmt_err(format!("checkpoint key '{key}' holds a dict without tensors")));
            }
            return Ok(None);
        }
        Err(self.fmt_err(format!(
            "checkpoint key '{key}' is neither an nn.Module nor a state_dict (found {})",
            v.type_name()
        )))
    }

    fn state_dict(&mut self, d: &[(Value, Value)], what: &str) -> Result<(), WeightsError> {
        for (k, v) in d {
            if tensor_call(v).is_none() {
                continue; // e.g. `_extra_state` objects, or scalars next to tensors
            }
            let Some(name) = k.as_str() else {
                return Err(self.fmt_err(format!("state_dict '{what}' has a non-string key {k:?}")));
            };
            let t = self.tensor(name, v)?;
            self.tensors.insert(name.to_string(), t);
        }
        Ok(())
    }

    /// Emits the keys `module.state_dict(prefix=prefix)` would.
    fn walk_module(&mut self, state: &[(Value, Value)], prefix: &str, depth: usize) -> Result<(), WeightsError> {
        if depth > pickle::MAX_DEPTH {
            return Err(self.fmt_err(format!("modules nested too deeply at '{prefix}'")));
        }
        let module_name =
            if prefix.is_empty() { "<model>".to_string() } else { prefix.trim_end_matches('.').to_string() };
        let entries = |field: &str| -> Result<&[(Value, Value)], WeightsError> {
            match dict_get(state, field) {
                None | Some(Value::None) => Ok(&[]),
                Some(Value::Dict(d)) => Ok(d),
                Some(other) => Err(self.tensor_err(
                    &module_name,
                    format!("module attribute {field} is a {}, expected a dict", other.type_name()),
                )),
            }
        };
        let params = entries("_parameters")?;
        let buffers = entries("_buffers")?;
        let modules = entries("_modules")?;
        let non_persistent: HashSet<&str> = match dict_get(state, "_non_persistent_buffers_set") {
            Some(Value::Set(s) | Value::FrozenSet(s) | Value::List(s) | Value::Tuple(s)) => {
                s.iter().filter_map(Value::as_str).collect()
            }
            _ => HashSet::new(),
        };

        for (kind, list) in [("parameter", params), ("buffer", buffers)] {
            for (k, v) in list {
                let Some(name) = k.as_str() else {
                    return Err(self.tensor_err(&module_name, format!("{kind} with a non-string name {k:?}")));
                };
                if v.is_none() || (kind == "buffer" && non_persistent.contains(name)) {
                    continue;
                }
                let key = format!("{prefix}{name}");
                if tensor_call(v).is_none() {
                    return Err(self.tensor_err(&key, format!("{kind} is not a tensor (found {})", v.type_name())));
                }
                let t = self.tensor(&key, v)?;
                self.tensors.insert(key, t);
            }
        }
        for (k, v) in modules {
            let Some(name) = k.as_str() else {
                return Err(self.tensor_err(&module_name, format!("submodule with a non-string name {k:?}")));
            };
            if v.is_none() {
                continue;
            }
            let child = format!("{prefix}{name}");
            let Some(child_state) = is_module(v) else {
                return Err(self.tensor_err(&child, format!("submodule is not an nn.Module (found {})", v.type_name())));
            };
            self.walk_module(child_state, &format!("{child}."), depth + 1)?;
        }
        Ok(())
    }

    /// Materialises the tensor value `v` (a recorded rebuild call) stored under `key`.
    fn tensor(&mut self, key: &str, v: &Value) -> Result<WeightTensor, WeightsError> {
        let Some((func, o)) = tensor_call(v) else {
            return Err(self.tensor_err(key, format!("not a tensor (found {})", v.type_name())));
        };
        self.rebuild(key, func, &o.args, 0)
    }

    fn rebuild(&mut self, key: &str, func: &str, args: &[Value], depth: usize) -> Result<WeightTensor, WeightsError> {
        if depth > 8 {
            return Err(self.tensor_err(key, "tensor rebuild calls nested too deeply"));
        }
        let arg = |i: usize| args.get(i);
        match func {
            "_rebuild_parameter" | "_rebuild_parameter_with_state" => {
                let Some(inner) = arg(0) else { return Err(self.tensor_err(key, format!("{func} without data"))) };
                let Some((f, o)) = tensor_call(inner) else {
                    return Err(self.tensor_err(key, format!("{func} data is a {}", inner.type_name())));
                };
                self.rebuild(key, f, &o.args, depth + 1)
            }
            "_rebuild_from_type_v2" | "_rebuild_from_type" => {
                // (func, new_type, args, state)
                let (Some(Value::Global { module, name }), Some(inner_args)) = (arg(0), arg(2)) else {
                    return Err(self.tensor_err(key, format!("malformed {func} arguments")));
                };
                let Some(inner_args) = inner_args.as_seq() else {
                    return Err(self.tensor_err(key, format!("malformed {func} arguments")));
                };
                if module != "torch._utils" {
                    return Err(self.tensor_err(key, format!("unsupported tensor rebuild function {module}.{name}")));
                }
                let name = name.clone();
                self.rebuild(key, &name, inner_args, depth + 1)
            }
            "_rebuild_tensor" | "_rebuild_tensor_v2" | "_rebuild_tensor_v3" => {
                if args.len() < 4 {
                    return Err(self.tensor_err(key, format!("{func} with {} arguments", args.len())));
                }
                let dtype_override = if func == "_rebuild_tensor_v3" {
                    match arg(6).and_then(dtype_of_global) {
                        Some(Ok(d)) => Some(d),
                        Some(Err(e)) => return Err(self.tensor_err(key, e)),
                        None => return Err(self.tensor_err(key, "_rebuild_tensor_v3 without a dtype")),
                    }
                } else {
                    None
                };
                self.tensor_from_storage(key, &args[0], &args[1], &args[2], &args[3], dtype_override)
            }
            other => Err(self.tensor_err(
                key,
                format!("unsupported tensor kind torch._utils.{other} (quantized/sparse/nested/meta tensors)"),
            )),
        }
    }

    fn storage_bytes(&mut self, key: &str, storage_key: &str) -> Result<&[u8], WeightsError> {
        if !self.storages.contains_key(storage_key) {
            let name = format!("{}data/{storage_key}", self.prefix);
            let bytes = read_entry(&mut self.archive, &name, self.archive_len)
                .map_err(|e| self.tensor_err(key, format!("cannot read storage {name}: {e}")))?;
            self.storages.insert(storage_key.to_string(), bytes);
        }
        Ok(&self.storages[storage_key])
    }

    fn tensor_from_storage(
        &mut self,
        key: &str,
        storage: &Value,
        offset: &Value,
        size: &Value,
        stride: &Value,
        dtype_override: Option<(FileDType, usize)>,
    ) -> Result<WeightTensor, WeightsError> {
        // ('storage', storage_type, key, location, numel)
        let pid = match storage {
            Value::PersistentId(p) => p.as_seq(),
            _ => None,
        };
        let Some(pid) = pid.filter(|p| p.len() >= 5 && p[0].as_str() == Some("storage")) else {
            return Err(self.tensor_err(key, format!("storage is not a ('storage', ...) persistent id: {storage:?}")));
        };
        let (dtype, esize) = match dtype_override.map(Ok).or_else(|| dtype_of_global(&pid[1])) {
            Some(Ok(d)) => d,
            Some(Err(e)) => return Err(self.tensor_err(key, e)),
            None => return Err(self.tensor_err(key, format!("unknown storage type {:?}", pid[1]))),
        };
        let storage_key = match &pid[2] {
            Value::Str(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            other => return Err(self.tensor_err(key, format!("storage key is a {}", other.type_name()))),
        };
        if storage_key.contains('/') || storage_key.contains("..") {
            return Err(self.tensor_err(key, format!("invalid storage key {storage_key:?}")));
        }
        let declared_numel = pid[4].as_int().unwrap_or(-1);

        let bad = |what: &str| format!("invalid {what} in tensor metadata");
        let offset = offset.as_int().filter(|o| *o >= 0).ok_or_else(|| self.tensor_err(key, bad("storage offset")))?;
        let size = as_usize_list(size).ok_or_else(|| self.tensor_err(key, bad("size")))?;
        let stride = as_usize_list(stride).ok_or_else(|| self.tensor_err(key, bad("stride")))?;
        if size.len() != stride.len() || size.iter().any(|&s| s < 0) || stride.iter().any(|&s| s < 0) {
            return Err(self.tensor_err(key, format!("inconsistent size {size:?} / stride {stride:?}")));
        }
        let shape: Vec<usize> = size.iter().map(|&s| s as usize).collect();
        let stride: Vec<usize> = stride.iter().map(|&s| s as usize).collect();
        let offset = offset as usize;
        let numel = super::checked_numel(&shape)
            .ok_or_else(|| self.tensor_err(key, format!("shape {shape:?} is larger than any tensor can be")))?;

        let big_endian = self.big_endian;
        let storage_len = self.storage_bytes(key, &storage_key)?.len();
        let storage_elems = storage_len / esize;
        if declared_numel >= 0 && dtype_override.is_none() {
            let need = (declared_numel as u128) * esize as u128;
            if (storage_len as u128) < need {
                return Err(self.tensor_err(
                    key,
                    format!(
                        "storage data/{storage_key} has {storage_len} bytes, expected {need} \
                         ({declared_numel} elements)"
                    ),
                ));
            }
        }
        if numel == 0 {
            return Ok(WeightTensor { shape, dtype, data: Vec::new() });
        }
        // Every index the view touches lies in the storage: offset + Σ (size - 1) · stride < storage elements.
        let last = shape.iter().zip(&stride).try_fold(offset, |acc, (&n, &s)| acc.checked_add((n - 1).checked_mul(s)?));
        if last.is_none_or(|l| l >= storage_elems) {
            return Err(self.tensor_err(
                key,
                format!(
                    "view (offset {offset}, size {shape:?}, stride {stride:?}) exceeds its storage data/{storage_key} \
                     of {storage_elems} elements"
                ),
            ));
        }
        // Stride-0 / overlapping views repeat storage elements: bound what the whole file may materialise.
        let out_bytes = numel * std::mem::size_of::<f32>();
        if out_bytes > self.budget {
            return Err(self.tensor_err(
                key,
                format!(
                    "view (size {shape:?}, stride {stride:?}) of storage data/{storage_key} ({storage_len} bytes) \
                     would materialise {out_bytes} bytes, more than the {} bytes left of the file's budget \
                     ({EXPANSION}x its size)",
                    self.budget
                ),
            ));
        }
        self.budget -= out_bytes;

        // From here on no index can leave the storage (checked above), so plain arithmetic is safe.
        let bytes = &self.storages[&storage_key];
        let mut data = Vec::with_capacity(numel);
        let contiguous = {
            let mut expect = 1usize;
            let mut ok = true;
            for (&n, &s) in shape.iter().zip(&stride).rev() {
                if n != 1 && s != expect {
                    ok = false;
                    break;
                }
                expect *= n;
            }
            ok
        };
        if contiguous {
            let chunk = &bytes[offset * esize..(offset + numel) * esize];
            for e in chunk.chunks_exact(esize) {
                data.push(decode(dtype, e, big_endian));
            }
        } else {
            // Odometer over the logical index, row-major; dimensions of size 1 never move, so their stride (which
            // the bound above ignores) is never added.
            let nd = shape.len();
            let mut idx = vec![0usize; nd];
            let mut pos = offset;
            for _ in 0..numel {
                data.push(decode(dtype, &bytes[pos * esize..(pos + 1) * esize], big_endian));
                let mut d = nd;
                while d > 0 {
                    d -= 1;
                    if idx[d] + 1 < shape[d] {
                        idx[d] += 1;
                        pos += stride[d];
                        break;
                    }
                    pos -= stride[d] * idx[d];
                    idx[d] = 0;
                }
            }
        }
        let t = WeightTensor { shape, dtype, data };
        if let Some(reason) = super::non_finite(&t) {
            return Err(self.tensor_err(key, reason));
        }
        Ok(t)
    }
}

/// One element of `dtype` (exactly its size in bytes) widened to f32.
fn decode(dtype: FileDType, b: &[u8], big_endian: bool) -> f32 {
    macro_rules! num {
        ($t:ty, $n:expr) => {{
            let mut a = [0u8; $n];
            a.copy_from_slice(b);
            if big_endian {
                <$t>::from_be_bytes(a)
            } else {
                <$t>::from_le_bytes(a)
            }
        }};
    }
    match dtype {
        FileDType::F64 => num!(f64, 8) as f32,
        FileDType::F32 => num!(f32, 4),
        FileDType::F16 => half::f16::from_bits(num!(u16, 2)).to_f32(),
        FileDType::BF16 => half::bf16::from_bits(num!(u16, 2)).to_f32(),
        FileDType::I64 => num!(i64, 8) as f32,
        FileDType::I32 => num!(i32, 4) as f32,
        FileDType::U8 => b[0] as f32,
        FileDType::Bool => (b[0] != 0) as u8 as f32,
    }
}
