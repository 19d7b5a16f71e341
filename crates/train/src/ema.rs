//! ultralytics `ModelEMA` (`utils/torch_utils.py`): an exponential moving average of every float tensor of the
//! model (parameters and BatchNorm running statistics), `decay·(1 − exp(−updates/2000))` with decay 0.9999,
//! updated after every optimizer step. Validation and the saved weights use it.

use burn::prelude::*;
use yolo26_model::Yolo26;

use crate::params::{map_named, named_tensors};
use crate::schedule::ema_decay;

/// The averaged model (on the inner, non-autodiff backend) and the number of updates so far.
#[derive(Debug)]
pub struct ModelEma<B: Backend> {
    pub model: Yolo26<B>,
    pub updates: u64,
}

impl<B: Backend> ModelEma<B> {
    /// Starts from `model` (ultralytics deep-copies the model; pass a copy that owns its running statistics, e.g.
    /// `AutodiffModule::valid()` of the training model).
    pub fn new(model: Yolo26<B>, updates: u64) -> Self {
        ModelEma { model, updates }
    }

    /// One update from the current training weights (`model.valid()`): `ema ← lerp(ema, model, 1 − d)`
    /// (`torch._foreach_lerp_`), `d` = [`ema_decay`]`(updates)` after incrementing `updates`.
    pub fn update(&mut self, model: &Yolo26<B>) {
        self.updates += 1;
        let w = 1.0 - ema_decay(self.updates);
        let mut src = named_tensors(model);
        let ema = self.model.clone();
        self.model = map_named(ema, |info, e| match src.remove(&info.name) {
            Some(m) => e.clone() + (m - e).mul_scalar(w),
            None => e,
        });
    }
}
