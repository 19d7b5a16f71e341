//! The error type of this crate.

/// Why an augmentation step refused its input.
#[derive(Debug, thiserror::Error)]
pub enum AugmentError {
    /// An image with zero width or height.
    #[error("{what}: empty image ({width}x{height})")]
    EmptyImage { what: &'static str, width: u32, height: u32 },
    /// `boxes` and `cls` of a sample have different lengths.
    #[error("sample has {boxes} boxes but {cls} class ids")]
    LabelCount { boxes: usize, cls: usize },
    /// A box coordinate is NaN or infinite.
    #[error("box {index} has a non-finite coordinate {value:?}")]
    NonFiniteBox { index: usize, value: [f32; 4] },
    /// A configuration value is out of range.
    #[error("invalid augmentation setting {name} = {value}: {reason}")]
    InvalidConfig { name: &'static str, value: f64, reason: &'static str },
    /// An argument is out of range (sizes, shapes, matrices).
    #[error("{0}")]
    InvalidArgument(String),
    /// A [`crate::SampleSource`] with no samples.
    #[error("the sample source is empty")]
    EmptySource,
    /// Writing a plot failed.
    #[error("writing {path}: {source}")]
    Io { path: String, source: std::io::Error },
    /// Encoding a plot failed.
    #[error("encoding {path}: {source}")]
    Encode { path: String, source: image::ImageError },
}
