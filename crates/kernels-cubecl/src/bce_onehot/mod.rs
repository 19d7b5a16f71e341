//! Summed BCE-with-logits against one-hot targets given per anchor, as a Burn op: ultralytics'
//! classification loss `BCEWithLogitsLoss(reduction="none")(pred_scores, target_scores).sum()` where
//! `target_scores = one_hot(target_labels) · score` — without building the dense `[B, A, C]` targets, the
//! transposed copy of the logits or the elementwise loss tensor.
//!
//! - [`bce_onehot_sum`]: `logits [B, C, A]` (the detection head's layout), `labels [B, A]` (int; a label
//!   outside `[0, C)` gives an all-zero target row), `scores [B, A]` → `[1]`, differentiable w.r.t. the logits
//!   (`∂L/∂x = σ(x) − t`); labels and scores are constants (assigner outputs).
//! - [`BceOneHotBackend`]: kernels on `CubeBackend` (`kernels.rs`: a block-sum forward and an elementwise
//!   backward), custom ops on `Fusion`, a backward step on `Autodiff`, tensor ops elsewhere.

mod autodiff;
pub(crate) mod cube;
mod fusion;
pub(crate) mod kernels;
mod reference;

#[cfg(test)]
mod tests;

pub use reference::{reference_backward, reference_sum};

use burn::tensor::{
    backend::Backend,
    ops::{FloatTensor, IntTensor},
    Int, Tensor, TensorPrimitive,
};

/// Backend extension: summed one-hot BCE and its gradient.
pub trait BceOneHotBackend: Backend {
    /// `[1]` in the logits' dtype: `Σ bce(x, one_hot(label)·score)` over `logits [B, C, A]`.
    fn bce_onehot_sum(
        logits: FloatTensor<Self>,
        labels: IntTensor<Self>,
        scores: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        reference_sum::<Self>(logits, labels, scores)
    }

    /// `d_total · (σ(x) − t)`, `[B, C, A]`; `d_total` is `[1]`.
    fn bce_onehot_backward(
        logits: FloatTensor<Self>,
        labels: IntTensor<Self>,
        scores: FloatTensor<Self>,
        d_total: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        reference_backward::<Self>(logits, labels, scores, d_total)
    }
}

impl BceOneHotBackend for burn::backend::Flex {}

/// Checks `logits [B, C, A]`, `labels` and `scores` `[B, A]`.
pub(crate) fn check_shapes(logits: &[usize], labels: &[usize], scores: &[usize]) {
    assert!(
        logits.len() == 3 && labels == [logits[0], logits[2]] && scores == labels,
        "bce_onehot_sum: expected logits [B, C, A], labels and scores [B, A]; got {logits:?}, {labels:?}, {scores:?}"
    );
}

/// `Σ_{b,c,a} bce_with_logits(logits[b, c, a], [c = labels[b, a]]·scores[b, a])` as a `[1]` tensor (dtype of
/// `logits`), differentiable w.r.t. `logits` only. Empty logits give `[0.0]`.
pub fn bce_onehot_sum<B: BceOneHotBackend>(
    logits: Tensor<B, 3>,
    labels: Tensor<B, 2, Int>,
    scores: Tensor<B, 2>,
) -> Tensor<B, 1> {
    check_shapes(&logits.dims(), &labels.dims(), &scores.dims());
    if logits.shape().num_elements() == 0 {
        return Tensor::<B, 1>::zeros([1], &logits.device()).cast(logits.dtype());
    }
    let scores = scores.cast(logits.dtype());
    let out =
        B::bce_onehot_sum(logits.into_primitive().tensor(), labels.into_primitive(), scores.into_primitive().tensor());
    Tensor::from_primitive(TensorPrimitive::Float(out))
}
