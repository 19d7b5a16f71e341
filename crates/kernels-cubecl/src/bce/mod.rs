//! Binary cross-entropy with logits as a Burn op (elementwise, `reduction="none"`), forward and backward
//! CubeCL kernels: PyTorch's `BCEWithLogitsLoss(reduction="none")` as used by ultralytics' classification
//! loss with soft targets.
//!
//! - [`bce_with_logits`]: `logits`, `targets` (same shape, any rank) → elementwise loss (dtype of `logits`).
//! - [`BceWithLogitsBackend`]: the backend extension trait (kernels on `CubeBackend`, custom op on
//!   `Fusion`, backward step on `Autodiff`, plain tensor ops elsewhere).
//!
//! **The targets get no gradient** (they are constants in the detection loss: assigner outputs). On an
//! `Autodiff` backend a `targets` tensor that requires grad is used as a value only, and its gradient is
//! never registered (`∂L/∂t = −x` is not computed).

mod autodiff;
pub(crate) mod cube;
mod fusion;
pub(crate) mod kernels;
mod reference;

#[cfg(test)]
mod tests;

pub use reference::{reference_backward, reference_forward};

use burn::tensor::{backend::Backend, ops::FloatTensor, Tensor, TensorPrimitive};

/// Elementwise `max(x, 0) − x·t + ln(1 + e^{−|x|})` (PyTorch's numerically stable BCE-with-logits), for
/// `logits` `x` and soft `targets` `t ∈ [0, 1]` of the same shape (any rank; `targets` are cast to
/// `logits`' dtype). Differentiable w.r.t. `logits` only: `∂L/∂x = σ(x) − t`.
///
/// Zero elements give an empty result without touching the device (it carries no gradient: there is
/// nothing to differentiate).
pub fn bce_with_logits<B: BceWithLogitsBackend, const D: usize>(
    logits: Tensor<B, D>,
    targets: Tensor<B, D>,
) -> Tensor<B, D> {
    let shape = logits.shape();
    assert_eq!(shape, targets.shape(), "bce_with_logits: logits and targets shapes differ");
    let n = shape.num_elements();
    if n == 0 {
        return Tensor::empty(shape, &logits.device());
    }
    let x = logits.reshape([n]).into_primitive().tensor();
    let t = targets.reshape([n]).into_primitive().tensor();
    let loss = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(B::bce_with_logits_forward(x, t)));
    loss.reshape(shape)
}

/// Backend extension: elementwise BCE with logits and its gradient w.r.t. the logits.
pub trait BceWithLogitsBackend: Backend {
    /// `loss = max(x, 0) − x·t + ln(1 + e^{−|x|})` (dtype of `logits`).
    fn bce_with_logits_forward(logits: FloatTensor<Self>, targets: FloatTensor<Self>) -> FloatTensor<Self> {
        reference_forward::<Self>(logits, targets)
    }

    /// `d logits = d_loss · (σ(x) − t)` (dtype of `logits`). The targets get no gradient.
    fn bce_with_logits_backward(
        logits: FloatTensor<Self>,
        targets: FloatTensor<Self>,
        d_loss: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        reference_backward::<Self>(logits, targets, d_loss)
    }
}

impl BceWithLogitsBackend for burn::backend::Flex {}
