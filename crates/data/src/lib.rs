//! Datasets and loading for YOLO26 training and validation, following ultralytics 8.4.190 `ultralytics/data`:
//!
//! * [`config`]: `data.yaml` (`check_det_dataset`), image lists (`BaseDataset.get_img_files`), `img2label_paths`;
//! * [`labels`], [`scan`]: `verify_image_label`, `check_image`, `YOLODataset.cache_labels` / `get_labels` with our
//!   own JSON index cache;
//! * [`coco`]: COCO instances JSON (as `converter.convert_coco` would convert it, in memory);
//! * [`synthetic`]: the built-in procedurally drawn dataset `synthetic[-easy][:N][@SEED]` and its ultralytics writer;
//! * [`dataset`]: one split ([`Dataset`]) and what `--data` names ([`DataSource`]);
//! * [`rect`]: `BaseDataset.set_rectangle` (validation batch shapes);
//! * [`loader`]: the training and validation loaders (`build_dataloader`, `InfiniteDataLoader`, `collate_fn`).
//!
//! Box layout everywhere: labels are `[cx, cy, w, h]` normalised to the image (`Labels`); augmentation samples use
//! `[x1, y1, x2, y2]` pixels; shapes are `[h, w]` as in ultralytics.

pub mod coco;
pub mod config;
pub mod dataset;
mod error;
#[cfg(test)]
mod fuzz_tests;
pub mod labels;
pub mod loader;
pub mod rect;
pub mod scan;
pub mod synthetic;

pub use config::{img2label_path, img_files, load_data_yaml, parse_data_yaml, DataConfig, IMG_FORMATS, MAX_CLASSES};
pub use dataset::{DataSource, Dataset, Entry, ImageSource, Split};
pub use error::DataError;
pub use labels::{LabelStatus, Labels};
pub use loader::{Batch, BatchIter, RatioPad, TrainLoader, TrainLoaderConfig, ValLoader, ValLoaderConfig};
pub use scan::ScanSummary;
pub use synthetic::{write_ultralytics, Recipe, SyntheticSpec};
