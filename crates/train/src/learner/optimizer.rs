//! ultralytics' optimizers ([`crate::optim::Optimizer`]: SGD, AdamW, MuSGD with their parameter groups and
//! gradient clipping) as burn's [`burn::optim::Optimizer`], so burn-train's `Learner::optimizer_step` applies
//! them.
//!
//! The learning-rate argument burn passes is not used: every group's lr and momentum are set by the learning
//! strategy from the ultralytics schedule (warmup per iteration, `LambdaLR` per epoch), through the shared
//! handle [`YoloOptimizer::inner`]. Optimizer state is saved with the training checkpoint
//! (`weights/last.state.safetensors`), not as a burn record, hence `Record = ()`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use burn::optim::{GradientsParams, LearningRate, MultiGradientsParams};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;

use yolo26_model::Yolo26;

use super::model::YoloTrainModel;
use crate::amp::SharedScaler;
use crate::optim::{accumulate_grads, Optimizer};

/// A shared handle on the run's optimizer (clones share the state), and the run's loss scaler when it trains in
/// mixed precision (the gradients then come from a scaled loss: [`crate::amp`]).
#[derive(Clone)]
pub struct YoloOptimizer<B: Backend> {
    inner: Arc<Mutex<Optimizer<B>>>,
    scaler: Option<SharedScaler>,
}

impl<B: kernels_cubecl::nhwc::NhwcBackend> YoloOptimizer<B> {
    pub fn new(opt: Optimizer<B>) -> Self {
        YoloOptimizer { inner: Arc::new(Mutex::new(opt)), scaler: None }
    }

    /// With the loss scaler of a mixed-precision run: each step unscales, skips on an infinite gradient and
    /// updates the scale (torch `scaler.step(opt)`, `scaler.update()`).
    pub fn with_scaler(mut self, scaler: Option<SharedScaler>) -> Self {
        self.scaler = scaler;
        self
    }

    /// One optimizer step with `named` gradients (scaled ones when the run has a scaler).
    fn apply<AB: AutodiffBackend<InnerBackend = B>>(
        &self,
        model: Yolo26<AB>,
        named: HashMap<String, Tensor<B, 1>>,
    ) -> Yolo26<AB> {
        let mut guard = self.scaler.as_ref().map(|s| s.lock());
        self.inner().step_amp::<AB, _>(model, named, guard.as_deref_mut())
    }

    /// The optimizer (groups, per-parameter state). A poisoned lock (a panic while stepping) still gives the
    /// state: it is only read or overwritten whole.
    pub fn inner(&self) -> MutexGuard<'_, Optimizer<B>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<AB: AutodiffBackend> burn::optim::Optimizer<YoloTrainModel<AB>, AB> for YoloOptimizer<AB::InnerBackend>
where
    AB::InnerBackend: kernels_cubecl::nhwc::NhwcBackend,
{
    type Record = ();

    fn step(&mut self, _lr: LearningRate, module: YoloTrainModel<AB>, grads: GradientsParams) -> YoloTrainModel<AB> {
        let mut named = HashMap::new();
        accumulate_grads::<AB, _>(&module.model, grads, &mut named);
        YoloTrainModel { model: self.apply(module.model, named), loss: module.loss }
    }

    /// Gradients of several devices are averaged on the model's device (PyTorch DDP's all-reduce mean), then
    /// applied as one step.
    fn step_multi(
        &mut self,
        _lr: LearningRate,
        module: YoloTrainModel<AB>,
        grads: MultiGradientsParams,
    ) -> YoloTrainModel<AB> {
        let device = module.model.devices()[0].clone();
        let parts = grads.grads.len().max(1) as f64;
        let mut named = HashMap::new();
        for (g, _) in grads.grads {
            let g = g.to_device::<AB, _>(&device, &module.model);
            accumulate_grads::<AB, _>(&module.model, g, &mut named);
        }
        let named = named.into_iter().map(|(k, v)| (k, v.div_scalar(parts))).collect();
        YoloTrainModel { model: self.apply(module.model, named), loss: module.loss }
    }

    fn to_record(&self) -> Self::Record {}

    fn load_record(self, _record: Self::Record) -> Self {
        self
    }
}
