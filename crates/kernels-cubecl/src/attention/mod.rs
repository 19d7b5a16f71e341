//! Flash Attention 2 as a Burn op: forward and backward CubeCL kernels, Fusion and Autodiff support,
//! and a plain-tensor reference for other backends.
//!
//! - [`flash_attention`]: `[B, H, N, D]` tensors, differentiable under `Autodiff`.
//! - [`FlashMultiHeadAttention`]: a multi-head self-attention module (q/k/v/out `Linear`s) on top of it.
//! - [`FlashAttentionBackend`]: the backend extension trait (`[BH, N, D]` primitives), implemented for
//!   `CubeBackend` (kernels), `Fusion<B>` (custom fusion op), `Autodiff<B, C>` (backward step) and `Flex`
//!   (reference = the trait's default methods).
//!
//! The CubeCL kernels accept any head dim up to [`kernels::MAX_HEAD_DIM`] (a comptime value per kernel;
//! 16/32/64/128 are tested), `Dk ≠ Dv`, any sequence lengths (`Nq ≠ Nk`), f32/f16/bf16 storage with f32
//! accumulation. Larger head dims fall back to the reference implementation.

mod autodiff;
pub(crate) mod cube;
mod fusion;
pub(crate) mod kernels;
mod module;
mod reference;

#[cfg(test)]
pub(crate) mod tests;

pub use module::{FlashMultiHeadAttention, FlashMultiHeadAttentionConfig};
pub use reference::{reference_backward, reference_forward};

use burn::tensor::{backend::Backend, ops::FloatTensor, Tensor, TensorPrimitive};

/// Scaled dot-product attention `softmax(scale · q kᵀ) v` on `[B, H, N, D]` tensors
/// (`q: [B, H, Nq, Dk]`, `k: [B, H, Nk, Dk]`, `v: [B, H, Nk, Dv]` → `[B, H, Nq, Dv]`), computed with
/// Flash Attention 2 on CubeCL backends (no `Nq × Nk` matrix in memory, forward or backward).
/// Differentiable with respect to `q`, `k` and `v` on `Autodiff` backends. No mask, no dropout.
/// The usual scale is `1 / sqrt(Dk)`.
pub fn flash_attention<B: FlashAttentionBackend>(
    q: Tensor<B, 4>,
    k: Tensor<B, 4>,
    v: Tensor<B, 4>,
    scale: f32,
) -> Tensor<B, 4> {
    let [b, h, nq, dk] = q.dims();
    let [bk, hk, nk, dk2] = k.dims();
    let [bv, hv, nv, dv] = v.dims();
    assert!(
        b == bk && b == bv && h == hk && h == hv && dk == dk2 && nk == nv,
        "flash_attention: expected q [B, H, Nq, Dk], k [B, H, Nk, Dk], v [B, H, Nk, Dv], got {:?}, {:?}, {:?}",
        q.dims(),
        k.dims(),
        v.dims()
    );
    assert!(nk > 0, "flash_attention: k and v have no keys (Nk = 0); the softmax over no keys is undefined");
    let q = q.reshape([b * h, nq, dk]).into_primitive().tensor();
    let k = k.reshape([b * h, nk, dk]).into_primitive().tensor();
    let v = v.reshape([b * h, nk, dv]).into_primitive().tensor();
    let (o, _lse) = B::flash_attention_forward(q, k, v, scale);
    Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(o)).reshape([b, h, nq, dv])
}

/// Backend extension: Flash Attention 2 forward and backward on `[BH, N, D]` tensors.
///
/// Implementations: the default methods (the reference, `reference.rs`: plain tensor ops, `N×N`
/// materialised) on `Flex` and any backend that does not override them; `CubeBackend` launches the FA2
/// kernels (`cube.rs`); `Fusion<B>` registers a custom op in the fusion stream (`fusion.rs`); `Autodiff<B, C>`
/// runs the forward on the inner backend and records a backward step that calls
/// [`FlashAttentionBackend::flash_attention_backward`] (`autodiff.rs`).
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
