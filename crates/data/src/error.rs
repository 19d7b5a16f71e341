//! The error type of the crate.

use std::path::PathBuf;

/// Everything that can go wrong while opening a dataset or loading a batch. Each variant names the file (and where
/// it applies the key or line) that is wrong.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A dataset YAML is not valid YAML or has a key of the wrong type / value (ultralytics `check_det_dataset`).
    #[error("{path}: {msg}")]
    Yaml { path: PathBuf, msg: String },
    /// A COCO instances JSON is not valid or inconsistent.
    #[error("{path}: {msg}")]
    Json { path: PathBuf, msg: String },
    /// A dataset split has no usable image (ultralytics `get_img_files` / `get_labels` errors).
    #[error("{0}")]
    NoImages(String),
    /// An image could not be decoded when loading a batch.
    #[error("{path}: cannot decode image: {msg}")]
    Decode { path: PathBuf, msg: String },
    /// A `synthetic[-easy][:N][@SEED]` spec or another argument is malformed.
    #[error("{0}")]
    Spec(String),
    /// The augmentation pipeline failed for one sample.
    #[error("augmentation of image {index}: {msg}")]
    Augment { index: usize, msg: String },
    /// An augmentation or letterbox step refused its input.
    #[error("augmentation: {0}")]
    AugmentLib(#[from] yolo26_augment::AugmentError),
    /// The loader's background thread ended unexpectedly or could not be started.
    #[error("loader: {0}")]
    Loader(String),
}

impl DataError {
    /// An [`DataError::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DataError::Io { path: path.into(), source }
    }
}
