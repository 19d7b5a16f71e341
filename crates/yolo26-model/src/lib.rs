//! YOLO26 (ultralytics 8.4 `yolo26.yaml`, scales n/s/m/l/x) as Burn modules, with weight import/export,
//! pre/post-processing and a [`detector::Detector`] API.
//!
//! Images are NCHW (`[B, 3, H, W]`), RGB in `[0, 1]`, as in ultralytics; inside, the network runs NHWC.

#![warn(missing_docs)]

pub mod backend;
pub mod config;
pub mod load;
pub mod model;
pub mod nn;
pub mod weights;

pub use backend::YoloBackend;
pub use config::{Scale, Yolo26Config};
pub use model::Yolo26;
/// Box and label drawing (lives in `yolo26-imageio`, shared with the training-batch plots).
pub use yolo26_imageio::annotate;
pub mod detector;
pub mod fuse;
pub mod names;
pub mod postprocess;
/// Letterbox and OpenCV-exact resizing (they live in `yolo26-imageio`, shared with the data pipeline).
pub use yolo26_imageio::preprocess;

pub use detector::{DecodeMode, Detection, Detector, DetectorOptions};
pub mod info;
