//! ultralytics 8.4.190 detection validation metrics: `BaseValidator.match_predictions`, `box_iou`,
//! `ap_per_class` / `compute_ap` / `smooth`, `Metric` / `DetMetrics` and `ConfusionMatrix` (detect task).

mod ap;
mod confusion;
mod matching;
mod metrics;

pub use ap::{ap_per_class, ap_per_class_with_order, compute_ap, confidence_order, smooth, ApPerClass, NPX};
pub use confusion::{ConfusionMatrix, CM_CONF, CM_IOU, VAL_CONF};
pub use matching::{box_iou, match_predictions, process_batch, Xyxy, IOUV, NIOU};
pub use metrics::{DetMetrics, DetStats, Prediction, ResultsDict, Target};
