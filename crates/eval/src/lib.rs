//! Detection metrics for YOLO26, equal to the Python references:
//!
//! - [`coco`]: `pycocotools.cocoeval.COCOeval` (pycocotools 2.0.11, `iouType='bbox'`);
//! - [`ultra`]: ultralytics 8.4.190 validation metrics (`match_predictions`, `ap_per_class`, `DetMetrics`,
//!   `ConfusionMatrix`);
//! - [`plots`]: PNG plots of PR / metric-confidence curves and the confusion matrix (`plot_pr_curve`,
//!   `plot_mc_curve`, `ConfusionMatrix.plot`).
#![warn(missing_docs)]

pub mod coco;
mod error;
pub mod numpy;
pub mod plots;
pub mod ultra;

pub use coco::{eval_files, evaluate, CocoDets, CocoEval, CocoGt, Params};
pub use error::EvalError;
