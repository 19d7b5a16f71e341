//! ultralytics `ModelEMA` (`utils/torch_utils.py`): an exponential moving average of every float tensor of the
//! model (parameters and BatchNorm running statistics), `decay·(1 − exp(−updates/2000))` with decay 0.9999,
//! updated after every optimizer step. Validation and the saved weights use it.
//!
//! The average is kept as one flat tensor (every float tensor of the model, flattened, in module order) and
//! updated with one `lerp` per step, as `torch._foreach_lerp_` does over the tensor list: per element the same
//! arithmetic as a per-tensor update, without ~3 tensor operations for each of the ~700 tensors. The module is
//! rebuilt from it on demand ([`ModelEma::model`]: validation and checkpoints, once per epoch).

use burn::prelude::*;
use yolo26_model::Yolo26;

use crate::params::{map_named, visit_named};
use crate::schedule::ema_decay;

/// A flat tensor and the names and lengths of the tensors it holds, in order.
type Flat<B> = (Tensor<B, 1>, Vec<(String, usize)>);

/// The averaged model (on the inner, non-autodiff backend) and the number of updates so far.
#[derive(Debug)]
pub struct ModelEma<B: Backend> {
    /// The module the average is written back into (its structure and, until the first update, its values).
    template: Yolo26<B>,
    /// The average, flat, and the tensors' names and lengths in module order (`None` until the first update).
    flat: Option<Flat<B>>,
    pub updates: u64,
}

/// Every float tensor of `model` as one flat tensor, and the names and lengths in order.
fn flatten<B: Backend>(model: &Yolo26<B>) -> Flat<B> {
    let (mut parts, mut layout) = (Vec::<Tensor<B, 1>>::new(), Vec::new());
    visit_named(model, |info, t| {
        layout.push((info.name.clone(), info.numel()));
        // (after a data-parallel step a BatchNorm running statistic may still be on the device of the worker that
        // read it last: Burn's `RunningState` moves its shared value when a worker forks the model)
        let t = match parts.first() {
            Some(p) => t.to_device(&p.device()),
            None => t,
        };
        parts.push(t);
    });
    (Tensor::cat(parts, 0), layout)
}

impl<B: Backend> ModelEma<B> {
    /// Starts from `model` (ultralytics deep-copies the model; pass a copy that owns its running statistics, e.g.
    /// `AutodiffModule::valid()` of the training model).
    pub fn new(model: Yolo26<B>, updates: u64) -> Self {
        ModelEma { template: model, flat: None, updates }
    }

    /// One update from the current training weights (`model.valid()`): `ema ← lerp(ema, model, 1 − d)`
    /// (`torch._foreach_lerp_`), `d` = [`ema_decay`]`(updates)` after incrementing `updates`.
    pub fn update(&mut self, model: &Yolo26<B>) {
        self.updates += 1;
        let w = 1.0 - ema_decay(self.updates);
        let (m, layout) = flatten(model);
        let e = match self.flat.take() {
            Some((e, l)) if l == layout => e,
            // first update (or a model with other tensors: start from the current average of those)
            _ => flatten(&self.template).0,
        };
        self.flat = Some((e.clone() + (m - e).mul_scalar(w), layout));
    }

    /// The averaged model (a module whose tensors are slices of the flat average).
    pub fn model(&self) -> Yolo26<B> {
        let Some((flat, layout)) = &self.flat else {
            return self.template.clone();
        };
        let mut off = 0;
        let mut i = 0;
        map_named(self.template.clone(), |info, t| {
            let (name, len) = &layout[i];
            assert!(
                name == &info.name && *len == t.dims()[0],
                "ModelEma: tensor {i} is {} now, {name} before",
                info.name
            );
            i += 1;
            off += len;
            flat.clone().slice(off - len..off)
        })
    }
}
