//! [`PsaBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream; `num_heads`,
//! `key_dim` and `scale` travel in the ops' closures.
use burn::tensor::{DType, Shape};
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::{psa_dims, PsaBackend};
use crate::fusion_util::{custom_op, Prim};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

impl<B: FusionBackend + PsaBackend> PsaBackend for Fusion<B> {
    fn psa_attention_forward(qkv: T<B>, num_heads: usize, key_dim: usize, scale: f32) -> (T<B>, T<B>) {
        let [b, c, h, w] = qkv.shape.dims::<4>();
        let d = psa_dims(&[b, c, h, w], num_heads, key_dim);
        let outs = [(Shape::new([b, 2 * d.c(), h, w]), qkv.dtype), (Shape::new([b * num_heads, h * w]), DType::F32)];
        let [out, lse] = custom_op::<B, 1, 2>("psa_attention_forward", [qkv], outs, move |[x]| {
            let (o, l) = B::psa_attention_forward(x.float(), num_heads, key_dim, scale);
            [Prim::Float(o), Prim::Float(l)]
        });
        (out, lse)
    }

    fn psa_attention_backward(
        qkv: T<B>,
        out: T<B>,
        lse: T<B>,
        d_out: T<B>,
        num_heads: usize,
        key_dim: usize,
        scale: f32,
    ) -> T<B> {
        psa_dims(&qkv.shape.dims::<4>(), num_heads, key_dim);
        let grad = (qkv.shape.clone(), qkv.dtype);
        let inputs = [qkv, out, lse, d_out];
        let [dqkv] = custom_op::<B, 4, 1>("psa_attention_backward", inputs, [grad], move |[x, o, l, g]| {
            [Prim::Float(B::psa_attention_backward(
                x.float(),
                o.float(),
                l.float(),
                g.float(),
                num_heads,
                key_dim,
                scale,
            ))]
        });
        dqkv
    }
}
