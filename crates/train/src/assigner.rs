//! Task-aligned label assignment with small-target-aware enlargement (ultralytics 8.4.190
//! `utils/tal.py::TaskAlignedAssigner`, STAL in `select_candidates_in_gts`).
//!
//! Batched over images with tensor ops only: GT boxes come padded to `[B, G, 4]` with a validity mask, every
//! GT × anchor pair is evaluated densely (`[B, G, A]`), no per-image loop and no host round-trip (the only
//! host-side decision is `G == 0`, a shape). Everything runs on detached inputs (ultralytics: `@torch.no_grad`).

use burn::prelude::*;
use burn::tensor::IndexingUpdateOp;
use kernels_cubecl::ciou::ciou_loss;

use crate::backend::TrainBackend;

/// Padded ground truth of a batch.
#[derive(Debug, Clone)]
pub struct GtBoxes<B: Backend> {
    /// `[B, G, 4]` xyxy in input pixels; padding rows are ignored (any value).
    pub bboxes: Tensor<B, 3>,
    /// `[B, G]` class ids; padding rows any valid id (e.g. 0).
    pub labels: Tensor<B, 2, Int>,
    /// `[B, G]` 1.0 for a real box, 0.0 for padding (ultralytics `mask_gt = bboxes.sum(-1) > 0`).
    pub mask: Tensor<B, 2>,
}

impl<B: Backend> GtBoxes<B> {
    /// `G`, the padded number of boxes per image.
    pub fn max_boxes(&self) -> usize {
        self.bboxes.dims()[1]
    }
}

/// Result of [`TaskAlignedAssigner::assign`] (ultralytics `_forward` returns, same layouts).
#[derive(Debug, Clone)]
pub struct Assignment<B: Backend> {
    /// `[B, A]` assigned class id (0 where background).
    pub target_labels: Tensor<B, 2, Int>,
    /// `[B, A, 4]` xyxy pixels of the assigned GT (GT slot 0's box where background, zeros if `G == 0`).
    pub target_bboxes: Tensor<B, 3>,
    /// `[B, A, C]` one-hot × normalised alignment metric (zero rows for background).
    pub target_scores: Tensor<B, 3>,
    /// `[B, A]` 1.0 for foreground anchors, else 0.0.
    pub fg_mask: Tensor<B, 2>,
    /// `[B, A]` index of the assigned GT slot (0 where background).
    pub target_gt_idx: Tensor<B, 2, Int>,
}

/// ultralytics `TaskAlignedAssigner(topk, num_classes, alpha=0.5, beta=6.0, stride=[8,16,32], eps=1e-9, topk2)`.
#[derive(Debug, Clone)]
pub struct TaskAlignedAssigner {
    pub topk: usize,
    /// Second top-k per GT after conflict resolution (one2one: 1); equal to `topk` means off.
    pub topk2: usize,
    pub num_classes: usize,
    pub alpha: f64,
    pub beta: f64,
    pub eps: f64,
    /// STAL: GT sides shorter than this (pixels; ultralytics `stride[1]`) are enlarged to it for the centre test.
    pub stride_val: f64,
}

impl TaskAlignedAssigner {
    /// `topk2 = None` means `topk` (ultralytics `topk2 or topk`).
    pub fn new(topk: usize, topk2: Option<usize>, num_classes: usize) -> Self {
        TaskAlignedAssigner {
            topk,
            topk2: topk2.unwrap_or(topk),
            num_classes,
            alpha: 0.5,
            beta: 6.0,
            eps: 1e-9,
            stride_val: 16.0,
        }
    }

    /// Assigns targets.
    /// * `pd_scores` `[B, A, C]` sigmoid scores, `pd_bboxes` `[B, A, 4]` xyxy pixels (both detached here),
    /// * `anc_points` `[A, 2]` anchor centres in pixels, `gt` padded ground truth.
    pub fn assign<B: TrainBackend>(
        &self,
        pd_scores: Tensor<B, 3>,
        pd_bboxes: Tensor<B, 3>,
        anc_points: Tensor<B, 2>,
        gt: &GtBoxes<B>,
    ) -> Assignment<B> {
        let (pd_scores, pd_bboxes, anc_points) = (pd_scores.detach(), pd_bboxes.detach(), anc_points.detach());
        let [b, a, c] = pd_scores.dims();
        let g = gt.max_boxes();
        let device = pd_scores.device();
        if g == 0 {
            return Assignment {
                target_labels: Tensor::zeros([b, a], &device),
                target_bboxes: Tensor::zeros([b, a, 4], &device),
                target_scores: Tensor::zeros([b, a, c], &device),
                fg_mask: Tensor::zeros([b, a], &device),
                target_gt_idx: Tensor::zeros([b, a], &device),
            };
        }
        let gt_bboxes = gt.bboxes.clone().detach();
        let mask_gt: Tensor<B, 3> = gt.mask.clone().detach().unsqueeze_dim(2); // [B, G, 1]

        // get_pos_mask
        let mask_in_gts = self.candidates_in_gts(anc_points, gt_bboxes.clone(), mask_gt.clone()); // [B, G, A]
        let valid = mask_in_gts.clone() * mask_gt.clone();
        let (align_metric, overlaps) = self.box_metrics(pd_scores, pd_bboxes, gt, valid); // [B, G, A] each
        let mask_topk = scatter_ones(topk_indices(align_metric.clone(), self.topk), 2, [b, g, a]);
        let mask_pos = mask_topk * mask_in_gts * mask_gt;

        // select_highest_overlaps: anchors claimed by several GTs keep the GT of highest overlap
        let fg = mask_pos.clone().sum_dim(1); // [B, 1, A]
        let multi = fg.greater_elem(1.0).expand([b, g, a]);
        let is_max = scatter_ones(overlaps.clone().argmax(1), 1, [b, g, a]);
        let mut mask_pos = mask_pos.mask_where(multi, is_max);
        if self.topk2 != self.topk {
            let m = align_metric.clone() * mask_pos.clone();
            let idx = if self.topk2 == 1 { m.argmax(2) } else { topk_indices(m, self.topk2) };
            mask_pos = mask_pos * scatter_ones(idx, 2, [b, g, a]);
        }
        // at most one positive per anchor now: the column sum is the fg flag, the weighted sum the GT slot
        let fg_mask: Tensor<B, 2> = mask_pos.clone().sum_dim(1).squeeze_dim(1); // [B, A]
        let slots = Tensor::<B, 1, Int>::arange(0..g as i64, &device).float().reshape([1, g, 1]);
        let target_gt_idx: Tensor<B, 2, Int> = (mask_pos.clone() * slots).sum_dim(1).squeeze_dim::<2>(1).int();

        // get_targets
        let target_labels = gt.labels.clone().gather(1, target_gt_idx.clone()); // [B, A]
        let target_bboxes = gt_bboxes.gather(1, target_gt_idx.clone().unsqueeze_dim::<3>(2).expand([b, a, 4]));
        let classes = Tensor::<B, 1, Int>::arange(0..c as i64, &device).reshape([1, 1, c]);
        let one_hot = target_labels.clone().unsqueeze_dim::<3>(2).expand([b, a, c]).equal(classes.expand([b, a, c]));
        let target_scores = one_hot.float() * fg_mask.clone().unsqueeze_dim(2);

        // normalise: metric × (max IoU of the GT's positives) / (max metric of the GT's positives), max over GTs
        let align = align_metric * mask_pos.clone();
        let pos_align = align.clone().max_dim(2); // [B, G, 1]
        let pos_overlaps = (overlaps * mask_pos).max_dim(2);
        let norm = (align * pos_overlaps / (pos_align + self.eps)).max_dim(1); // [B, 1, A]
        let target_scores = target_scores * norm.swap_dims(1, 2);

        Assignment { target_labels, target_bboxes, target_scores, fg_mask, target_gt_idx }
    }

    /// `select_candidates_in_gts`: `[B, G, A]` 1.0 where the anchor centre lies strictly inside the GT box whose
    /// sides shorter than `stride_val` were enlarged to `stride_val` about its centre (valid GTs only).
    fn candidates_in_gts<B: Backend>(
        &self,
        anc: Tensor<B, 2>,
        gt: Tensor<B, 3>,
        mask_gt: Tensor<B, 3>,
    ) -> Tensor<B, 3> {
        let [b, g, _] = gt.dims();
        let a = anc.dims()[0];
        let (x1, y1) = (gt.clone().narrow(2, 0, 1), gt.clone().narrow(2, 1, 1));
        let (x2, y2) = (gt.clone().narrow(2, 2, 1), gt.narrow(2, 3, 1));
        let (cx, cy) = ((x1.clone() + x2.clone()) / 2.0, (y1.clone() + y2.clone()) / 2.0);
        let stal = |side: Tensor<B, 3>| {
            let small = (side.clone().lower_elem(self.stride_val).float() * mask_gt.clone()).bool();
            side.mask_fill(small, self.stride_val)
        };
        let (w, h) = (stal(x2 - x1), stal(y2 - y1));
        let (lx, ly) = (cx.clone() - w.clone() / 2.0, cy.clone() - h.clone() / 2.0);
        let (rx, ry) = (cx + w / 2.0, cy + h / 2.0);
        let ax = anc.clone().narrow(1, 0, 1).reshape([1, 1, a]);
        let ay = anc.narrow(1, 1, 1).reshape([1, 1, a]);
        let gt_side = |t: Tensor<B, 3>| t.expand([b, g, a]);
        let inside = |d: Tensor<B, 3>| d.greater_elem(self.eps).float();
        inside(ax.clone().expand([b, g, a]) - gt_side(lx))
            * inside(ay.clone().expand([b, g, a]) - gt_side(ly))
            * inside(gt_side(rx) - ax.expand([b, g, a]))
            * inside(gt_side(ry) - ay.expand([b, g, a]))
    }

    /// `get_box_metrics`: alignment metric `s^α · CIoU^β` and overlaps `CIoU.clamp(0)` on the `valid` pairs,
    /// zero elsewhere (`[B, G, A]` each). `s` = predicted score of the GT's class at the anchor.
    fn box_metrics<B: TrainBackend>(
        &self,
        pd_scores: Tensor<B, 3>,
        pd_bboxes: Tensor<B, 3>,
        gt: &GtBoxes<B>,
        valid: Tensor<B, 3>,
    ) -> (Tensor<B, 3>, Tensor<B, 3>) {
        let [b, g, a] = valid.dims();
        let labels = gt.labels.clone().clamp(0, self.num_classes as i64 - 1);
        let scores = pd_scores.swap_dims(1, 2).gather(1, labels.unsqueeze_dim::<3>(2).expand([b, g, a])); // [B, G, A]

        // bbox_iou(gt, pd, CIoU=True) over all pairs, one fused kernel pass (`1 − ciou_loss`)
        let m = b * g * a;
        let gt4 = gt.bboxes.clone().detach().unsqueeze_dim::<4>(2).expand([b, g, a, 4]).reshape([m, 4]);
        let pd4 = pd_bboxes.unsqueeze_dim::<4>(1).expand([b, g, a, 4]).reshape([m, 4]);
        let ciou = ciou_loss(gt4, pd4).neg() + 1.0;
        let overlaps = ciou.reshape([b, g, a]).clamp_min(0.0) * valid.clone();
        let align = scores.powf_scalar(self.alpha) * overlaps.clone().powf_scalar(self.beta) * valid;
        (align, overlaps)
    }
}

/// Indices of the `k` largest values along the last dim, descending (ties in any order). CubeCL backends have a
/// device top-k reduction (it needs `k` smaller than the axis); Flex has no `argtopk`, so it sorts.
fn topk_indices<B: Backend>(x: Tensor<B, 3>, k: usize) -> Tensor<B, 3, Int> {
    let n = x.dims()[2];
    if k < n && B::name(&x.device()).contains("cubecl") {
        x.argtopk(k, 2)
    } else {
        x.argsort_descending(2).narrow(2, 0, k.min(n))
    }
}

/// Zeros of `shape` with 1.0 scattered at `idx` along `dim` (distinct indices per row assumed).
fn scatter_ones<B: Backend>(idx: Tensor<B, 3, Int>, dim: usize, shape: [usize; 3]) -> Tensor<B, 3> {
    let device = idx.device();
    let ones = Tensor::ones(idx.dims(), &device);
    Tensor::zeros(shape, &device).scatter(dim, idx, ones, IndexingUpdateOp::Add)
}
