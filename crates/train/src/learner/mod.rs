//! YOLO26 on burn-train: the run is a burn-train `Learner` launched by `SupervisedTraining` with a custom
//! learning strategy, so burn-train's event processor, metrics, renderers (TUI on a terminal) and interrupter
//! serve it, while the loop itself is ultralytics' (see [`strategy`]).
//!
//! | burn-train | here |
//! |---|---|
//! | `TrainStep` / `InferenceStep` | [`YoloTrainModel`]: training forward + `E2ELoss` + backward; validation of a split |
//! | `Optimizer` | [`YoloOptimizer`]: ultralytics SGD / AdamW / MuSGD, groups set by the schedule |
//! | `LrScheduler` | a constant (unused: the strategy sets every group's lr from ultralytics' schedule) |
//! | `DataLoader` | [`EpochLoader`] (augmenting train loader), [`ValJobLoader`] (the val split) |
//! | `SupervisedLearningStrategy` | [`YoloStrategy`]: warmup, accumulation, EMA, validation, checkpoints |
//! | `MultiDevicesTrainStep` | [`multi::DeviceSteps`]: data-parallel steps on several devices (`--devices`) |
//! | metrics | [`metrics`]: loss items, instances, images/s, burn's `LearningRateMetric`; P, R, mAP50, mAP50-95 |
//! | renderer | [`Ui`]: burn-train's TUI, or [`render::LineRenderer`] |
//!
//! burn-train's own checkpointer and file metric logger are not used: the checkpoints are ultralytics-named
//! safetensors written atomically with the exact resume state (`trainer::checkpoint`), and burn-train 0.21's
//! `FileMetricLogger` restarts its epoch count at 1 after a resume, overwriting `train/epoch-1` (metrics are kept
//! in memory; `results.csv` is the per-epoch log).

pub mod loader;
pub mod metrics;
pub mod model;
pub mod multi;
pub mod optimizer;
pub mod profile;
pub mod render;
pub mod strategy;

use std::sync::Arc;

use burn::data::dataloader::DataLoader;
use burn::tensor::backend::AutodiffBackend;
use burn::train::logger::InMemoryMetricLogger;
use burn::train::metric::LearningRateMetric;
use burn::train::{Interrupter, Learner, SupervisedTraining, TrainingStrategy};
use yolo26_model::{Yolo26, YoloBackend};

pub use loader::{EpochLoader, ValJobLoader};
pub use metrics::{ImagesPerSecond, InstancesMetric, LossItemMetric, ValMetric};
pub use model::{LossControl, TrainItem, ValJob, ValOutput, YoloTrainModel};
pub use optimizer::YoloOptimizer;
pub use render::Ui;
pub use strategy::{Run, YoloComponents, YoloStrategy};

use crate::backend::TrainBackend;
use crate::trainer::TrainSummary;

/// Runs `run` with burn-train: a `Learner` of `model` (on the autodiff backend) and the run's optimizer, launched
/// by `SupervisedTraining` with [`YoloStrategy`], rendering with `ui`. `resumed_epoch`: the last completed epoch of
/// a resumed run (1-based), for the TUI's count.
pub fn launch<AB>(run: Run<AB>, model: Yolo26<AB>, ui: Ui, resumed_epoch: Option<usize>) -> Result<TrainSummary, String>
where
    AB: AutodiffBackend + TrainBackend,
    AB::InnerBackend: YoloBackend,
{
    let epochs = run.args.epochs;
    let dir = run.dir.clone();
    let learner = Learner::new(YoloTrainModel { model, loss: run.loss.clone() }, run.optimizer.clone(), 0.0f64);
    let train: Arc<dyn DataLoader<AB, yolo26_data::Batch>> = Arc::new(run.loader.clone());
    let valid: Arc<dyn DataLoader<AB::InnerBackend, ValJob>> = Arc::new(ValJobLoader { job: run.val.clone() });
    let strategy = YoloStrategy::new(run);
    let outcome = strategy.outcome.clone();
    let interrupter = Interrupter::new();
    let [box_loss, cls_loss, l1_loss] = LossItemMetric::all();
    let [precision, recall, map50, map] = ValMetric::all();
    let training = SupervisedTraining::new(&dir, train, valid)
        .with_training_strategy(TrainingStrategy::Custom(Arc::new(strategy)))
        .with_interrupter(interrupter.clone())
        .with_metric_logger(InMemoryMetricLogger::new())
        .metric_train_numeric(box_loss)
        .metric_train_numeric(cls_loss)
        .metric_train_numeric(l1_loss)
        .metric_train_numeric(InstancesMetric::default())
        .metric_train_numeric(ImagesPerSecond::default())
        .metric_train_numeric(LearningRateMetric::new())
        .metric_valid_numeric(precision)
        .metric_valid_numeric(recall)
        .metric_valid_numeric(map50)
        .metric_valid_numeric(map)
        .num_epochs(epochs)
        .renderer(ui.renderer(interrupter, resumed_epoch));
    // the returned inference model is the trained model without its EMA; the run's outputs are its checkpoints
    let _ = training.launch(learner);
    let outcome = outcome.lock().map_err(|_| "the training thread panicked".to_string())?.take();
    outcome.unwrap_or_else(|| Err("burn-train ended the run before the YOLO26 strategy ran".into()))
}
