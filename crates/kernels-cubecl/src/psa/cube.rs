//! [`PsaBackend`] for [`CubeBackend`]: the PSA rearrangement kernels around the FA2 kernels, one generic
//! impl for every CubeCL runtime.
//!
//! Forward: `PsaPackQkv` → FA2 forward (**one** call with `Dk = kd`, `Dv = hd`: our FA2 supports
//! `Dk ≠ Dv`, so V is not split) → `PsaMergeAttn` and `PsaExtractV` into the two channel halves of `out`.
//! Backward: `PsaPackQkv` again (q, k, v are not kept), `PsaSplitAttn` for `O` and `dO`, the FA2 backward
//! kernels (Δ, dK/dV, dQ), then `PsaUnpackQkv` (which also adds the gradient of the `v` output).
use burn::tensor::{DType, Shape};
use burn_cubecl::{
    kernel::into_contiguous, ops::numeric::empty_device_contiguous_dtype, tensor::CubeTensor, BoolElement, CubeBackend,
    CubeRuntime, FloatElement, IntElement,
};

use super::kernels::{
    launch_extract_v, launch_merge_attn, launch_pack_qkv, launch_split_attn, launch_unpack_qkv, PsaDims,
};
use super::{psa_dims, reference_backward, reference_forward, PsaBackend};
use crate::attention::{cube as fa, kernels::MAX_HEAD_DIM};

impl<R, F, I, BT> PsaBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn psa_attention_forward(
        qkv: CubeTensor<R>,
        num_heads: usize,
        key_dim: usize,
        scale: f32,
    ) -> (CubeTensor<R>, CubeTensor<R>) {
        let d = psa_dims(&qkv.meta.shape().dims::<4>(), num_heads, key_dim);
        if !kernel_supports(d) {
            return reference_forward::<Self>(qkv, num_heads, key_dim, scale);
        }
        forward(qkv, d, scale)
    }

    fn psa_attention_backward(
        qkv: CubeTensor<R>,
        out: CubeTensor<R>,
        lse: CubeTensor<R>,
        d_out: CubeTensor<R>,
        num_heads: usize,
        key_dim: usize,
        scale: f32,
    ) -> CubeTensor<R> {
        let d = psa_dims(&qkv.meta.shape().dims::<4>(), num_heads, key_dim);
        if !kernel_supports(d) {
            return reference_backward::<Self>(qkv, out, lse, d_out, num_heads, key_dim, scale);
        }
        backward(qkv, out, lse, d_out, d, scale)
    }
}

/// The FA2 kernels take head dims up to [`MAX_HEAD_DIM`]; 32-bit indexing.
fn kernel_supports(d: PsaDims) -> bool {
    let elems = d.batch * d.heads * d.c3().max(2 * d.head_dim) * d.tokens;
    d.key_dim <= MAX_HEAD_DIM && d.head_dim <= MAX_HEAD_DIM && d.tokens > 0 && elems < u32::MAX as usize
}

fn empty<R: CubeRuntime>(like: &CubeTensor<R>, shape: Shape, dtype: DType) -> CubeTensor<R> {
    empty_device_contiguous_dtype(like.client.clone(), like.device.clone(), shape, dtype)
}

/// `PsaPackQkv` into fresh `q, k [BH, N, kd]`, `v [BH, N, hd]`.
fn pack<R: CubeRuntime>(qkv: &CubeTensor<R>, d: PsaDims) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
    let bh = d.batch * d.heads;
    let q = empty(qkv, Shape::new([bh, d.tokens, d.key_dim]), qkv.dtype);
    let k = empty(qkv, Shape::new([bh, d.tokens, d.key_dim]), qkv.dtype);
    let v = empty(qkv, Shape::new([bh, d.tokens, d.head_dim]), qkv.dtype);
    launch_pack_qkv(qkv, &q, &k, &v, d);
    (q, k, v)
}

/// `PsaSplitAttn` of channels `[0, C)` into a fresh `[BH, N, hd]`.
fn split<R: CubeRuntime>(src: &CubeTensor<R>, d: PsaDims) -> CubeTensor<R> {
    let o = empty(src, Shape::new([d.batch * d.heads, d.tokens, d.head_dim]), src.dtype);
    launch_split_attn(src, &o, d, 0);
    o
}

/// Kernel forward: `(out [B, 2C, H, W], lse [BH, N] F32)`.
pub fn forward<R: CubeRuntime>(qkv: CubeTensor<R>, d: PsaDims, scale: f32) -> (CubeTensor<R>, CubeTensor<R>) {
    let qkv = into_contiguous(qkv);
    let [b, _, h, w] = qkv.meta.shape().dims::<4>();
    let (q, k, v) = pack(&qkv, d);
    let (o, lse) = fa::forward(q, k, v, scale);
    let out = empty(&qkv, Shape::new([b, 2 * d.c(), h, w]), qkv.dtype);
    launch_merge_attn(&o, &out, d, 0);
    launch_extract_v(&qkv, &out, d, d.c());
    (out, lse)
}

/// Kernel backward: `d qkv` (shape and dtype of `qkv`).
pub fn backward<R: CubeRuntime>(
    qkv: CubeTensor<R>,
    out: CubeTensor<R>,
    lse: CubeTensor<R>,
    d_out: CubeTensor<R>,
    d: PsaDims,
    scale: f32,
) -> CubeTensor<R> {
    let qkv = into_contiguous(qkv);
    let dtype = qkv.dtype;
    // Casts may return pitched tensors on CUDA: `into_contiguous` after them.
    let out = into_contiguous(if out.dtype == dtype { out } else { burn_cubecl::kernel::cast(out, dtype) });
    let d_out = into_contiguous(if d_out.dtype == dtype { d_out } else { burn_cubecl::kernel::cast(d_out, dtype) });
    let (q, k, v) = pack(&qkv, d);
    let o = split(&out, d);
    let d_o = split(&d_out, d);
    let (dq, dk, dv) = fa::backward(q, k, v, o, lse, d_o, scale);
    let dqkv = empty(&qkv, qkv.meta.shape().clone(), dtype);
    launch_unpack_qkv(&dq, &dk, &dv, &d_out, &dqkv, d, d.c());
    dqkv
}

#[cfg(test)]
/// Launch-level entry points with caller-provided outputs (tests poison them with NaN).
pub mod raw {
    pub use super::super::kernels::{
        launch_extract_v, launch_merge_attn, launch_pack_qkv, launch_split_attn, launch_unpack_qkv,
    };
}
