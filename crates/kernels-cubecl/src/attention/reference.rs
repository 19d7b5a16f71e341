//! The reference implementation of the Flash Attention op in Burn tensor ops (the default bodies of the backend trait).
//!
//! Shapes (all float tensors, any float dtype): `q: [BH, Nq, Dk]`, `k: [BH, Nk, Dk]`, `v: [BH, Nk, Dv]`,
//! `o: [BH, Nq, Dv]`, `lse: [BH, Nq]` (**always F32**, log-sum-exp of the scaled scores of each query row).
use burn::tensor::{backend::Backend, ops::FloatTensor, DType, Tensor, TensorPrimitive};

use crate::tensor_util::{compute_dtype, float};

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
    let q = float::<B, 3>(q);
    let dtype = q.dtype();
    let q = to_f32(q);
    let k = to_f32(float::<B, 3>(k));
    let v = to_f32(float::<B, 3>(v));

    let s = q.matmul(k.swap_dims(1, 2)) * scale; // [BH, Nq, Nk]
    let m = s.clone().max_dim(2); // [BH, Nq, 1]
    let p = (s - m.clone()).exp();
    let l = p.clone().sum_dim(2); // [BH, Nq, 1]
    let o = p.matmul(v) / l.clone();
    let lse = (m + l.log()).squeeze_dim::<2>(2);
    let lse = lse.cast(DType::F32);
    let o = o.cast(dtype);
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
    let q = float::<B, 3>(q);
    let dtype = q.dtype();
    let q = to_f32(q);
    let k = to_f32(float::<B, 3>(k));
    let v = to_f32(float::<B, 3>(v));
    let o = to_f32(float::<B, 3>(o));
    let d_o = to_f32(float::<B, 3>(d_o));
    let lse: Tensor<B, 2> = Tensor::from_primitive(TensorPrimitive::Float(lse));
    let lse = lse.cast(q.dtype());
    let lse = lse.unsqueeze_dim::<3>(2); // [BH, Nq, 1]

    let s = q.clone().matmul(k.clone().swap_dims(1, 2)) * scale;
    let p = (s - lse).exp(); // [BH, Nq, Nk]
    let dv = p.clone().swap_dims(1, 2).matmul(d_o.clone());
    let dp = d_o.clone().matmul(v.swap_dims(1, 2));
    let delta = (d_o * o).sum_dim(2); // [BH, Nq, 1]
    let ds = p * (dp - delta);
    let dq = ds.clone().matmul(k) * scale;
    let dk = ds.swap_dims(1, 2).matmul(q) * scale;
    let back = |t: Tensor<B, 3>| unwrap(t.cast(dtype));
    (back(dq), back(dk), back(dv))
}

/// Half-precision inputs are upcast to F32 for the reference math; F32/F64 are kept.
fn to_f32<B: Backend>(t: Tensor<B, 3>) -> Tensor<B, 3> {
    let dtype = compute_dtype(t.dtype());
    t.cast(dtype)
}
