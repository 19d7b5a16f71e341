//! YOLO26 (ultralytics 8.4 `yolo26.yaml`, scales n/s/m/l/x) as Burn modules, with weight import/export,
//! pre/post-processing and a [`detector::Detector`] API.

pub mod config;
pub mod load;
pub mod model;
pub mod nn;
pub mod weights;

pub use config::{Scale, Yolo26Config};
pub use model::Yolo26;
pub mod annotate;
pub mod detector;
pub mod fuse;
pub mod names;
pub mod postprocess;
pub mod preprocess;

pub use detector::{DecodeMode, Detection, Detector, DetectorOptions};
pub mod info;

/// The backends the model runs on: any Burn backend with the PSA attention op
/// ([`kernels_cubecl::psa::PsaBackend`], used by `nn::attention::Attention`). Implemented for every such
/// backend: `Flex`, `Wgpu`, `Cuda`, `CubeBackend<R, ..>`, `Fusion<B>` and `Autodiff<B>` of those.
pub trait YoloBackend: kernels_cubecl::psa::PsaBackend {}

impl<B: kernels_cubecl::psa::PsaBackend> YoloBackend for B {}
