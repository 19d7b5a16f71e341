//! [`FlashAttentionBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step keeps
//! `q`, `k`, `v` and the forward's `o` and `lse`, and calls the inner backend's `flash_attention_backward` (the
//! FA2 backward kernels on CubeCL backends).
//!
//! `lse` is returned as an untracked tensor (no gradient flows through it), and `flash_attention_backward` on
//! `Autodiff` is not itself differentiable (no double backward).
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::FlashAttentionBackend;
use crate::autodiff_util::{constant, differentiable_with};

impl<B: FlashAttentionBackend, C: CheckpointStrategy> FlashAttentionBackend for Autodiff<B, C> {
    fn flash_attention_forward(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        scale: f32,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let (o, lse) = differentiable_with::<B, C, _, _, 3>(
            [q, k, v],
            |[q, k, v]| {
                let (o, lse) = B::flash_attention_forward(q.clone(), k.clone(), v.clone(), scale);
                (o.clone(), (q, k, v, o, lse.clone(), scale), lse)
            },
            // FA2 backward: P is recomputed from lse; one call gives all three gradients
            |(q, k, v, o, lse, scale), d_o, _| {
                let (dq, dk, dv) = B::flash_attention_backward(q, k, v, o, lse, d_o, scale);
                [Some(dq), Some(dk), Some(dv)]
            },
        );
        (o, constant(lse))
    }

    fn flash_attention_backward(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        o: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        d_o: FloatTensor<Self>,
        scale: f32,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (q, k, v, o, lse, d_o) = (q.primitive, k.primitive, v.primitive, o.primitive, lse.primitive, d_o.primitive);
        let (dq, dk, dv) = B::flash_attention_backward(q, k, v, o, lse, d_o, scale);
        (constant(dq), constant(dk), constant(dv))
    }
}
