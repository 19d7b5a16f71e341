//! Reference implementation of [`super::TalBackend`] in plain tensor ops (any backend): every GT × anchor
//! pair evaluated densely (`[B, G, A]`), ultralytics' `_forward` step by step.
use crate::tensor_util::float;
use burn::tensor::{
    backend::Backend,
    ops::{FloatTensor, IntTensor},
    IndexingUpdateOp, Int, IntDType, Tensor,
};

use super::{TalBackend, TalConfig};
use crate::ciou::ciou_loss;
use crate::topk::topk_rows;

/// The trait's default method: `(gt_idx, fg, norm, labels)` from tensor ops (top-k through [`topk_rows`]).
#[allow(clippy::too_many_arguments)]
pub fn reference_assign<B: TalBackend>(
    logits: FloatTensor<B>,
    boxes: FloatTensor<B>,
    anchors: FloatTensor<B>,
    gt_boxes: FloatTensor<B>,
    gt_labels: IntTensor<B>,
    gt_mask: FloatTensor<B>,
    cfg: TalConfig,
    _int_dtype: IntDType,
) -> (IntTensor<B>, FloatTensor<B>, FloatTensor<B>, IntTensor<B>) {
    let logits: Tensor<B, 3> = float(logits);
    let boxes: Tensor<B, 3> = float(boxes);
    let anchors: Tensor<B, 2> = float(anchors);
    // the anchor grid [3, A] (x, y, stride) → centres in pixels
    let anchors =
        if anchors.dims()[0] == 3 { anchors.clone().narrow(0, 0, 2) * anchors.narrow(0, 2, 1) } else { anchors };
    let gt_boxes: Tensor<B, 3> = float(gt_boxes);
    let gt_labels: Tensor<B, 2, Int> = Tensor::from_primitive(gt_labels);
    let gt_mask: Tensor<B, 2> = float(gt_mask);
    let [b, c, a] = logits.dims();
    let g = gt_boxes.dims()[1];
    let device = logits.device();
    let mask_gt: Tensor<B, 3> = gt_mask.unsqueeze_dim(2); // [B, G, 1]

    // get_pos_mask
    let mask_in_gts = candidates_in_gts(&cfg, anchors, gt_boxes.clone(), mask_gt.clone()); // [B, G, A]
    let valid = mask_in_gts.clone() * mask_gt.clone();
    // get_box_metrics: s = σ(logit of the GT's class), CIoU(gt, pd) over all pairs in one kernel pass
    let labels = gt_labels.clone().clamp(0, c as i64 - 1);
    let scores = burn::tensor::activation::sigmoid(logits.gather(1, labels.unsqueeze_dim::<3>(2).expand([b, g, a])));
    let m = b * g * a;
    let gt4 = gt_boxes.unsqueeze_dim::<4>(2).expand([b, g, a, 4]).reshape([m, 4]);
    let pd4 = boxes.swap_dims(1, 2).unsqueeze_dim::<4>(1).expand([b, g, a, 4]).reshape([m, 4]);
    let ciou = ciou_loss(gt4, pd4).neg() + 1.0;
    let overlaps = ciou.reshape([b, g, a]).clamp_min(0.0) * valid.clone();
    let align_metric = scores.powf_scalar(cfg.alpha) * overlaps.clone().powf_scalar(cfg.beta) * valid;
    let (_, top) = topk_rows(align_metric.clone().reshape([b * g, a]), cfg.topk);
    let mask_topk = scatter_ones(top.reshape([b, g, cfg.topk]), 2, [b, g, a]);
    let mask_pos = mask_topk * mask_in_gts * mask_gt;

    // select_highest_overlaps: anchors claimed by several GTs keep the GT of highest overlap
    let fg = mask_pos.clone().sum_dim(1); // [B, 1, A]
    let multi = fg.greater_elem(1.0).expand([b, g, a]);
    let is_max = scatter_ones(overlaps.clone().argmax(1), 1, [b, g, a]);
    let mut mask_pos = mask_pos.mask_where(multi, is_max);
    if cfg.topk2 != cfg.topk {
        let m = align_metric.clone() * mask_pos.clone();
        let idx = if cfg.topk2 == 1 {
            m.argmax(2)
        } else {
            topk_rows(m.reshape([b * g, a]), cfg.topk2).1.reshape([b, g, cfg.topk2])
        };
        mask_pos = mask_pos * scatter_ones(idx, 2, [b, g, a]);
    }
    // at most one positive per anchor now: the column sum is the fg flag, the weighted sum the GT slot
    let fg_mask: Tensor<B, 2> = mask_pos.clone().sum_dim(1).squeeze_dim(1); // [B, A]
    let slots = Tensor::<B, 1, Int>::arange(0..g as i64, &device).float().reshape([1, g, 1]);
    let gt_idx: Tensor<B, 2, Int> = (mask_pos.clone() * slots).sum_dim(1).squeeze_dim::<2>(1).int();

    // normalise: t × (max IoU of the GT's positives) / (max t of the GT's positives), max over GTs
    let align = align_metric * mask_pos.clone();
    let pos_align = align.clone().max_dim(2); // [B, G, 1]
    let pos_overlaps = (overlaps * mask_pos).max_dim(2);
    let norm: Tensor<B, 2> = (align * pos_overlaps / (pos_align + cfg.eps)).max_dim(1).squeeze_dim(1); // [B, A]
                                                                                                       // target labels; a label outside [0, C) gets no target score
    let labels_dtype = gt_labels.dtype();
    let target_labels = gt_labels.gather(1, gt_idx.clone().cast(labels_dtype));
    let out_of_range = target_labels.clone().lower_elem(0).bool_or(target_labels.clone().greater_equal_elem(c as i64));
    let norm = norm.mask_fill(out_of_range, 0.0);
    (
        gt_idx.into_primitive(),
        fg_mask.into_primitive().tensor(),
        norm.into_primitive().tensor(),
        target_labels.into_primitive(),
    )
}

/// `select_candidates_in_gts`: `[B, G, A]` 1.0 where the anchor centre lies strictly inside the GT box whose
/// sides shorter than `stride_val` were enlarged to `stride_val` about its centre (valid GTs only).
fn candidates_in_gts<B: Backend>(
    cfg: &TalConfig,
    anc: Tensor<B, 2>,
    gt: Tensor<B, 3>,
    mask_gt: Tensor<B, 3>,
) -> Tensor<B, 3> {
    let [b, g, _] = gt.dims();
    let a = anc.dims()[1];
    let (x1, y1) = (gt.clone().narrow(2, 0, 1), gt.clone().narrow(2, 1, 1));
    let (x2, y2) = (gt.clone().narrow(2, 2, 1), gt.narrow(2, 3, 1));
    let (cx, cy) = ((x1.clone() + x2.clone()) / 2.0, (y1.clone() + y2.clone()) / 2.0);
    let stal = |side: Tensor<B, 3>| {
        let small = (side.clone().lower_elem(cfg.stride_val).float() * mask_gt.clone()).bool();
        side.mask_fill(small, cfg.stride_val)
    };
    let (w, h) = (stal(x2 - x1), stal(y2 - y1));
    let (lx, ly) = (cx.clone() - w.clone() * 0.5, cy.clone() - h.clone() * 0.5);
    let (rx, ry) = (cx + w * 0.5, cy + h * 0.5);
    let ax = anc.clone().narrow(0, 0, 1).reshape([1, 1, a]).expand([b, g, a]);
    let ay = anc.narrow(0, 1, 1).reshape([1, 1, a]).expand([b, g, a]);
    let side = |t: Tensor<B, 3>| t.expand([b, g, a]);
    let inside = |d: Tensor<B, 3>| d.greater_elem(cfg.eps).float();
    inside(ax.clone() - side(lx)) * inside(ay.clone() - side(ly)) * inside(side(rx) - ax) * inside(side(ry) - ay)
}

/// Zeros of `shape` with 1.0 scattered at `idx` along `dim` (distinct indices per row assumed).
fn scatter_ones<B: Backend>(idx: Tensor<B, 3, Int>, dim: usize, shape: [usize; 3]) -> Tensor<B, 3> {
    let device = idx.device();
    let ones = Tensor::ones(idx.dims(), &device);
    Tensor::zeros(shape, &device).scatter(dim, idx, ones, IndexingUpdateOp::Add)
}
