//! [`BceWithLogitsBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step keeps
//! the logits and the targets and calls the inner `bce_with_logits_backward`. Only the logits are a parent:
//! **no gradient flows to the targets** (assigner outputs, constants of the loss).
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::BceWithLogitsBackend;
use crate::autodiff_util::differentiable;

impl<B: BceWithLogitsBackend, C: CheckpointStrategy> BceWithLogitsBackend for Autodiff<B, C> {
    fn bce_with_logits_forward(logits: FloatTensor<Self>, targets: FloatTensor<Self>) -> FloatTensor<Self> {
        let t = targets.primitive;
        differentiable::<B, C, _, 1>(
            [logits],
            |[x]| (B::bce_with_logits_forward(x.clone(), t.clone()), (x, t)),
            // d logits = d_loss · (σ(x) − t)
            |(x, t), d_loss, _| [Some(B::bce_with_logits_backward(x, t, d_loss))],
        )
    }

    fn bce_with_logits_backward(
        logits: FloatTensor<Self>,
        targets: FloatTensor<Self>,
        d_loss: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        // a gradient of a gradient is not needed by any loss here: the backward is a value
        FloatTensor::<Self>::new(B::bce_with_logits_backward(logits.primitive, targets.primitive, d_loss.primitive))
    }
}
