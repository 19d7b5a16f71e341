//! Writes an ultralytics-loadable `.pt`: `YOLO("best.pt")` / `torch.load` rebuild a `DetectionModel` from it.
//!
//! ultralytics pickles the whole `nn.Module` (`ckpt["model"]`), whose object graph mirrors PyTorch internals.
//! Rather than forge that graph, the pickle here *constructs* the model through ultralytics' public API and loads
//! the weights into it — the same calls a user would type:
//!
//! ```python
//! sd = {"model.0.conv.weight": tensor, ...}            # every tensor, ultralytics names, float32 (or float16)
//! model = ultralytics.nn.tasks.DetectionModel("yolo26n.yaml", 3, nc, False)
//! model.load_state_dict(sd)                             # strict: a missing or extra key fails the load
//! model.names = {0: "person", ...}
//! ckpt = {"state_dict": sd, "names": ..., "model": model, "ema": None, "train_args": {...}, ...}
//! ```
//!
//! written as a protocol-2 pickle (`GLOBAL` / `REDUCE` / memo), tensors as `torch._utils._rebuild_tensor_v2` of
//! persistent storages `('storage', torch.FloatStorage, key, 'cpu', numel)` stored uncompressed in
//! `archive/data/<key>`, next to `archive/data.pkl`, `archive/byteorder` and `archive/version` — the zip layout of
//! `torch.save`. Loading needs `weights_only=False` (as every ultralytics checkpoint does; ultralytics' `torch_load`
//! sets it) and the ultralytics package (the model yaml ships with it). BatchNorm `num_batches_tracked` buffers
//! that the map lacks are written as 0 so the strict load sees every key. This project's own reader
//! ([`super::pt`]) reads the `state_dict` entry.

use std::io::{Cursor, Write};
use std::path::Path;

use super::pickle::op;
use super::{write_atomic, FileDType, WeightMap, WeightsError};
use crate::config::Scale;

/// What goes into the checkpoint besides the weights.
#[derive(Clone, Debug)]
pub struct PtMeta {
    /// Model scale (selects `yolo26{n,s,m,l,x}.yaml`).
    pub scale: Scale,
    /// Number of classes.
    pub nc: usize,
    /// Class names (`model.names`); `None`: `class0`, `class1`, ….
    pub names: Option<Vec<String>>,
    /// `ckpt["train_args"]` entries (ultralytics reads `imgsz`, `data`, `task`, `single_cls` back).
    pub train_args: Vec<(String, String)>,
    /// Store floats as float16 (ultralytics' own checkpoints do) instead of float32.
    pub half: bool,
}

/// A minimal protocol-2 pickle writer (also used by the tests to craft hostile `.pt` files).
#[derive(Default)]
pub(super) struct Pickler {
    pub(super) out: Vec<u8>,
    memo: u32,
}

impl Pickler {
    pub(super) fn op(&mut self, o: u8) -> &mut Self {
        self.out.push(o);
        self
    }
    pub(super) fn global(&mut self, module: &str, name: &str) -> &mut Self {
        self.out.push(op::GLOBAL);
        self.out.extend_from_slice(format!("{module}\n{name}\n").as_bytes());
        self
    }
    pub(super) fn str(&mut self, s: &str) -> &mut Self {
        self.out.push(op::BINUNICODE);
        self.out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
        self
    }
    pub(super) fn int(&mut self, v: i64) -> &mut Self {
        if let Ok(v) = i32::try_from(v) {
            self.out.push(op::BININT);
            self.out.extend_from_slice(&v.to_le_bytes());
        } else {
            self.out.push(op::LONG1);
            self.out.push(8);
            self.out.extend_from_slice(&v.to_le_bytes());
        }
        self
    }
    fn bool(&mut self, b: bool) -> &mut Self {
        self.op(if b { op::NEWTRUE } else { op::NEWFALSE })
    }
    /// Memoizes the top of the stack; its memo index.
    fn put(&mut self) -> u32 {
        let i = self.memo;
        self.memo += 1;
        self.out.push(op::LONG_BINPUT);
        self.out.extend_from_slice(&i.to_le_bytes());
        i
    }
    fn get(&mut self, i: u32) -> &mut Self {
        self.out.push(op::LONG_BINGET);
        self.out.extend_from_slice(&i.to_le_bytes());
        self
    }
    /// `func(*args)` where `args` pushes the arguments.
    pub(super) fn call(&mut self, module: &str, name: &str, args: impl FnOnce(&mut Self)) -> &mut Self {
        self.global(module, name).op(op::MARK);
        args(self);
        self.op(op::TUPLE).op(op::REDUCE)
    }
    /// `collections.OrderedDict()`.
    fn ordered_dict(&mut self) -> &mut Self {
        self.global("collections", "OrderedDict").op(op::EMPTY_TUPLE).op(op::REDUCE)
    }
    /// A contiguous tensor of `dims` whose data is storage `key` (`numel` elements of `storage`, e.g.
    /// `FloatStorage`).
    fn tensor(&mut self, storage: &str, key: &str, dims: &[usize]) -> &mut Self {
        let numel: usize = dims.iter().product();
        let mut strides = vec![1usize; dims.len()];
        for i in (0..dims.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * dims[i + 1];
        }
        let dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        let strides: Vec<i64> = strides.iter().map(|&s| s as i64).collect();
        self.tensor_view(storage, key, numel as i64, 0, &dims, &strides)
    }

    /// `_rebuild_tensor_v2(('storage', torch.<storage>, key, 'cpu', numel), offset, dims, strides, False,
    /// OrderedDict())`: any view, as written, of a storage claiming `numel` elements.
    pub(super) fn tensor_view(
        &mut self,
        storage: &str,
        key: &str,
        numel: i64,
        offset: i64,
        dims: &[i64],
        strides: &[i64],
    ) -> &mut Self {
        self.call("torch._utils", "_rebuild_tensor_v2", |p| {
            p.op(op::MARK).str("storage").global("torch", storage).str(key).str("cpu").int(numel);
            p.op(op::TUPLE).op(op::BINPERSID);
            p.int(offset).op(op::MARK);
            dims.iter().for_each(|&d| {
                p.int(d);
            });
            p.op(op::TUPLE).op(op::MARK);
            strides.iter().for_each(|&s| {
                p.int(s);
            });
            p.op(op::TUPLE).bool(false).ordered_dict();
        })
    }
}

/// The `.pt` bytes of `map` (ultralytics names) with `meta`.
pub fn pt_bytes(map: &WeightMap, meta: &PtMeta) -> Result<Vec<u8>, WeightsError> {
    let err = |reason: String| WeightsError::Format { path: map.source.clone(), format: "PyTorch .pt", reason };
    if map.tensors.is_empty() {
        return Err(err("no tensors to write".into()));
    }
    let names: Vec<String> = match &meta.names {
        Some(n) if n.len() == meta.nc => n.clone(),
        Some(n) => return Err(err(format!("{} class names for a model of {} classes", n.len(), meta.nc))),
        None => (0..meta.nc).map(|i| format!("class{i}")).collect(),
    };
    // every tensor and its storage record; BatchNorm counters the map lacks
    let mut records: Vec<(String, Vec<u8>)> = Vec::new();
    let mut entries: Vec<(String, &'static str, String, Vec<usize>)> = Vec::new();
    for (k, t) in &map.tensors {
        if t.data.iter().any(|v| !v.is_finite()) {
            return Err(WeightsError::Tensor {
                path: map.source.clone(),
                key: k.clone(),
                reason: "holds NaN or infinite values".into(),
            });
        }
        if meta.half && t.dtype != FileDType::I64 {
            if let Some(v) = t.data.iter().find(|v| !half::f16::from_f32(**v).is_finite()) {
                return Err(WeightsError::Tensor {
                    path: map.source.clone(),
                    key: k.clone(),
                    reason: format!("value {v} does not fit in float16"),
                });
            }
        }
        let key = records.len().to_string();
        let (storage, bytes) = if meta.half && t.dtype != FileDType::I64 {
            ("HalfStorage", t.data.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect())
        } else if t.dtype == FileDType::I64 {
            ("LongStorage", t.data.iter().flat_map(|v| (*v as i64).to_le_bytes()).collect())
        } else {
            ("FloatStorage", t.data.iter().flat_map(|v| v.to_le_bytes()).collect())
        };
        records.push((key.clone(), bytes));
        entries.push((k.clone(), storage, key, t.shape.clone()));
        if let Some(bn) = k.strip_suffix(".running_var") {
            let counter = format!("{bn}.num_batches_tracked");
            if !map.tensors.contains_key(&counter) {
                let key = records.len().to_string();
                records.push((key.clone(), 0i64.to_le_bytes().to_vec()));
                entries.push((counter, "LongStorage", key, Vec::new()));
            }
        }
    }

    let mut p = Pickler::default();
    p.op(op::PROTO).out.push(2);
    p.op(op::EMPTY_DICT).op(op::MARK);
    // the state_dict (memo sd) and the names (memo names), readable without ultralytics
    p.str("state_dict").op(op::EMPTY_DICT);
    let sd = p.put();
    p.op(op::MARK);
    for (k, storage, key, dims) in &entries {
        p.str(k).tensor(storage, key, dims);
    }
    p.op(op::SETITEMS);
    p.str("names").op(op::EMPTY_DICT);
    let names_memo = p.put();
    p.op(op::MARK);
    for (i, n) in names.iter().enumerate() {
        p.int(i as i64).str(n);
    }
    p.op(op::SETITEMS);
    // model = DetectionModel(yaml, 3, nc, False); model.load_state_dict(sd); model.names = names
    let yaml = format!("yolo26{}.yaml", meta.scale.letter());
    p.str("model").call("ultralytics.nn.tasks", "DetectionModel", |p| {
        p.str(&yaml).int(3).int(meta.nc as i64).bool(false);
    });
    let model = p.put();
    p.op(op::POP);
    p.call("builtins", "getattr", |p| {
        p.get(model).str("load_state_dict");
    })
    .op(op::MARK)
    .get(sd)
    .bool(true)
    .op(op::TUPLE)
    .op(op::REDUCE)
    .op(op::POP);
    p.call("builtins", "setattr", |p| {
        p.get(model).str("names").get(names_memo);
    })
    .op(op::POP);
    p.get(model);
    for k in ["ema", "updates", "optimizer", "best_fitness"] {
        p.str(k).op(op::NONE);
    }
    p.str("epoch").int(-1);
    p.str("version").str("8.4.190");
    p.str("license").str("AGPL-3.0 License (https://ultralytics.com/license)");
    p.str("docs").str("https://docs.ultralytics.com");
    p.str("writer").str(concat!("yolo26 (Rust) ", env!("CARGO_PKG_VERSION")));
    p.str("train_args").op(op::EMPTY_DICT).op(op::MARK);
    p.str("task").str("detect");
    for (k, v) in &meta.train_args {
        p.str(k).str(v);
    }
    p.op(op::SETITEMS);
    p.op(op::SETITEMS).op(op::STOP);

    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    // A fixed timestamp (the zip epoch) keeps the bytes identical from run to run.
    let stored = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .last_modified_time(zip::DateTime::default())
        .with_alignment(64);
    let mut add = |name: &str, bytes: &[u8]| -> Result<(), WeightsError> {
        zip.start_file(format!("archive/{name}"), stored).map_err(|e| err(format!("zip {name}: {e}")))?;
        zip.write_all(bytes).map_err(|e| err(format!("zip {name}: {e}")))
    };
    add("data.pkl", &p.out)?;
    add("byteorder", b"little")?;
    for (key, bytes) in &records {
        add(&format!("data/{key}"), bytes)?;
    }
    add("version", b"3\n")?;
    let out = zip.finish().map_err(|e| err(format!("zip: {e}")))?;
    Ok(out.into_inner())
}

/// Writes [`pt_bytes`] to `path` atomically.
pub fn write_pt(map: &WeightMap, meta: &PtMeta, path: &Path) -> Result<(), WeightsError> {
    write_atomic(path, &pt_bytes(map, meta)?)
}
