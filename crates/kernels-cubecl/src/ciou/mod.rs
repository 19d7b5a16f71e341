//! CIoU box-regression loss as a Burn op: `1 − CIoU(pred, target)` per box, exactly ultralytics
//! `bbox_iou(pred, target, xywh=False, CIoU=True, eps=1e-7)` (with its `torch.no_grad()` trade-off
//! parameter `alpha`), forward and backward CubeCL kernels.
//!
//! - [`ciou_loss`]: `pred [M, 4]`, `target [M, 4]` (xyxy) → `[M]`, differentiable w.r.t. both.
//! - [`CiouLossBackend`]: the backend extension trait (kernels on `CubeBackend`, custom op on `Fusion`,
//!   backward step on `Autodiff`, plain tensor ops elsewhere).
//!
//! Gradient conventions (those of PyTorch's autograd on the ultralytics code): `alpha` is a constant
//! (computed under `no_grad`); `min`/`max` ties split the gradient half/half; `clamp(0)` passes the
//! gradient where its input is `≥ 0`.

mod autodiff;
pub(crate) mod cube;
mod fusion;
pub(crate) mod kernels;
mod reference;

#[cfg(test)]
pub(crate) mod tests;

pub use reference::{ciou_formula, reference_backward, reference_forward};

use burn::tensor::{backend::Backend, ops::FloatTensor, Tensor, TensorPrimitive};

/// The `eps` of ultralytics' `bbox_iou`.
pub const CIOU_EPS: f32 = 1e-7;

/// Per-box CIoU loss `1 − CIoU(pred_i, target_i)` for `pred`, `target`: `[M, 4]` boxes `(x1, y1, x2, y2)`
/// → `[M]` (dtype of `pred`). Same value as `1 − bbox_iou(pred, target, xywh=False, CIoU=True)` of
/// ultralytics; differentiable w.r.t. `pred` and `target` (alpha is not differentiated, as in ultralytics).
/// The detection loss then takes `Σ (1 − CIoU) · weight / target_scores_sum`. `M = 0` gives an empty
/// result without touching the device.
pub fn ciou_loss<B: CiouLossBackend>(pred: Tensor<B, 2>, target: Tensor<B, 2>) -> Tensor<B, 1> {
    assert!(
        pred.dims()[1] == 4 && pred.dims() == target.dims(),
        "ciou_loss: expected pred and target [M, 4], got {:?} and {:?}",
        pred.dims(),
        target.dims()
    );
    if pred.dims()[0] == 0 {
        return Tensor::empty([0], &pred.device());
    }
    let (loss, _alpha) = B::ciou_loss_forward(pred.into_primitive().tensor(), target.into_primitive().tensor());
    Tensor::from_primitive(TensorPrimitive::Float(loss))
}

/// Backend extension: per-box `1 − CIoU` and its gradients.
pub trait CiouLossBackend: Backend {
    /// `(loss, alpha)`, `loss_i = 1 − CIoU(pred_i, target_i)`, `alpha_i = v / (1 − iou + v + eps)`.
    fn ciou_loss_forward(pred: FloatTensor<Self>, target: FloatTensor<Self>) -> (FloatTensor<Self>, FloatTensor<Self>) {
        reference_forward::<Self>(pred, target)
    }

    /// `(d pred, d target)` (`[M, 4]`, dtype of `pred`) from the upstream gradient `d_loss` (`[M]`) and the
    /// forward's `alpha` (treated as a constant).
    fn ciou_loss_backward(
        pred: FloatTensor<Self>,
        target: FloatTensor<Self>,
        alpha: FloatTensor<Self>,
        d_loss: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        reference_backward::<Self>(pred, target, alpha, d_loss)
    }
}

impl CiouLossBackend for burn::backend::Flex {}
