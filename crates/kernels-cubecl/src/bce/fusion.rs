//! [`BceWithLogitsBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream.
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::cube::check_shapes;
use super::BceWithLogitsBackend;
use crate::fusion_util::{custom_op, Prim};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

impl<B: FusionBackend + BceWithLogitsBackend> BceWithLogitsBackend for Fusion<B> {
    fn bce_with_logits_forward(logits: T<B>, targets: T<B>) -> T<B> {
        check_shapes(logits.shape.as_slice(), targets.shape.as_slice());
        let out = (logits.shape.clone(), logits.dtype);
        let [loss] = custom_op::<B, 2, 1>("bce_with_logits_forward", [logits, targets], [out], |[x, t]| {
            [Prim::Float(B::bce_with_logits_forward(x.float(), t.float()))]
        });
        loss
    }

    fn bce_with_logits_backward(logits: T<B>, targets: T<B>, d_loss: T<B>) -> T<B> {
        check_shapes(logits.shape.as_slice(), targets.shape.as_slice());
        let out = (logits.shape.clone(), logits.dtype);
        let [d_logits] =
            custom_op::<B, 3, 1>("bce_with_logits_backward", [logits, targets, d_loss], [out], |[x, t, g]| {
                [Prim::Float(B::bce_with_logits_backward(x.float(), t.float(), g.float()))]
            });
        d_logits
    }
}
