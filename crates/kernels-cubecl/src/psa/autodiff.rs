//! [`PsaBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step keeps `qkv` and
//! the forward's `out` and `lse` and calls the inner backend's `psa_attention_backward`. `lse` is returned
//! untracked; no double backward.
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::PsaBackend;
use crate::autodiff_util::{constant, differentiable_with};

impl<B: PsaBackend, C: CheckpointStrategy> PsaBackend for Autodiff<B, C> {
    fn psa_attention_forward(
        qkv: FloatTensor<Self>,
        num_heads: usize,
        key_dim: usize,
        scale: f32,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let (out, lse) = differentiable_with::<B, C, _, _, 1>(
            [qkv],
            |[x]| {
                let (out, lse) = B::psa_attention_forward(x.clone(), num_heads, key_dim, scale);
                (out.clone(), (x, out, lse.clone(), num_heads, key_dim, scale), lse)
            },
            // flash-attention backward: the softmax is recomputed from lse, d qkv holds dq, dk and dv
            |(x, out, lse, h, k, s), d_out, _| [Some(B::psa_attention_backward(x, out, lse, d_out, h, k, s))],
        );
        (out, constant(lse))
    }

    fn psa_attention_backward(
        qkv: FloatTensor<Self>,
        out: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        d_out: FloatTensor<Self>,
        num_heads: usize,
        key_dim: usize,
        scale: f32,
    ) -> FloatTensor<Self> {
        let (x, o, l, g) = (qkv.primitive, out.primitive, lse.primitive, d_out.primitive);
        constant(B::psa_attention_backward(x, o, l, g, num_heads, key_dim, scale))
    }
}
