//! safetensors reading and writing for [`WeightMap`]s (ultralytics state_dict names).
//!
//! Reading widens F64/F32/F16/BF16/I64/I32/U8/BOOL to `f32` and keeps the file dtype in [`WeightTensor::dtype`].
//! Writing stores floating-point tensors in the requested dtype and integer/bool tensors in their own dtype (so
//! `num_batches_tracked` stays I64). Class names round-trip through the `__metadata__` entry `names` (a JSON list;
//! a JSON object `{"0": "person", ...}` is accepted on read).
//!
//! Reading treats the file as untrusted: the `safetensors` crate checks the header and every data offset; shapes
//! are re-checked here for overflow ([`super::checked_numel`]) and NaN / infinite float values are refused naming
//! the tensor. Writing is byte-deterministic: the header is serialised here (metadata sorted by key, tensors in
//! data order) because `safetensors::serialize` takes the metadata as a `HashMap`, whose order changes per run.

use std::collections::BTreeMap;
use std::path::Path;

use safetensors::tensor::TensorInfo;
use safetensors::{Dtype, SafeTensors};
use serde::ser::{Serialize, SerializeMap, Serializer};

use super::{FileDType, WeightMap, WeightTensor, WeightsError};

const FORMAT: &str = "safetensors";

/// Reads a `.safetensors` file into a [`WeightMap`] (with [`WeightMap::names`] from `__metadata__["names"]`).
pub fn read_safetensors(path: &Path) -> Result<WeightMap, WeightsError> {
    let bytes = std::fs::read(path).map_err(|source| WeightsError::Io { path: path.to_path_buf(), source })?;
    read_safetensors_bytes(&bytes, path)
}

/// [`read_safetensors`] on a file already in memory; `path` is used in errors and as [`WeightMap::source`].
pub fn read_safetensors_bytes(bytes: &[u8], path: &Path) -> Result<WeightMap, WeightsError> {
    let fmt_err = |reason: String| WeightsError::Format { path: path.to_path_buf(), format: FORMAT, reason };
    let st = SafeTensors::deserialize(bytes).map_err(|e| fmt_err(e.to_string()))?;
    let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| fmt_err(e.to_string()))?;
    let names = match meta.metadata().as_ref().and_then(|m| m.get("names")) {
        None => None,
        Some(s) => Some(parse_names(s).ok_or_else(|| {
            fmt_err(format!("__metadata__ 'names' is not a JSON list of strings or an id → name object: {s:.200}"))
        })?),
    };
    let mut map = WeightMap { tensors: Default::default(), source: path.to_path_buf(), names };
    for (name, view) in st.tensors() {
        let terr = |reason: String| WeightsError::Tensor { path: path.to_path_buf(), key: name.clone(), reason };
        let b = view.data();
        let (dtype, data): (FileDType, Vec<f32>) = match view.dtype() {
            Dtype::F64 => (FileDType::F64, b.chunks_exact(8).map(|c| f64::from_le_bytes(arr(c)) as f32).collect()),
            Dtype::F32 => (FileDType::F32, b.chunks_exact(4).map(|c| f32::from_le_bytes(arr(c))).collect()),
            Dtype::F16 => {
                (FileDType::F16, b.chunks_exact(2).map(|c| half::f16::from_le_bytes(arr(c)).to_f32()).collect())
            }
            Dtype::BF16 => {
                (FileDType::BF16, b.chunks_exact(2).map(|c| half::bf16::from_le_bytes(arr(c)).to_f32()).collect())
            }
            Dtype::I64 => (FileDType::I64, b.chunks_exact(8).map(|c| i64::from_le_bytes(arr(c)) as f32).collect()),
            Dtype::I32 => (FileDType::I32, b.chunks_exact(4).map(|c| i32::from_le_bytes(arr(c)) as f32).collect()),
            Dtype::U8 => (FileDType::U8, b.iter().map(|&c| c as f32).collect()),
            Dtype::BOOL => (FileDType::Bool, b.iter().map(|&c| (c != 0) as u8 as f32).collect()),
            other => return Err(terr(format!("unsupported dtype {other:?}"))),
        };
        let numel = super::checked_numel(view.shape());
        if numel != Some(data.len()) {
            return Err(terr(format!("{} values for shape {:?}", data.len(), view.shape())));
        }
        let t = WeightTensor { shape: view.shape().to_vec(), dtype, data };
        if let Some(reason) = super::non_finite(&t) {
            return Err(terr(reason));
        }
        map.tensors.insert(name, t);
    }
    Ok(map)
}

fn arr<const N: usize>(c: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(c);
    a
}

fn parse_names(s: &str) -> Option<Vec<String>> {
    match serde_json::from_str::<serde_json::Value>(s).ok()? {
        serde_json::Value::Array(a) => a.into_iter().map(|v| v.as_str().map(str::to_string)).collect(),
        serde_json::Value::Object(o) => {
            let mut pairs = Vec::with_capacity(o.len());
            for (k, v) in o {
                pairs.push((k.parse::<usize>().ok()?, v.as_str()?.to_string()));
            }
            let n = pairs.iter().map(|(i, _)| i.saturating_add(1)).max().unwrap_or(0);
            if n > pairs.len().saturating_mul(2).max(16) {
                return None;
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

/// Writes `map` as safetensors at `path` (atomically: see [`super::write_atomic`]): floating-point tensors as `float_dtype` (F32, F16, BF16 or F64),
/// integer and bool tensors in their own dtype (I64/I32/U8/BOOL), names (if any) as JSON in `__metadata__["names"]`.
pub fn write_safetensors(map: &WeightMap, path: &Path, float_dtype: FileDType) -> Result<(), WeightsError> {
    let bytes = safetensors_bytes(map, path, float_dtype, &[])?;
    super::write_atomic(path, &bytes)
}

/// The safetensors file [`write_safetensors`] writes, as bytes, with `extra` string pairs added to
/// `__metadata__` (`path` only names the file in errors). The same map gives the same bytes on every run.
pub fn safetensors_bytes(
    map: &WeightMap,
    path: &Path,
    float_dtype: FileDType,
    extra: &[(String, String)],
) -> Result<Vec<u8>, WeightsError> {
    let fmt_err = |reason: String| WeightsError::Format { path: path.to_path_buf(), format: FORMAT, reason };
    if !float_dtype.is_float() {
        return Err(fmt_err(format!("cannot write floating-point tensors as {float_dtype:?}")));
    }
    let mut blobs: Vec<(&str, Dtype, Vec<usize>, Vec<u8>)> = Vec::with_capacity(map.tensors.len());
    for (key, t) in &map.tensors {
        let terr = |reason: String| WeightsError::Tensor { path: path.to_path_buf(), key: key.clone(), reason };
        if key == "__metadata__" {
            return Err(terr("the name is reserved for the safetensors metadata".into()));
        }
        if super::checked_numel(&t.shape) != Some(t.data.len()) {
            return Err(terr(format!("{} values for shape {:?}", t.data.len(), t.shape)));
        }
        let out = if t.dtype.is_float() { float_dtype } else { t.dtype };
        let (dt, bytes): (Dtype, Vec<u8>) = match out {
            FileDType::F64 => (Dtype::F64, t.data.iter().flat_map(|&v| (v as f64).to_le_bytes()).collect()),
            FileDType::F32 => (Dtype::F32, t.data.iter().flat_map(|&v| v.to_le_bytes()).collect()),
            FileDType::F16 => {
                if let Some(v) = t.data.iter().find(|v| v.is_finite() && !half::f16::from_f32(**v).is_finite()) {
                    return Err(terr(format!("value {v} does not fit in F16")));
                }
                (Dtype::F16, t.data.iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect())
            }
            FileDType::BF16 => {
                if let Some(v) = t.data.iter().find(|v| v.is_finite() && !half::bf16::from_f32(**v).is_finite()) {
                    return Err(terr(format!("value {v} does not fit in BF16")));
                }
                (Dtype::BF16, t.data.iter().flat_map(|&v| half::bf16::from_f32(v).to_le_bytes()).collect())
            }
            FileDType::I64 => (Dtype::I64, t.data.iter().flat_map(|&v| (v.round() as i64).to_le_bytes()).collect()),
            FileDType::I32 => (Dtype::I32, t.data.iter().flat_map(|&v| (v.round() as i32).to_le_bytes()).collect()),
            FileDType::U8 => (Dtype::U8, t.data.iter().map(|&v| v.round().clamp(0.0, 255.0) as u8).collect()),
            FileDType::Bool => (Dtype::BOOL, t.data.iter().map(|&v| (v != 0.0) as u8).collect()),
        };
        blobs.push((key.as_str(), dt, t.shape.clone(), bytes));
    }
    let mut meta = BTreeMap::new();
    meta.insert("format".to_string(), "pt".to_string());
    if let Some(names) = &map.names {
        let json = serde_json::to_string(names).map_err(|e| fmt_err(e.to_string()))?;
        meta.insert("names".to_string(), json);
    }
    for (k, v) in extra {
        meta.insert(k.clone(), v.clone());
    }
    let bytes = serialize(blobs, &meta).map_err(fmt_err)?;
    // What we write must read back: the crate's own validation of header and offsets.
    SafeTensors::deserialize(&bytes).map_err(|e| fmt_err(format!("internal error, invalid output: {e}")))?;
    Ok(bytes)
}

/// The header of a safetensors file: `__metadata__` first (a `BTreeMap`, so sorted by key), then the tensors in
/// the order of their data.
struct Header<'a> {
    meta: &'a BTreeMap<String, String>,
    tensors: Vec<(&'a str, TensorInfo)>,
}

impl Serialize for Header<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.tensors.len() + 1))?;
        if !self.meta.is_empty() {
            m.serialize_entry("__metadata__", self.meta)?;
        }
        for (name, info) in &self.tensors {
            m.serialize_entry(name, info)?;
        }
        m.end()
    }
}

/// The safetensors layout of `safetensors::serialize`: data sorted by descending dtype alignment, then by name;
/// an 8-byte little-endian header length; the JSON header padded with spaces to a multiple of 8; the data.
fn serialize(
    mut blobs: Vec<(&str, Dtype, Vec<usize>, Vec<u8>)>,
    meta: &BTreeMap<String, String>,
) -> Result<Vec<u8>, String> {
    blobs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut offset = 0usize;
    let mut tensors = Vec::with_capacity(blobs.len());
    for (name, dtype, shape, bytes) in &blobs {
        tensors.push((
            *name,
            TensorInfo { dtype: *dtype, shape: shape.clone(), data_offsets: (offset, offset + bytes.len()) },
        ));
        offset += bytes.len();
    }
    let mut header = serde_json::to_vec(&Header { meta, tensors }).map_err(|e| e.to_string())?;
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut out = Vec::with_capacity(8 + header.len() + offset);
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(&header);
    for (_, _, _, bytes) in &blobs {
        out.extend_from_slice(bytes);
    }
    Ok(out)
}
