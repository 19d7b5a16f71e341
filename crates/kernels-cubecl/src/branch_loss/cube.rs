//! [`BranchLossBackend`] for [`CubeBackend`]: the kernels of `kernels-cubecl` launched directly, no Burn
//! tensor op in between. Forward (5 launches): the assigner (metrics with the box decode inlined, top-k,
//! then resolve, GT statistics and targets in one kernel, which also gathers the labels), the fused box + one-hot
//! BCE anchor pass (block partial sums) and the items kernel (final sums, normalisation, gains, the branch
//! weight). Backward (1 launch): the anchor-pass backward, the items scaling folded in. The raw head outputs
//! and the anchor grid are read in place (strided / pitched), so nothing is copied. Other cases (F64, no GT
//! slot, an empty batch, a top-k the kernels do not take) run the default composition.
use super::kernels::det_loss::{forward_split, launch_det_loss_backward, launch_det_loss_forward, AnchorPass};
use super::kernels::loss_items::{launch_loss_items_forward, ItemsOut};
use crate::cube_util::{empty, f32_rows, tight_as};
use crate::tal::cube::assign_raw;
use crate::topk::kernels::chunk_for;
use burn::tensor::{ops::IntTensor, DType, IntDType, Shape};
use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::{compose, compose_backward, BranchConfig, BranchLossBackend, BranchPrims, BranchSaved};

/// Whether the kernel path takes this branch (else the default composition runs).
fn kernel_path<R: CubeRuntime>(scores: &CubeTensor<R>, gt_boxes: &CubeTensor<R>, cfg: &BranchConfig) -> bool {
    let [b, _, a] = scores.meta.shape().dims::<3>();
    let tal = cfg.tal;
    scores.dtype != DType::F64
        && b * a > 0
        && gt_boxes.meta.shape()[1] > 0
        && (tal.topk2 == tal.topk || tal.one2one())
        && chunk_for(tal.topk).is_some()
        && tal.topk <= a
}

impl<R, F, I, BT> BranchLossBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn branch_loss(
        boxes: CubeTensor<R>,
        scores: CubeTensor<R>,
        grid: CubeTensor<R>,
        gt_boxes: CubeTensor<R>,
        gt_labels: IntTensor<Self>,
        gt_mask: CubeTensor<R>,
        cfg: BranchConfig,
        int_dtype: IntDType,
    ) -> BranchPrims<Self> {
        if !kernel_path(&scores, &gt_boxes, &cfg) {
            return compose::<Self>(boxes, scores, grid, gt_boxes, gt_labels, gt_mask, cfg, int_dtype);
        }
        let dtype = scores.dtype;
        let [b, _c, a] = scores.meta.shape().dims::<3>();
        let grid = f32_rows(grid);
        let gt_boxes = tight_as(gt_boxes, DType::F32);
        let [gt_idx, fg, score_sum, labels] = assign_raw(
            scores.clone(),
            boxes.clone(),
            grid.clone(),
            gt_boxes.clone(),
            gt_labels,
            gt_mask,
            cfg.tal,
            int_dtype.into(),
        );
        let pass = AnchorPass {
            dist: &boxes,
            logits: &scores,
            anchors: &grid,
            gt_boxes: &gt_boxes,
            gt_idx: &gt_idx,
            labels: &labels,
            score: &score_sum,
            image: cfg.image,
        };
        let (_, chunks) = forward_split(b, a);
        let box_partial = empty(&scores, Shape::new([b, chunks, 3]), DType::F32);
        let cls_partial = empty(&scores, Shape::new([b, chunks]), DType::F32);
        launch_det_loss_forward(pass, &box_partial, &cls_partial);
        let total = empty(&scores, Shape::new([1]), dtype);
        let items = empty(&scores, Shape::new([3]), dtype);
        let terms = empty(&scores, Shape::new([3]), dtype);
        let w_sum = empty(&scores, Shape::new([1]), dtype);
        let out = ItemsOut { items: &items, w_sum: &w_sum, total: &total, terms: &terms };
        launch_loss_items_forward(&box_partial, &cls_partial, out, cfg.batch_gains(b), cfg.mix);
        BranchPrims { total, items, terms, w_sum, gt_idx, fg, score_sum, labels }
    }

    fn branch_loss_backward(
        boxes: CubeTensor<R>,
        scores: CubeTensor<R>,
        saved: BranchSaved<Self>,
        d_total: CubeTensor<R>,
        cfg: BranchConfig,
    ) -> (CubeTensor<R>, CubeTensor<R>) {
        if !kernel_path(&scores, &saved.gt_boxes, &cfg) {
            return compose_backward::<Self>(boxes, scores, saved, d_total, cfg);
        }
        let dtype = scores.dtype;
        let b = scores.meta.shape()[0];
        let d_total = tight_as(d_total, dtype);
        let w_sum = tight_as(saved.w_sum, dtype);
        let grid = f32_rows(saved.grid);
        let gt_boxes = tight_as(saved.gt_boxes, DType::F32);
        let (idx_dtype, labels_dtype) = (saved.gt_idx.dtype, saved.labels.dtype);
        let gt_idx = tight_as(saved.gt_idx, idx_dtype);
        let labels = tight_as(saved.labels, labels_dtype);
        let score_sum = tight_as(saved.score_sum, dtype);
        let pass = AnchorPass {
            dist: &boxes,
            logits: &scores,
            anchors: &grid,
            gt_boxes: &gt_boxes,
            gt_idx: &gt_idx,
            labels: &labels,
            score: &score_sum,
            image: cfg.image,
        };
        let d_boxes = empty(&boxes, boxes.meta.shape().clone(), dtype);
        let d_scores = empty(&scores, scores.meta.shape().clone(), dtype);
        launch_det_loss_backward(pass, &w_sum, &d_total, &d_boxes, &d_scores, cfg.batch_gains(b), cfg.mix);
        (d_boxes, d_scores)
    }
}
