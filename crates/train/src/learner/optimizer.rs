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

use super::model::YoloTrainModel;
use crate::optim::{accumulate_grads, Optimizer};

/// A shared handle on the run's optimizer (clones share the state).
#[derive(Clone)]
pub struct YoloOptimizer<B: Backend> {
    inner: Arc<Mutex<Optimizer<B>>>,
}

impl<B: Backend> YoloOptimizer<B> {
    pub fn new(opt: Optimizer<B>) -> Self {
        YoloOptimizer { inner: Arc::new(Mutex::new(opt)) }
    }

    /// The optimizer (groups, per-parameter state). A poisoned lock (a panic while stepping) still gives the
    /// state: it is only read or overwritten whole.
    pub fn inner(&self) -> MutexGuard<'_, Optimizer<B>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<AB: AutodiffBackend> burn::optim::Optimizer<YoloTrainModel<AB>, AB> for YoloOptimizer<AB::InnerBackend> {
    type Record = ();

    fn step(&mut self, _lr: LearningRate, module: YoloTrainModel<AB>, grads: GradientsParams) -> YoloTrainModel<AB> {
        let mut named = HashMap::new();
        accumulate_grads::<AB, _>(&module.model, grads, &mut named);
        let (model, _norm) = self.inner().step::<AB, _>(module.model, named);
        YoloTrainModel { model, loss: module.loss }
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
        let (model, _norm) = self.inner().step::<AB, _>(module.model, named);
        YoloTrainModel { model, loss: module.loss }
    }

    fn to_record(&self) -> Self::Record {}

    fn load_record(self, _record: Self::Record) -> Self {
        self
    }
}
