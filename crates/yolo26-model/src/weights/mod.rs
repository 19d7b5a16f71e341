//! Weight files: ultralytics state_dicts in safetensors, ultralytics `.pt` checkpoints (read natively), and the
//! name-keyed [`WeightMap`] both turn into. Loading a [`WeightMap`] into the Burn model lives in `crate::load`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod peak_alloc;
pub mod pickle;
pub mod pt;
pub mod pt_write;
pub mod safetensors_io;
#[cfg(test)]
mod tests;

pub use pt::read_pt;
pub use pt_write::{pt_bytes, write_pt, PtMeta};
pub use safetensors_io::{read_safetensors, safetensors_bytes, write_safetensors};

/// Element type a tensor had in its file (all data is widened to `f32` in memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileDType {
    /// `float64`.
    F64,
    /// `float32`.
    F32,
    /// `float16`.
    F16,
    /// `bfloat16`.
    BF16,
    /// `int64`.
    I64,
    /// `int32`.
    I32,
    /// `uint8`.
    U8,
    /// `bool`.
    Bool,
}

impl FileDType {
    /// A floating-point dtype (F64, F32, F16, BF16).
    pub fn is_float(self) -> bool {
        matches!(self, FileDType::F64 | FileDType::F32 | FileDType::F16 | FileDType::BF16)
    }
}

/// Element count of a tensor shape claimed by a file, or `None` for a shape no real tensor has: the product of the
/// dimensions, zero-sized ones counted as 1, must stay below `isize::MAX / 8`, so that no later product of
/// dimensions or strides overflows, not even for an empty tensor whose other dimensions are huge.
pub(crate) fn checked_numel(shape: &[usize]) -> Option<usize> {
    let max = isize::MAX as usize / 8;
    let nonzero = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d.max(1)).filter(|&p| p <= max))?;
    Some(if shape.contains(&0) { 0 } else { nonzero })
}

/// The first NaN or infinite value of a float tensor as an error reason (`None` when all are finite). Readers
/// refuse such weights by name rather than let them turn every prediction into garbage.
pub(crate) fn non_finite(t: &WeightTensor) -> Option<String> {
    if !t.dtype.is_float() {
        return None;
    }
    let i = t.data.iter().position(|v| !v.is_finite())?;
    Some(format!(
        "holds a non-finite value ({} at flat index {i} of shape {:?}, {:?} in the file)",
        t.data[i], t.shape, t.dtype
    ))
}

/// One tensor read from a weight file: logical (contiguous, row-major) shape and values widened to `f32`.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightTensor {
    /// Logical shape (PyTorch's: conv weights `[c_out, c_in / g, k, k]`).
    pub shape: Vec<usize>,
    /// Element type in the file.
    pub dtype: FileDType,
    /// Values, contiguous row-major, widened to `f32`.
    pub data: Vec<f32>,
}

/// An ultralytics-named state_dict (`model.0.conv.weight`, `model.23.one2one_cv3.2.2.bias`, ...).
#[derive(Debug, Clone, Default)]
pub struct WeightMap {
    /// Key → tensor, sorted by key.
    pub tensors: BTreeMap<String, WeightTensor>,
    /// File the map was read from (for error messages).
    pub source: PathBuf,
    /// Class names stored in the checkpoint (`model.names` of an ultralytics `.pt`), index = class id.
    pub names: Option<Vec<String>>,
}

/// Errors reading or writing weight files. Every variant names the file and, where it applies, the key.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a valid file of its format.
    #[error("{path}: not a valid {format} file: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The format it was read or written as.
        format: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// One tensor of the file is unusable.
    #[error("{path}: tensor '{key}': {reason}")]
    Tensor {
        /// The file.
        path: PathBuf,
        /// The tensor's state_dict key.
        key: String,
        /// What is wrong.
        reason: String,
    },
}

/// Reads a weight file, choosing the reader from its content (not its extension): a zip archive (`PK\x03\x04`) is a
/// PyTorch `.pt` ([`read_pt`]), an 8-byte little-endian header length followed by `{` is safetensors
/// ([`read_safetensors`]); a pre-1.6 torch pickle gets an error asking to re-save it; anything else is rejected.
pub fn read_weights(path: &Path) -> Result<WeightMap, WeightsError> {
    let io = |source| WeightsError::Io { path: path.to_path_buf(), source };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let mut head = Vec::with_capacity(16);
    f.by_ref().take(16).read_to_end(&mut head).map_err(io)?;
    drop(f);
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return read_pt(path);
    }
    if head.len() >= 9 && head[8] == b'{' {
        let n = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
        if n >= 2 && n <= len.saturating_sub(8) {
            return read_safetensors(path);
        }
    }
    if head.len() >= 2 && head[0] == 0x80 && (1..=5).contains(&head[1]) {
        return read_pt(path); // legacy torch pickle: read_pt explains how to convert it
    }
    Err(WeightsError::Format {
        path: path.to_path_buf(),
        format: "weight",
        reason: "unrecognised content (expected a PyTorch .pt zip archive or a .safetensors file)".into(),
    })
}

/// Writes `bytes` to `path` so that a crash or `kill -9` at any moment leaves either the old file or the new one,
/// never a torn one: a temporary file in the same directory, `fsync`, rename over `path`, `fsync` of the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WeightsError> {
    use std::io::Write;
    let io = |source| WeightsError::Io { path: path.to_path_buf(), source };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| io(std::io::Error::other("not a file path")))?;
    let tmp = dir.join(format!(".{}.tmp{}", name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        // The rename is durable only once the directory entry is on disk (best effort where a directory cannot
        // be opened, e.g. on Windows).
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}
