//! The reference implementation of the PSA attention op in Burn tensor ops (the default bodies of the backend trait).
//!
//! Shapes (float tensors, any float dtype; `C3 = 2·kd + hd`, `C = nh·hd`, `N = H·W`):
//! - `qkv: [B, nh·C3, H, W]` — the `Attention.qkv` conv output; per head the channels are
//!   `[q (kd) | k (kd) | v (hd)]` (ultralytics `qkv.view(B, nh, C3, N).split([kd, kd, hd], dim=2)`);
//! - `out: [B, 2·C, H, W]` — channels `[0, C)`: the attention result in ultralytics' layout
//!   (`(v @ attn.transpose(-2, -1)).view(B, C, H, W)`), channels `[C, 2C)`: `v.reshape(B, C, H, W)`
//!   (the input of `pe`). One tensor so that the op has a single differentiable output; the public
//!   [`super::psa_attention`] splits it;
//! - `lse: [B·nh, N]` (**F32**), the Flash Attention log-sum-exp, kept for the backward.
//!
//! Implementations: the default methods (tensor rearrangements around
//! [`FlashAttentionBackend::flash_attention_forward`]/`_backward`, so `Flex` gets the FA reference and a
//! backend with FA kernels but no PSA kernels still gets FA kernels); [`burn_cubecl::CubeBackend`]
//! (`super::cube`: PSA rearrangement kernels around the FA2 kernels); [`burn_fusion::Fusion`] (custom op);
//! [`burn::backend::Autodiff`] (backward step).
use burn::tensor::{backend::Backend, ops::FloatTensor, Tensor};

use crate::attention::FlashAttentionBackend;

use super::kernels::PsaDims;
use crate::tensor_util::float;

/// Checks the `qkv` shape `[B, nh·(2kd + hd), H, W]` (panics on a mismatch) and returns the geometry.
pub fn psa_dims(shape: &[usize], num_heads: usize, key_dim: usize) -> PsaDims {
    assert!(
        shape.len() == 4 && num_heads > 0 && key_dim > 0 && shape[1].is_multiple_of(num_heads),
        "psa attention: expected qkv [B, nh·(2·kd + hd), H, W] with nh = {num_heads}, kd = {key_dim}, got {shape:?}"
    );
    let c3 = shape[1] / num_heads;
    assert!(
        c3 > 2 * key_dim,
        "psa attention: qkv has {c3} channels per head, not more than 2·kd = {} (no room for v)",
        2 * key_dim
    );
    PsaDims { batch: shape[0], heads: num_heads, key_dim, head_dim: c3 - 2 * key_dim, tokens: shape[2] * shape[3] }
}

fn unwrap<B: Backend, const D: usize>(t: Tensor<B, D>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// `(q [BH, N, kd], k [BH, N, kd], v [BH, hd, N])` views of `qkv` (ultralytics' split; `v` not transposed).
fn split_qkv<B: Backend>(qkv: Tensor<B, 4>, d: PsaDims) -> (Tensor<B, 3>, Tensor<B, 3>, Tensor<B, 3>) {
    let x = qkv.reshape([d.batch * d.heads, d.c3(), d.tokens]);
    let q = x.clone().narrow(1, 0, d.key_dim).swap_dims(1, 2);
    let k = x.clone().narrow(1, d.key_dim, d.key_dim).swap_dims(1, 2);
    let v = x.narrow(1, 2 * d.key_dim, d.head_dim);
    (q, k, v)
}

/// Channels `[c_off, c_off + C)` of an NCHW tensor as `[BH, N, hd]`.
fn heads_of<B: Backend>(t: Tensor<B, 4>, d: PsaDims, c_off: usize) -> Tensor<B, 3> {
    t.narrow(1, c_off, d.c()).reshape([d.batch * d.heads, d.head_dim, d.tokens]).swap_dims(1, 2)
}

/// Reference forward: tensor-op rearrangements around `B::flash_attention_forward`.
pub fn reference_forward<B: FlashAttentionBackend>(
    qkv: FloatTensor<B>,
    num_heads: usize,
    key_dim: usize,
    scale: f32,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let qkv = float::<B, 4>(qkv);
    let [b, _, h, w] = qkv.dims();
    let d = psa_dims(&qkv.dims(), num_heads, key_dim);
    let (q, k, v) = split_qkv(qkv, d);
    let (o, lse) = B::flash_attention_forward(unwrap(q), unwrap(k), unwrap(v.clone().swap_dims(1, 2)), scale);
    let attn = float::<B, 3>(o).swap_dims(1, 2).reshape([b, d.c(), h, w]);
    let out = Tensor::cat(vec![attn, v.reshape([b, d.c(), h, w])], 1);
    (unwrap(out), lse)
}

/// Reference backward: tensor-op rearrangements around `B::flash_attention_backward`.
#[allow(clippy::too_many_arguments)]
pub fn reference_backward<B: FlashAttentionBackend>(
    qkv: FloatTensor<B>,
    out: FloatTensor<B>,
    lse: FloatTensor<B>,
    d_out: FloatTensor<B>,
    num_heads: usize,
    key_dim: usize,
    scale: f32,
) -> FloatTensor<B> {
    let qkv = float::<B, 4>(qkv);
    let shape = qkv.dims();
    let d = psa_dims(&shape, num_heads, key_dim);
    let (q, k, v) = split_qkv(qkv, d);
    let out = float::<B, 4>(out);
    let d_out = float::<B, 4>(d_out);
    let o = heads_of(out, d, 0);
    let d_o = heads_of(d_out.clone(), d, 0);
    let (dq, dk, dv) = B::flash_attention_backward(
        unwrap(q),
        unwrap(k),
        unwrap(v.swap_dims(1, 2)),
        unwrap(o),
        lse,
        unwrap(d_o),
        scale,
    );
    let bh = d.batch * d.heads;
    let d_vn = d_out.narrow(1, d.c(), d.c()).reshape([bh, d.head_dim, d.tokens]);
    let dv = float::<B, 3>(dv).swap_dims(1, 2) + d_vn;
    let dqkv = Tensor::cat(vec![float::<B, 3>(dq).swap_dims(1, 2), float::<B, 3>(dk).swap_dims(1, 2), dv], 1);
    unwrap(dqkv.reshape(shape))
}
