//! [`BceOneHotBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream.
use burn::tensor::Shape;
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::{check_shapes, BceOneHotBackend};
use crate::fusion_util::{custom_op, Prim};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

impl<B: FusionBackend + BceOneHotBackend> BceOneHotBackend for Fusion<B> {
    fn bce_onehot_sum(logits: T<B>, labels: T<B>, scores: T<B>) -> T<B> {
        check_shapes(logits.shape.as_slice(), labels.shape.as_slice(), scores.shape.as_slice());
        let out = (Shape::new([1]), logits.dtype);
        let [total] = custom_op::<B, 3, 1>("bce_onehot_sum", [logits, labels, scores], [out], |[x, l, s]| {
            [Prim::Float(B::bce_onehot_sum(x.float(), l.int(), s.float()))]
        });
        total
    }

    fn bce_onehot_backward(logits: T<B>, labels: T<B>, scores: T<B>, d_total: T<B>) -> T<B> {
        check_shapes(logits.shape.as_slice(), labels.shape.as_slice(), scores.shape.as_slice());
        let out = (logits.shape.clone(), logits.dtype);
        let inputs = [logits, labels, scores, d_total];
        let [d_logits] = custom_op::<B, 4, 1>("bce_onehot_backward", inputs, [out], |[x, l, s, g]| {
            [Prim::Float(B::bce_onehot_backward(x.float(), l.int(), s.float(), g.float()))]
        });
        d_logits
    }
}
