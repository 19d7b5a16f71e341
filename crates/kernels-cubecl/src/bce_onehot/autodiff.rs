//! [`BceOneHotBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step keeps the
//! logits, the labels and the scores (constants: assigner outputs) and calls the inner backward. Only the
//! logits are a parent.
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::{FloatTensor, IntTensor};

use super::BceOneHotBackend;
use crate::autodiff_util::{constant, differentiable};

impl<B: BceOneHotBackend, C: CheckpointStrategy> BceOneHotBackend for Autodiff<B, C> {
    fn bce_onehot_sum(
        logits: FloatTensor<Self>,
        labels: IntTensor<Self>,
        scores: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let s = scores.primitive;
        differentiable::<B, C, _, 1>(
            [logits],
            |[x]| (B::bce_onehot_sum(x.clone(), labels.clone(), s.clone()), (x, labels, s)),
            // d logits = d_total · (σ(x) − onehot(label)·score), elementwise
            |(x, labels, s), d_total, _| [Some(B::bce_onehot_backward(x, labels, s, d_total))],
        )
    }

    fn bce_onehot_backward(
        logits: FloatTensor<Self>,
        labels: IntTensor<Self>,
        scores: FloatTensor<Self>,
        d_total: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        constant(B::bce_onehot_backward(logits.primitive, labels, scores.primitive, d_total.primitive))
    }
}
