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

#[cfg(test)]
mod tests;

use burn::tensor::{
    activation::sigmoid,
    backend::Backend,
    ops::{FloatTensor, IntTensor},
    Int, Tensor, TensorPrimitive,
};

use crate::bce::reference_forward as bce_reference;
use crate::dtype::{cast_to, compute_dtype};

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

/// Dense targets `[B, C, A]` in `dtype`: `one_hot(label)·score`.
fn dense_targets<B: Backend>(
    labels: IntTensor<B>,
    scores: FloatTensor<B>,
    num_classes: usize,
    dtype: burn::tensor::DType,
) -> Tensor<B, 3> {
    let labels: Tensor<B, 2, Int> = Tensor::from_primitive(labels);
    let scores: Tensor<B, 2> = cast_to(Tensor::from_primitive(TensorPrimitive::Float(scores)), dtype);
    let [b, a] = labels.dims();
    let classes = Tensor::<B, 1, Int>::arange(0..num_classes as i64, &labels.device()).reshape([1, num_classes, 1]);
    let hot = labels.unsqueeze_dim::<3>(1).expand([b, num_classes, a]).equal(classes.expand([b, num_classes, a]));
    cast_to(hot.float(), dtype) * scores.unsqueeze_dim(1)
}

/// Reference forward in tensor ops (dense targets, then the BCE reference and a sum).
pub fn reference_sum<B: Backend>(
    logits: FloatTensor<B>,
    labels: IntTensor<B>,
    scores: FloatTensor<B>,
) -> FloatTensor<B> {
    let x: Tensor<B, 3> = Tensor::from_primitive(TensorPrimitive::Float(logits));
    let dtype = x.dtype();
    let cd = compute_dtype(dtype);
    let t = dense_targets::<B>(labels, scores, x.dims()[1], cd);
    let n = x.shape().num_elements();
    let x = cast_to(x, cd).reshape([n]);
    let loss: Tensor<B, 1> = Tensor::from_primitive(TensorPrimitive::Float(bce_reference::<B>(
        x.into_primitive().tensor(),
        t.reshape([n]).into_primitive().tensor(),
    )));
    cast_to(loss.sum(), dtype).into_primitive().tensor()
}

/// Reference backward in tensor ops: `d_total · (σ(x) − t)`.
pub fn reference_backward<B: Backend>(
    logits: FloatTensor<B>,
    labels: IntTensor<B>,
    scores: FloatTensor<B>,
    d_total: FloatTensor<B>,
) -> FloatTensor<B> {
    let x: Tensor<B, 3> = Tensor::from_primitive(TensorPrimitive::Float(logits));
    let dtype = x.dtype();
    let cd = compute_dtype(dtype);
    let t = dense_targets::<B>(labels, scores, x.dims()[1], cd);
    let g: Tensor<B, 1> = cast_to(Tensor::from_primitive(TensorPrimitive::Float(d_total)), cd);
    let d = (sigmoid(cast_to(x, cd)) - t) * g.reshape([1, 1, 1]);
    cast_to(d, dtype).into_primitive().tensor()
}

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
        return Tensor::<B, 1>::zeros([1], &logits.device()).cast(crate::dtype::float_dtype(logits.dtype()));
    }
    let scores =
        if scores.dtype() == logits.dtype() { scores } else { scores.cast(crate::dtype::float_dtype(logits.dtype())) };
    let out =
        B::bce_onehot_sum(logits.into_primitive().tensor(), labels.into_primitive(), scores.into_primitive().tensor());
    Tensor::from_primitive(TensorPrimitive::Float(out))
}
