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

#[cfg(test)]
mod tests;

use burn::tensor::{
    backend::Backend,
    ops::{FloatTensor, IntTensor},
    Int, Tensor, TensorPrimitive,
};

use crate::ciou::{reference_backward as ciou_backward, reference_forward as ciou_forward, CiouLossBackend};
use crate::dtype::{cast_to, compute_dtype, float_dtype};

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

fn wrap<B: Backend, const D: usize>(t: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

/// Per-anchor pieces of the reference, in the compute dtype: `(pred [B·A, 4], target [B·A, 4] (grid units,
/// unit boxes where `w = 0`), dist·s/n [B, A, 4], τ·s/n [B, A, 4], s/n [1, A, 4], w [B, A], fg [B, A] bool)`.
struct Parts<B: Backend> {
    pred: Tensor<B, 2>,
    target: Tensor<B, 2>,
    pred_n: Tensor<B, 3>,
    target_n: Tensor<B, 3>,
    scale_n: Tensor<B, 3>,
    weight: Tensor<B, 2>,
    bg: Tensor<B, 3, burn::tensor::Bool>,
}

fn parts<B: Backend>(
    dist: Tensor<B, 3>,
    anchors: FloatTensor<B>,
    gt_boxes: FloatTensor<B>,
    gt_idx: IntTensor<B>,
    weight: FloatTensor<B>,
    image: [f32; 2],
) -> Parts<B> {
    let cd = compute_dtype(dist.dtype());
    let [b, _, a] = dist.dims();
    let dist = cast_to(dist, cd).swap_dims(1, 2); // [B, A, 4]
    let anchors = cast_to(wrap::<B, 2>(anchors), cd); // [3, A]
    let axy = anchors.clone().narrow(0, 0, 2).swap_dims(0, 1).unsqueeze_dim::<3>(0); // [1, A, 2]
    let s = anchors.narrow(0, 2, 1).reshape([1, a, 1]);
    let weight = cast_to(wrap::<B, 2>(weight), cd);
    let bg = weight.clone().equal_elem(0.0).unsqueeze_dim::<3>(2).expand([b, a, 4]);
    let device = dist.device();
    let unit = Tensor::<B, 1>::from_floats([0.0, 0.0, 1.0, 1.0], &device).reshape([1, 1, 4]).expand([b, a, 4]);
    let unit = cast_to(unit, cd);

    let pred =
        Tensor::cat(vec![axy.clone() - dist.clone().narrow(2, 0, 2), axy.clone() + dist.clone().narrow(2, 2, 2)], 2);
    let gt = wrap::<B, 3>(gt_boxes);
    let target = if gt.dims()[1] == 0 {
        unit.clone()
    } else {
        let idx: Tensor<B, 2, Int> = Tensor::from_primitive(gt_idx);
        cast_to(gt, cd).gather(1, idx.unsqueeze_dim::<3>(2).expand([b, a, 4])) / s.clone()
    };
    let target = target.mask_where(bg.clone(), unit.clone());
    let tau = Tensor::cat(vec![axy.clone() - target.clone().narrow(2, 0, 2), target.clone().narrow(2, 2, 2) - axy], 2);
    let norm = Tensor::<B, 1>::from_floats([image[0], image[1], image[0], image[1]], &device).reshape([1, 1, 4]);
    let norm = cast_to(norm, cd);
    let pred_n = dist * s.clone() / norm.clone();
    let target_n = tau * s.clone() / norm.clone();
    let pred = pred.mask_where(bg.clone(), unit);
    Parts {
        pred: pred.reshape([b * a, 4]),
        target: target.reshape([b * a, 4]),
        pred_n,
        target_n,
        scale_n: s / norm,
        weight,
        bg,
    }
}

/// Reference forward in tensor ops (computed in F32, F64 kept): the CIoU reference on gathered boxes, L1 on
/// the normalised distances, weighted sums; `[3]` in the dtype of `dist`.
pub fn reference_sums<B: Backend>(
    dist: FloatTensor<B>,
    anchors: FloatTensor<B>,
    gt_boxes: FloatTensor<B>,
    gt_idx: IntTensor<B>,
    weight: FloatTensor<B>,
    image: [f32; 2],
) -> FloatTensor<B> {
    let dist = wrap::<B, 3>(dist);
    let dtype = dist.dtype();
    let [b, _, a] = dist.dims();
    let p = parts::<B>(dist, anchors, gt_boxes, gt_idx, weight, image);
    let (loss, _) = ciou_forward::<B>(p.pred.into_primitive().tensor(), p.target.into_primitive().tensor());
    let loss = wrap::<B, 1>(loss).reshape([b, a]);
    let box_sum = (loss * p.weight.clone()).sum();
    let l1 = (p.pred_n - p.target_n).abs().mask_fill(p.bg, 0.0).mean_dim(2).squeeze_dim::<2>(2);
    let l1_sum = (l1 * p.weight.clone()).sum();
    let out = Tensor::cat(vec![box_sum, l1_sum, p.weight.sum()], 0);
    cast_to(out, dtype).into_primitive().tensor()
}

/// Reference backward in tensor ops: the CIoU reference backward with `d_loss = g₀·w`, mapped from box
/// corners to LTRB, plus `g₁·w·sign(·)·s/n / 4`.
#[allow(clippy::too_many_arguments)]
pub fn reference_backward<B: CiouLossBackend>(
    dist: FloatTensor<B>,
    anchors: FloatTensor<B>,
    gt_boxes: FloatTensor<B>,
    gt_idx: IntTensor<B>,
    weight: FloatTensor<B>,
    image: [f32; 2],
    d_sums: FloatTensor<B>,
) -> FloatTensor<B> {
    let dist = wrap::<B, 3>(dist);
    let dtype = dist.dtype();
    let cd = compute_dtype(dtype);
    let [b, _, a] = dist.dims();
    let p = parts::<B>(dist, anchors, gt_boxes, gt_idx, weight, image);
    let d = cast_to(wrap::<B, 1>(d_sums), cd);
    let (g0, g1) = (d.clone().narrow(0, 0, 1), d.narrow(0, 1, 1));
    let (pred, target) = (p.pred.into_primitive().tensor(), p.target.into_primitive().tensor());
    let (_, alpha) = ciou_forward::<B>(pred.clone(), target.clone());
    let d_loss = p.weight.clone().reshape([b * a]) * g0.clone();
    let (d_pred, _) = ciou_backward::<B>(pred, target, alpha, cast_to(d_loss, cd).into_primitive().tensor());
    let d_pred = cast_to(wrap::<B, 2>(d_pred), cd).reshape([b, a, 4]);
    // p = (ax − l, ay − t, ax + r, ay + b): d l = −d p.x1, d t = −d p.y1, d r = d p.x2, d b = d p.y2
    let flip = cast_to(Tensor::<B, 1>::from_floats([-1.0, -1.0, 1.0, 1.0], &d_pred.device()), cd).reshape([1, 1, 4]);
    let d_ciou = d_pred * flip;
    let sign = (p.pred_n - p.target_n).sign();
    let d_l1 = sign * p.scale_n * p.weight.unsqueeze_dim::<3>(2) * g1.reshape([1, 1, 1]) / 4.0;
    let d = (d_ciou + d_l1).mask_fill(p.bg, 0.0).swap_dims(1, 2);
    cast_to(d, dtype).into_primitive().tensor()
}

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
        return Tensor::<B, 1>::zeros([3], &dist.device()).cast(float_dtype(dtype));
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
