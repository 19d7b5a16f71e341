//! Fused box-regression loss of an anchor-point detector as a Burn op: the weighted CIoU loss and the
//! weighted L1 loss on image-normalised LTRB distances, summed over all anchors in one pass, with the
//! target boxes gathered from the padded ground truth by the assigned slot. ultralytics 8.4
//! `BboxLoss.forward` for `reg_max = 1` (YOLO26), before the division by `target_scores_sum`:
//!
//! ```text
//! pred box (grid units)  p = (ax − l, ay − t, ax + r, ay + b)          (l, t, r, b) = dist[b, :, a]
//! target box             q = gt_boxes[b, gt_idx[b, a]] / s              s = stride of anchor a
//! target LTRB            τ = (ax − q.x1, ay − q.y1, q.x2 − ax, q.y2 − ay)
//! box_sum = Σ_{b,a} w[b, a] · (1 − CIoU(p, q))
//! l1_sum  = Σ_{b,a} w[b, a] · ¼ Σ_k |dist_k·s/n_k − τ_k·s/n_k|        n = (W, H, W, H) image size, pixels
//! w_sum   = Σ_{b,a} w[b, a]
//! ```
//!
//! Anchors with `w = 0` (background) are skipped: they add nothing and are never evaluated, so a
//! degenerate prediction there cannot make the sum non-finite (ultralytics only indexes the foreground).
//! Gradient w.r.t. `dist` only (weights and targets are assigner outputs, constants): CIoU's (alpha
//! constant, PyTorch's min/max tie rule, see [`crate::ciou`]) and `sign(·)·s/n_k / 4` for L1 (0 at 0).
//!
//! - [`bbox_loss_sums`]: `dist [B, 4, A]`, `anchors [3, A]` (the [`crate::decode::anchor_grid`] rows
//!   `x, y, stride`), `gt_boxes [B, G, 4]` xyxy pixels, `gt_idx [B, A]` int, `weight [B, A]` →
//!   `[3] = (box_sum, l1_sum, w_sum)`.
//! - [`BboxLossBackend`]: kernels on `CubeBackend` (`kernels.rs`: a block-sum forward and a per-anchor
//!   backward; `dist` is read through its strides), custom ops on `Fusion`, a backward step on `Autodiff`,
//!   tensor ops elsewhere ([`reference_sums`], [`reference_backward`]).

mod autodiff;
pub(crate) mod cube;
mod fusion;
pub(crate) mod kernels;
mod reference;

#[cfg(test)]
mod tests;

pub use reference::{reference_backward, reference_sums};

use burn::tensor::{
    ops::{FloatTensor, IntTensor},
    Int, Tensor, TensorPrimitive,
};

use crate::ciou::CiouLossBackend;

/// Backend extension: the fused box loss and its gradient. `image = [W, H]` in pixels.
pub trait BboxLossBackend: CiouLossBackend {
    /// `[3]` in the dtype of `dist`: `(box_sum, l1_sum, w_sum)`.
    fn bbox_loss_sums(
        dist: FloatTensor<Self>,
        anchors: FloatTensor<Self>,
        gt_boxes: FloatTensor<Self>,
        gt_idx: IntTensor<Self>,
        weight: FloatTensor<Self>,
        image: [f32; 2],
    ) -> FloatTensor<Self> {
        reference_sums::<Self>(dist, anchors, gt_boxes, gt_idx, weight, image)
    }

    /// `d dist [B, 4, A]` (dtype of `dist`) for the upstream gradient `d_sums [3]` (its third entry, the
    /// weight sum's, has no effect: weights are constants).
    #[allow(clippy::too_many_arguments)]
    fn bbox_loss_backward(
        dist: FloatTensor<Self>,
        anchors: FloatTensor<Self>,
        gt_boxes: FloatTensor<Self>,
        gt_idx: IntTensor<Self>,
        weight: FloatTensor<Self>,
        image: [f32; 2],
        d_sums: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        reference_backward::<Self>(dist, anchors, gt_boxes, gt_idx, weight, image, d_sums)
    }
}

impl BboxLossBackend for burn::backend::Flex {}

/// Checks `dist [B, 4, A]`, `anchors [3, A]`, `gt_boxes [B, G, 4]`, `gt_idx` and `weight` `[B, A]`.
pub(crate) fn check_shapes(dist: &[usize], anchors: &[usize], gt_boxes: &[usize], gt_idx: &[usize], weight: &[usize]) {
    let ok = dist.len() == 3
        && dist[1] == 4
        && anchors == [3, dist[2]]
        && gt_boxes.len() == 3
        && gt_boxes[0] == dist[0]
        && gt_boxes[2] == 4
        && gt_idx == [dist[0], dist[2]]
        && weight == gt_idx;
    assert!(
        ok,
        "bbox_loss_sums: expected dist [B, 4, A], anchors [3, A], gt_boxes [B, G, 4], gt_idx and weight [B, A]; \
         got {dist:?}, {anchors:?}, {gt_boxes:?}, {gt_idx:?}, {weight:?}"
    );
}

/// `[3] = (Σ w·(1 − CIoU), Σ w·L1, Σ w)` of the module doc, in the dtype of `dist`, differentiable w.r.t.
/// `dist` only. `image = [W, H]` in pixels (the L1 normalisation). `gt_idx` values must lie in `[0, G)`
/// where `w ≠ 0` (the assigner's output does). `B·A = 0` gives zeros.
pub fn bbox_loss_sums<B: BboxLossBackend>(
    dist: Tensor<B, 3>,
    anchors: Tensor<B, 2>,
    gt_boxes: Tensor<B, 3>,
    gt_idx: Tensor<B, 2, Int>,
    weight: Tensor<B, 2>,
    image: [f32; 2],
) -> Tensor<B, 1> {
    check_shapes(&dist.dims(), &anchors.dims(), &gt_boxes.dims(), &gt_idx.dims(), &weight.dims());
    let dtype = dist.dtype();
    if gt_idx.shape().num_elements() == 0 {
        return Tensor::<B, 1>::zeros([3], &dist.device()).cast(dtype);
    }
    let out = B::bbox_loss_sums(
        dist.into_primitive().tensor(),
        anchors.detach().into_primitive().tensor(),
        gt_boxes.detach().into_primitive().tensor(),
        gt_idx.into_primitive(),
        weight.detach().into_primitive().tensor(),
        image,
    );
    Tensor::from_primitive(TensorPrimitive::Float(out))
}
