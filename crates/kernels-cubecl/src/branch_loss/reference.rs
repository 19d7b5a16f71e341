//! The reference of the loss-branch op: the branch composed from the other ops ([`crate::decode`],
//! [`crate::tal`], [`crate::bbox_loss`], [`crate::bce_onehot`]) and tensor ops, the default bodies of
//! [`super::BranchLossBackend`]; and the items from the sums ([`items_from_sums`], [`items_backward`]), the
//! reference of [`super::kernels::loss_items`].
use burn::prelude::*;
use burn::tensor::{
    ops::{FloatTensor, IntTensor},
    DType, IntDType,
};

use super::{BranchConfig, BranchPrims, BranchSaved};
use crate::bbox_loss::{bbox_loss_sums, BboxLossBackend};
use crate::bce_onehot::{bce_onehot_sum, BceOneHotBackend};
use crate::decode::{BoxFormat, DetectDecodeBackend};
use crate::tal::TalBackend;
use crate::tensor_util::float;

/// The branch on backend `B` from its ops (see the module doc).
#[allow(clippy::too_many_arguments)]
pub fn compose<B: DetectDecodeBackend + TalBackend + BboxLossBackend + BceOneHotBackend>(
    boxes: FloatTensor<B>,
    scores: FloatTensor<B>,
    grid: FloatTensor<B>,
    gt_boxes: FloatTensor<B>,
    gt_labels: IntTensor<B>,
    gt_mask: FloatTensor<B>,
    cfg: BranchConfig,
    int_dtype: IntDType,
) -> BranchPrims<B> {
    let boxes: Tensor<B, 3> = float(boxes);
    let scores: Tensor<B, 3> = float(scores);
    let grid: Tensor<B, 2> = float(grid);
    let gt_boxes: Tensor<B, 3> = float(gt_boxes);
    let gt_labels: Tensor<B, 2, Int> = Tensor::from_primitive(gt_labels);
    let [b, _, a] = scores.dims();
    let g = gt_boxes.dims()[1];
    let device = scores.device();
    let dtype = scores.dtype();

    // bbox_decode (reg_max = 1) fused with the assigner's `* stride`: xyxy pixels
    let pred_px = B::detect_decode_forward(
        boxes.clone().into_primitive().tensor(),
        grid.clone().into_primitive().tensor(),
        BoxFormat::Xyxy,
    );
    // the label outside [0, C) gets no target and no box weight (the assigner zeroes its score)
    let (gt_idx, fg, score_sum, labels) = if g == 0 || a == 0 || b == 0 {
        let zeros = || Tensor::<B, 2>::zeros([b, a], (&device, dtype));
        let idx = Tensor::<B, 2, Int>::zeros([b, a], (&device, DType::from(int_dtype)));
        (idx, zeros(), zeros(), Tensor::<B, 2, Int>::zeros([b, a], (&device, gt_labels.dtype())))
    } else {
        let (i, f, n, l) = B::task_aligned_assign(
            scores.clone().into_primitive().tensor(),
            pred_px,
            grid.clone().into_primitive().tensor(),
            gt_boxes.clone().into_primitive().tensor(),
            gt_labels.into_primitive(),
            gt_mask,
            cfg.tal,
            int_dtype,
        );
        (Tensor::from_primitive(i), float::<B, 2>(f), float::<B, 2>(n), Tensor::from_primitive(l))
    };

    let box_sums = bbox_loss_sums(boxes, grid, gt_boxes, gt_idx.clone(), score_sum.clone(), cfg.image); // [3]
    let cls = bce_onehot_sum(scores, labels.clone(), score_sum.clone()); // [1]
    let (items, w_sum) = items_from_sums(box_sums.cast(dtype), cls, cfg.batch_gains(b));
    let terms = items.clone() * cfg.mix;
    BranchPrims {
        total: terms.clone().sum().into_primitive().tensor(),
        terms: terms.into_primitive().tensor(),
        items: items.into_primitive().tensor(),
        w_sum: w_sum.into_primitive().tensor(),
        gt_idx: gt_idx.into_primitive(),
        fg: fg.into_primitive().tensor(),
        score_sum: score_sum.into_primitive().tensor(),
        labels: labels.into_primitive(),
    }
}

/// The backward of [`compose`] from the ops' backward methods.
pub fn compose_backward<B: BboxLossBackend + BceOneHotBackend>(
    boxes: FloatTensor<B>,
    scores: FloatTensor<B>,
    saved: BranchSaved<B>,
    d_total: FloatTensor<B>,
    cfg: BranchConfig,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let b = float::<B, 3>(scores.clone()).dims()[0];
    // each item enters the total once, weighted by mix
    let d_items = (float::<B, 1>(d_total) * cfg.mix).expand([3]);
    let (d_box, d_cls) = items_backward(d_items, float(saved.w_sum), cfg.batch_gains(b));
    let d_boxes = B::bbox_loss_backward(
        boxes,
        saved.grid,
        saved.gt_boxes,
        saved.gt_idx,
        saved.score_sum.clone(),
        cfg.image,
        d_box.into_primitive().tensor(),
    );
    let d_scores = B::bce_onehot_backward(scores, saved.labels, saved.score_sum, d_cls.into_primitive().tensor());
    (d_boxes, d_scores)
}

/// `(items [3], w_sum [1])` from `box_sums [3] = (S_box, S_l1, W)` and `cls_sum [1]` with tensor ops (any
/// backend; the reference of the kernels). `gains = (g_box, g_cls, g_l1)`, batch size included.
pub fn items_from_sums<B: Backend>(
    box_sums: Tensor<B, 1>,
    cls_sum: Tensor<B, 1>,
    gains: [f32; 3],
) -> (Tensor<B, 1>, Tensor<B, 1>) {
    let w = box_sums.clone().narrow(0, 2, 1);
    let k = w.clone().clamp_min(1.0).recip();
    let item = |s: Tensor<B, 1>, g: f32| s * k.clone() * g;
    let items = Tensor::cat(
        vec![
            item(box_sums.clone().narrow(0, 0, 1), gains[0]),
            item(cls_sum, gains[1]),
            item(box_sums.narrow(0, 1, 1), gains[2]),
        ],
        0,
    );
    (items, w)
}

/// The backward of [`items_from_sums`] with tensor ops: `d_items [3]`, `w_sum [1]` → `(d_box_sums [3], d_cls
/// [1])` (`d W = 0`: the weights come from the assignment).
pub fn items_backward<B: Backend>(
    d_items: Tensor<B, 1>,
    w_sum: Tensor<B, 1>,
    gains: [f32; 3],
) -> (Tensor<B, 1>, Tensor<B, 1>) {
    let k = w_sum.clamp_min(1.0).recip();
    let d = |i: usize, g: f32| d_items.clone().narrow(0, i, 1) * k.clone() * g;
    let d_box = Tensor::cat(vec![d(0, gains[0]), d(2, gains[2]), d_items.clone().narrow(0, 0, 1).zeros_like()], 0);
    (d_box, d(1, gains[1]))
}
