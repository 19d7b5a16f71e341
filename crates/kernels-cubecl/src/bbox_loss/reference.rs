//! The reference implementation of the box loss in Burn tensor ops (the default bodies of
//! [`super::BboxLossBackend`]): CIoU through [`crate::ciou`]'s reference, L1 and the weighted sums.
use burn::tensor::{
    backend::Backend,
    ops::{FloatTensor, IntTensor},
    Int, Tensor,
};

use crate::ciou::{reference_backward as ciou_backward, reference_forward as ciou_forward, CiouLossBackend};
use crate::tensor_util::{compute_dtype, float};

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
    let dist = dist.cast(cd).swap_dims(1, 2); // [B, A, 4]
    let anchors = float::<B, 2>(anchors).cast(cd); // [3, A]
    let axy = anchors.clone().narrow(0, 0, 2).swap_dims(0, 1).unsqueeze_dim::<3>(0); // [1, A, 2]
    let s = anchors.narrow(0, 2, 1).reshape([1, a, 1]);
    let weight = float::<B, 2>(weight).cast(cd);
    let bg = weight.clone().equal_elem(0.0).unsqueeze_dim::<3>(2).expand([b, a, 4]);
    let device = dist.device();
    let unit = Tensor::<B, 1>::from_floats([0.0, 0.0, 1.0, 1.0], &device).reshape([1, 1, 4]).expand([b, a, 4]);
    let unit = unit.cast(cd);

    let pred =
        Tensor::cat(vec![axy.clone() - dist.clone().narrow(2, 0, 2), axy.clone() + dist.clone().narrow(2, 2, 2)], 2);
    let gt = float::<B, 3>(gt_boxes);
    let target = if gt.dims()[1] == 0 {
        unit.clone()
    } else {
        let idx: Tensor<B, 2, Int> = Tensor::from_primitive(gt_idx);
        gt.cast(cd).gather(1, idx.unsqueeze_dim::<3>(2).expand([b, a, 4])) / s.clone()
    };
    let target = target.mask_where(bg.clone(), unit.clone());
    let tau = Tensor::cat(vec![axy.clone() - target.clone().narrow(2, 0, 2), target.clone().narrow(2, 2, 2) - axy], 2);
    let norm = Tensor::<B, 1>::from_floats([image[0], image[1], image[0], image[1]], &device).reshape([1, 1, 4]);
    let norm = norm.cast(cd);
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
    let dist = float::<B, 3>(dist);
    let dtype = dist.dtype();
    let [b, _, a] = dist.dims();
    let p = parts::<B>(dist, anchors, gt_boxes, gt_idx, weight, image);
    let (loss, _) = ciou_forward::<B>(p.pred.into_primitive().tensor(), p.target.into_primitive().tensor());
    let loss = float::<B, 1>(loss).reshape([b, a]);
    let box_sum = (loss * p.weight.clone()).sum();
    let l1 = (p.pred_n - p.target_n).abs().mask_fill(p.bg, 0.0).mean_dim(2).squeeze_dim::<2>(2);
    let l1_sum = (l1 * p.weight.clone()).sum();
    let out = Tensor::cat(vec![box_sum, l1_sum, p.weight.sum()], 0);
    out.cast(dtype).into_primitive().tensor()
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
    let dist = float::<B, 3>(dist);
    let dtype = dist.dtype();
    let cd = compute_dtype(dtype);
    let [b, _, a] = dist.dims();
    let p = parts::<B>(dist, anchors, gt_boxes, gt_idx, weight, image);
    let d = float::<B, 1>(d_sums).cast(cd);
    let (g0, g1) = (d.clone().narrow(0, 0, 1), d.narrow(0, 1, 1));
    let (pred, target) = (p.pred.into_primitive().tensor(), p.target.into_primitive().tensor());
    let (_, alpha) = ciou_forward::<B>(pred.clone(), target.clone());
    let d_loss = p.weight.clone().reshape([b * a]) * g0.clone();
    let (d_pred, _) = ciou_backward::<B>(pred, target, alpha, d_loss.cast(cd).into_primitive().tensor());
    let d_pred = float::<B, 2>(d_pred).cast(cd).reshape([b, a, 4]);
    // p = (ax − l, ay − t, ax + r, ay + b): d l = −d p.x1, d t = −d p.y1, d r = d p.x2, d b = d p.y2
    let flip = Tensor::<B, 1>::from_floats([-1.0, -1.0, 1.0, 1.0], &d_pred.device()).cast(cd).reshape([1, 1, 4]);
    let d_ciou = d_pred * flip;
    let sign = (p.pred_n - p.target_n).sign();
    let d_l1 = sign * p.scale_n * p.weight.unsqueeze_dim::<3>(2) * g1.reshape([1, 1, 1]) / 4.0;
    let d = (d_ciou + d_l1).mask_fill(p.bg, 0.0).swap_dims(1, 2);
    d.cast(dtype).into_primitive().tensor()
}
