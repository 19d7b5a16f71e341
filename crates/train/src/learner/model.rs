//! The model burn-train drives: YOLO26 plus what its training step needs ([`LossControl`]), with burn-train's
//! [`TrainStep`] (training forward, `E2ELoss`, backward) and [`InferenceStep`] (validation of a whole split).
//!
//! ultralytics equivalent: `DetectionModel.loss(batch)` inside `BaseTrainer._do_train` (train step) and
//! `DetectionValidator.__call__(model=ema)` (inference step).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use burn::module::AutodiffModule;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::DType;
use burn::train::{InferenceStep, ItemLazy, TrainOutput, TrainStep};
use yolo26_data::{Batch, Dataset};
use yolo26_model::{Yolo26, YoloBackend};

use super::profile::Phase;
use crate::amp::SharedScaler;
use crate::backend::TrainBackend;
use crate::loss::{E2ELoss, LossGains};
use crate::step::{batch_targets, images_tensor, train_forward};
use crate::val::{validate, ValConfig, ValReport};

/// The loss settings of a run and the current epoch, shared between the learning strategy (which sets the epoch)
/// and every clone of the model (whose train step builds `E2ELoss` with that epoch's ProgLoss weights).
/// With a loss scaler, the run trains in mixed precision ([`crate::amp`]): f16 activations, the loss multiplied
/// by the scaler's scale before the backward.
#[derive(Clone, Debug)]
pub struct LossControl {
    pub num_classes: usize,
    pub epochs: usize,
    pub gains: LossGains,
    epoch: Arc<AtomicUsize>,
    /// `Some` in mixed precision (`yolo26 train --amp`), shared with the optimizer.
    pub scaler: Option<SharedScaler>,
}

impl LossControl {
    pub fn new(num_classes: usize, epochs: usize, gains: LossGains) -> Self {
        LossControl { num_classes, epochs, gains, epoch: Arc::new(AtomicUsize::new(0)), scaler: None }
    }

    /// Mixed precision with this scaler (`None`: f32).
    pub fn with_scaler(mut self, scaler: Option<SharedScaler>) -> Self {
        self.scaler = scaler;
        self
    }

    /// Sets the 0-based epoch whose ProgLoss weights the next train steps use.
    pub fn set_epoch(&self, epoch: usize) {
        self.epoch.store(epoch, Ordering::Relaxed);
    }

    /// `E2ELoss` of the current epoch.
    pub fn loss(&self) -> E2ELoss {
        let mut loss = E2ELoss::new(self.num_classes, self.epochs, self.gains);
        loss.set_epoch(self.epoch.load(Ordering::Relaxed));
        loss
    }
}

/// YOLO26 as burn-train's training model. `model` keeps ultralytics' parameter names (the wrapper adds no path:
/// the optimizer and checkpoints walk `model` itself).
#[derive(Module, Debug)]
pub struct YoloTrainModel<B: Backend> {
    pub model: Yolo26<B>,
    #[module(skip)]
    pub loss: LossControl,
}

/// What one train step reports: the one-to-one branch's loss items per image (ultralytics' logged
/// `loss_items`: box, cls, l1), the batch's images and objects.
#[derive(Clone, Debug)]
pub struct TrainItem {
    pub items: [f64; 3],
    pub images: usize,
    pub instances: usize,
}

impl TrainItem {
    /// Whether every loss item is finite (a NaN or infinite loss stops the run).
    pub fn is_finite(&self) -> bool {
        self.items.iter().all(|v| v.is_finite())
    }

    /// The items of several parts of one batch (the devices' shards) as the batch's: per-image loss items
    /// averaged with the parts' image counts as weights, images and objects summed.
    pub fn merge(parts: &[TrainItem]) -> TrainItem {
        let images: usize = parts.iter().map(|p| p.images).sum();
        let mut items = [0f64; 3];
        for p in parts {
            for (k, v) in p.items.iter().enumerate() {
                items[k] += v * p.images as f64 / images.max(1) as f64;
            }
        }
        TrainItem { items, images, instances: parts.iter().map(|p| p.instances).sum() }
    }
}

impl ItemLazy for TrainItem {
    type ItemSync = TrainItem;
    fn sync(self) -> TrainItem {
        self
    }
}

impl<B: AutodiffBackend + TrainBackend> TrainStep for YoloTrainModel<B> {
    type Input = Batch;
    type Output = TrainItem;

    /// ultralytics `loss, loss_items = model(batch)`, `loss.backward()`: both heads in training mode (BatchNorm on
    /// batch statistics), the one-to-one head on detached features, `E2ELoss` with this epoch's weights.
    fn step(&self, batch: Batch) -> TrainOutput<TrainItem> {
        self.step_marked(batch, |_| {})
    }
}

impl<B: AutodiffBackend + TrainBackend> YoloTrainModel<B> {
    /// [`TrainStep::step`] with `mark` called after each of its parts ([`Phase::Upload`], [`Phase::Forward`],
    /// [`Phase::Backward`]): `yolo26 train --profile` passes [`StepProfile::mark`](super::profile::StepProfile::mark).
    pub fn step_marked(&self, batch: Batch, mut mark: impl FnMut(Phase)) -> TrainOutput<TrainItem> {
        let device = self.model.devices()[0].clone();
        // (by reference: the batch's buffer goes back to the loader when the batch is dropped)
        let images = images_tensor::<B>(&batch.images, batch.shape, &device);
        // mixed precision: f16 activations from the input on (the parameters are cast where they are used)
        let images = if self.loss.scaler.is_some() { images.cast(DType::F16) } else { images };
        let gt = batch_targets::<B>(&batch, &device);
        mark(Phase::Upload);
        let out = train_forward(&self.model, &self.loss.loss(), images, &gt);
        // logged items: the one-to-one branch's per image (ultralytics `E2ELoss` returns `loss_one2one[1]`, the
        // detached items before the batch-size factor)
        let items = out.one2one.items.clone().div_scalar(batch.len() as f64);
        mark(Phase::Forward);
        // the backward is queued before the items are read back, so the host records it while the device still
        // runs the forward (reading first made the host wait for the forward, then the device for the host)
        let total = match &self.loss.scaler {
            Some(scaler) => out.total.mul_scalar(scaler.scale()),
            None => out.total,
        };
        let grads = total.backward();
        let items = items.into_data().convert::<f64>().to_vec::<f64>().unwrap_or_default();
        let items = [0, 1, 2].map(|i| items.get(i).copied().unwrap_or(f64::NAN));
        mark(Phase::Backward);
        TrainOutput::new(self, grads, TrainItem { items, images: batch.len(), instances: batch.targets.len() })
    }
}

/// One validation run: a split and the validator's settings (the valid "batch" of burn-train is the whole split,
/// because mAP is a statistic of the split, not a mean over batches).
#[derive(Clone, Debug)]
pub struct ValJob {
    pub dataset: Arc<Dataset>,
    pub cfg: ValConfig,
}

/// The report of a validation (or why it failed).
#[derive(Clone)]
pub struct ValOutput {
    pub report: Result<Arc<ValReport>, String>,
}

impl core::fmt::Debug for ValOutput {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.report {
            Ok(r) => write!(f, "ValOutput({:?})", r.results()),
            Err(e) => write!(f, "ValOutput(error: {e})"),
        }
    }
}

impl ItemLazy for ValOutput {
    type ItemSync = ValOutput;
    fn sync(self) -> ValOutput {
        self
    }
}

impl<B: YoloBackend> InferenceStep for YoloTrainModel<B> {
    type Input = ValJob;
    type Output = ValOutput;

    /// ultralytics `DetectionValidator(model)`: the split through [`validate`] (BatchNorm folded for the run).
    fn step(&self, job: ValJob) -> ValOutput {
        let device = self.model.devices()[0].clone();
        let report = validate(self.model.clone(), job.dataset, &job.cfg, &device, |_, _| {})
            .map(Arc::new)
            .map_err(|e| e.to_string());
        ValOutput { report }
    }
}

/// The inference-side model of a training model (EMA validation wraps the EMA the same way).
pub fn wrap<B: Backend>(model: Yolo26<B>, loss: LossControl) -> YoloTrainModel<B> {
    YoloTrainModel { model, loss }
}

/// The training model's inner (non-autodiff) YOLO26.
pub fn inner<B: AutodiffBackend>(m: &YoloTrainModel<B>) -> Yolo26<B::InnerBackend> {
    m.model.valid()
}
