//! The backend extension trait of the Flash Attention op and its reference implementation.
//!
//! Shapes (all float tensors, any float dtype): `q: [BH, Nq, Dk]`, `k: [BH, Nk, Dk]`, `v: [BH, Nk, Dv]`,
//! `o: [BH, Nq, Dv]`, `lse: [BH, Nq]` (**always F32**, log-sum-exp of the scaled scores of each query row).
//!
//! Implementations:
//! - the default methods below (plain tensor ops, `N×N` materialised) — used by `Flex` and by any backend
//!   that does not override them;
//! - [`burn_cubecl::CubeBackend`] (any CubeCL runtime) launches the FA2 kernels (`super::cube`);
//! - [`burn_fusion::Fusion`] registers the op as a custom op in the fusion stream (`super::fusion`);
//! - [`burn::backend::Autodiff`] runs the forward through the inner backend and registers a backward
//!   step that calls [`FlashAttentionBackend::flash_attention_backward`] (`super::autodiff`).
use burn::tensor::{backend::Backend, ops::FloatTensor, DType, FloatDType, Tensor, TensorPrimitive};

/// Backend extension: Flash Attention 2 forward and backward on `[BH, N, D]` tensors.
pub trait FlashAttentionBackend: Backend {
    /// `o = softmax(scale · q kᵀ) v` and `lse_i = ln Σ_j exp(scale · q_i · k_j)` (F32).
    fn flash_attention_forward(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        scale: f32,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        reference_forward::<Self>(q, k, v, scale)
    }

    /// Gradients `(dq, dk, dv)` of `o` with respect to `q`, `k`, `v` given the upstream gradient `d_o`,
    /// using the forward's `o` and `lse` (the scores are recomputed, never stored).
    #[allow(clippy::too_many_arguments)]
    fn flash_attention_backward(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        o: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        d_o: FloatTensor<Self>,
        scale: f32,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        reference_backward::<Self>(q, k, v, o, lse, d_o, scale)
    }
}

impl FlashAttentionBackend for burn::backend::Flex {}

fn wrap<B: Backend>(t: FloatTensor<B>) -> Tensor<B, 3> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

fn unwrap<B: Backend, const D: usize>(t: Tensor<B, D>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// Reference forward from plain tensor ops (computed in F32, `o` cast back to `q`'s dtype).
/// Materialises the `[BH, Nq, Nk]` scores: for tests and for backends without a kernel.
pub fn reference_forward<B: Backend>(
    q: FloatTensor<B>,
    k: FloatTensor<B>,
    v: FloatTensor<B>,
    scale: f32,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let q = wrap::<B>(q);
    let dtype = q.dtype();
    let q = to_f32(q);
    let k = to_f32(wrap::<B>(k));
    let v = to_f32(wrap::<B>(v));

    let s = q.matmul(k.swap_dims(1, 2)) * scale; // [BH, Nq, Nk]
    let m = s.clone().max_dim(2); // [BH, Nq, 1]
    let p = (s - m.clone()).exp();
    let l = p.clone().sum_dim(2); // [BH, Nq, 1]
    let o = p.matmul(v) / l.clone();
    let lse = (m + l.log()).squeeze_dim::<2>(2);
    let lse = if lse.dtype() == DType::F32 { lse } else { lse.cast(FloatDType::F32) };
    let o = if o.dtype() == dtype { o } else { o.cast(dtype_of(dtype)) };
    (unwrap(o), unwrap(lse))
}

/// Reference backward from plain tensor ops (computed in F32, gradients cast back to `q`'s dtype).
#[allow(clippy::too_many_arguments)]
pub fn reference_backward<B: Backend>(
    q: FloatTensor<B>,
    k: FloatTensor<B>,
    v: FloatTensor<B>,
    o: FloatTensor<B>,
    lse: FloatTensor<B>,
    d_o: FloatTensor<B>,
    scale: f32,
) -> (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>) {
    let q = wrap::<B>(q);
    let dtype = q.dtype();
    let q = to_f32(q);
    let k = to_f32(wrap::<B>(k));
    let v = to_f32(wrap::<B>(v));
    let o = to_f32(wrap::<B>(o));
    let d_o = to_f32(wrap::<B>(d_o));
    let lse: Tensor<B, 2> = Tensor::from_primitive(TensorPrimitive::Float(lse));
    let lse = if lse.dtype() == q.dtype() { lse } else { lse.cast(dtype_of(q.dtype())) };
    let lse = lse.unsqueeze_dim::<3>(2); // [BH, Nq, 1]

    let s = q.clone().matmul(k.clone().swap_dims(1, 2)) * scale;
    let p = (s - lse).exp(); // [BH, Nq, Nk]
    let dv = p.clone().swap_dims(1, 2).matmul(d_o.clone());
    let dp = d_o.clone().matmul(v.swap_dims(1, 2));
    let delta = (d_o * o).sum_dim(2); // [BH, Nq, 1]
    let ds = p * (dp - delta);
    let dq = ds.clone().matmul(k) * scale;
    let dk = ds.swap_dims(1, 2).matmul(q) * scale;
    let back = |t: Tensor<B, 3>| {
        if t.dtype() == dtype {
            unwrap(t)
        } else {
            unwrap(t.cast(dtype_of(dtype)))
        }
    };
    (back(dq), back(dk), back(dv))
}

/// Half-precision inputs are upcast to F32 for the reference math; F32/F64 are kept.
fn to_f32<B: Backend>(t: Tensor<B, 3>) -> Tensor<B, 3> {
    match t.dtype() {
        DType::F16 | DType::BF16 => t.cast(FloatDType::F32),
        _ => t,
    }
}

fn dtype_of(dtype: DType) -> FloatDType {
    match dtype {
        DType::F64 => FloatDType::F64,
        DType::F16 => FloatDType::F16,
        DType::BF16 => FloatDType::BF16,
        _ => FloatDType::F32,
    }
}
