//! PSA attention (ultralytics `Attention.forward` between the `qkv` conv and `pe`/`proj`) as one Burn op
//! on top of Flash Attention 2: CubeCL rearrangement kernels, Fusion and Autodiff support, and a
//! plain-tensor reference for other backends.
//!
//! ultralytics (`nn/modules/block.py::Attention.forward`, `N = H·W`, `C3 = 2·kd + hd`, `C = nh·hd`):
//! ```text
//! q, k, v = qkv.view(B, nh, C3, N).split([kd, kd, hd], dim=2)
//! attn = ((q * scale).transpose(-2, -1) @ k).softmax(dim=-1)
//! x = (v @ attn.transpose(-2, -1)).view(B, C, H, W) + pe(v.reshape(B, C, H, W))
//! ```
//! [`psa_attention`] returns `(x_attn, v_nchw)` = `((v @ attn.transpose(-2, -1)).view(B, C, H, W),
//! v.reshape(B, C, H, W))`; the caller adds `pe(v_nchw)` and applies `proj`.
//!
//! On CubeCL backends: `PsaPackQkv` (qkv → `q, k [B·nh, N, kd]`, `v [B·nh, N, hd]`), **one** FA2 call with
//! `Dk = kd`, `Dv = hd` (our FA2 supports `Dk ≠ Dv`, so V is not split into `kd`-wide halves), then
//! `PsaMergeAttn` (`o [B·nh, N, hd]` → NCHW) and `PsaExtractV` (qkv → `v` NCHW). The backward kernels are
//! the inverses (`PsaSplitAttn`, `PsaUnpackQkv`) around the FA2 backward. No `N × N` matrix anywhere.

mod autodiff;
pub(crate) mod cube;
mod fusion;
pub(crate) mod kernels;
mod reference;

#[cfg(test)]
mod tests;

pub use reference::{psa_dims, reference_backward, reference_forward};

use burn::tensor::{ops::FloatTensor, Tensor, TensorPrimitive};

use crate::attention::FlashAttentionBackend;

/// PSA attention: `qkv [B, nh·(2·kd + hd), H, W]` (ultralytics' channel order: per head `[q | k | v]`)
/// → `(attn [B, nh·hd, H, W], v [B, nh·hd, H, W])`, with `attn` = ultralytics'
/// `(v @ softmax((q·scale)ᵀ k)ᵀ).view(B, C, H, W)` and `v` = `v.reshape(B, C, H, W)`.
/// Differentiable with respect to `qkv` through both outputs. The usual scale is `key_dim^-0.5`.
pub fn psa_attention<B: PsaBackend>(
    qkv: Tensor<B, 4>,
    num_heads: usize,
    key_dim: usize,
    scale: f32,
) -> (Tensor<B, 4>, Tensor<B, 4>) {
    let d = psa_dims(&qkv.dims(), num_heads, key_dim);
    let (out, _lse) = B::psa_attention_forward(qkv.into_primitive().tensor(), num_heads, key_dim, scale);
    let out = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(out));
    let c = d.c();
    (out.clone().narrow(1, 0, c), out.narrow(1, c, c))
}

/// Backend extension: PSA attention (`Attention.forward` of ultralytics between `qkv` and `pe`/`proj`).
pub trait PsaBackend: FlashAttentionBackend {
    /// `(out, lse)` from `qkv` (see the module doc for the layouts). `scale` multiplies `q·k`
    /// (ultralytics: `key_dim^-0.5`).
    fn psa_attention_forward(
        qkv: FloatTensor<Self>,
        num_heads: usize,
        key_dim: usize,
        scale: f32,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        reference_forward::<Self>(qkv, num_heads, key_dim, scale)
    }

    /// `d qkv` given the forward's input `qkv`, its outputs `out` and `lse`, and the upstream gradient
    /// `d_out` of `out` (both channel halves: attention and `v`).
    #[allow(clippy::too_many_arguments)]
    fn psa_attention_backward(
        qkv: FloatTensor<Self>,
        out: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        d_out: FloatTensor<Self>,
        num_heads: usize,
        key_dim: usize,
        scale: f32,
    ) -> FloatTensor<Self> {
        reference_backward::<Self>(qkv, out, lse, d_out, num_heads, key_dim, scale)
    }
}

impl PsaBackend for burn::backend::Flex {}
