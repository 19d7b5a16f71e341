//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong while reading inputs, evaluating or plotting.
///
/// Each variant names what is wrong (file, key, index) so that bad input never panics.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A JSON document is malformed or misses a key (`what` names the file and the element, e.g.
    /// `annotations[17]`).
    #[error("{what}: invalid JSON: {source}")]
    Json {
        /// Which document and element.
        what: String,
        /// The serde_json error (it names the missing or mistyped key, and line/column for whole-document errors).
        source: serde_json::Error,
    },
    /// The input is well-formed JSON / well-shaped arrays but its content is invalid.
    #[error("{0}")]
    Invalid(String),
    /// Rendering or encoding a plot failed.
    #[error("plot {path}: {msg}")]
    Plot {
        /// The PNG being written.
        path: PathBuf,
        /// What failed.
        msg: String,
    },
}

impl EvalError {
    /// Shorthand for [`EvalError::Invalid`].
    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        EvalError::Invalid(msg.into())
    }
}
