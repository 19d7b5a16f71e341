//! [`BranchLossBackend`] for [`Autodiff`]: the forward runs on the inner backend (one node, parents `boxes`
//! and `scores`); the backward step is one call of the inner `branch_loss_backward` with the upstream
//! gradient of `total`. The items, terms, assignment outputs and `w_sum` are returned untracked.
use crate::autodiff_util::{constant, differentiable_with};
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::{
    ops::{FloatTensor, IntTensor},
    IntDType,
};

use super::{BranchConfig, BranchLossBackend, BranchPrims, BranchSaved};

impl<B: BranchLossBackend, C: CheckpointStrategy> BranchLossBackend for Autodiff<B, C> {
    fn branch_loss(
        boxes: FloatTensor<Self>,
        scores: FloatTensor<Self>,
        grid: FloatTensor<Self>,
        gt_boxes: FloatTensor<Self>,
        gt_labels: IntTensor<Self>,
        gt_mask: FloatTensor<Self>,
        cfg: BranchConfig,
        int_dtype: IntDType,
    ) -> BranchPrims<Self> {
        let (grid, gt_boxes, gt_mask) = (grid.primitive, gt_boxes.primitive, gt_mask.primitive);
        let (total, out) = differentiable_with::<B, C, _, _, 2>(
            [boxes, scores],
            |[bx, sc]| {
                let out = B::branch_loss(
                    bx.clone(),
                    sc.clone(),
                    grid.clone(),
                    gt_boxes.clone(),
                    gt_labels,
                    gt_mask,
                    cfg,
                    int_dtype,
                );
                // what the backward reads: the assignment and the per-image normalisers of this forward
                let saved = BranchSaved {
                    grid,
                    gt_boxes,
                    gt_idx: out.gt_idx.clone(),
                    labels: out.labels.clone(),
                    score_sum: out.score_sum.clone(),
                    w_sum: out.w_sum.clone(),
                };
                (out.total.clone(), (bx, sc, saved, cfg), out)
            },
            // one backward launch: d boxes (box CIoU + L1 through the decode) and d scores (one-hot BCE)
            |(bx, sc, saved, cfg), d_total, _| {
                let (d_boxes, d_scores) = B::branch_loss_backward(bx, sc, saved, d_total, cfg);
                [Some(d_boxes), Some(d_scores)]
            },
        );
        BranchPrims {
            total,
            items: constant(out.items),
            terms: constant(out.terms),
            w_sum: constant(out.w_sum),
            gt_idx: out.gt_idx,
            fg: constant(out.fg),
            score_sum: constant(out.score_sum),
            labels: out.labels,
        }
    }
}
