//! [`BranchLossBackend`] for [`Fusion`]: the forward and the backward of a branch are each one opaque custom
//! op of the fusion stream (`crate::fusion_util`); the config travels in the ops' closures.
use crate::fusion_util::{custom_op, Prim};
use burn::tensor::{DType, IntDType, Shape};
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::{BranchConfig, BranchLossBackend, BranchPrims, BranchSaved};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

impl<B: FusionBackend + BranchLossBackend> BranchLossBackend for Fusion<B> {
    fn branch_loss(
        boxes: T<B>,
        scores: T<B>,
        grid: T<B>,
        gt_boxes: T<B>,
        gt_labels: T<B>,
        gt_mask: T<B>,
        cfg: BranchConfig,
        int_dtype: IntDType,
    ) -> BranchPrims<Self> {
        let (b, a, dtype) = (scores.shape[0], scores.shape[2], scores.dtype);
        let (one, three, ba) = (Shape::new([1]), Shape::new([3]), Shape::new([b, a]));
        let outs = [
            (one.clone(), dtype),
            (three.clone(), dtype),
            (three, dtype),
            (one, dtype),
            (ba.clone(), DType::from(int_dtype)),
            (ba.clone(), dtype),
            (ba.clone(), dtype),
            (ba, gt_labels.dtype),
        ];
        let inputs = [boxes, scores, grid, gt_boxes, gt_labels, gt_mask];
        let [total, items, terms, w_sum, gt_idx, fg, score_sum, labels] =
            custom_op::<B, 6, 8>("yolo26_branch_loss", inputs, outs, move |[bx, sc, gr, gb, gl, gm]| {
                let o = B::branch_loss(
                    bx.float(),
                    sc.float(),
                    gr.float(),
                    gb.float(),
                    gl.int(),
                    gm.float(),
                    cfg,
                    int_dtype,
                );
                let f = Prim::Float;
                [
                    f(o.total),
                    f(o.items),
                    f(o.terms),
                    f(o.w_sum),
                    Prim::Int(o.gt_idx),
                    f(o.fg),
                    f(o.score_sum),
                    Prim::Int(o.labels),
                ]
            });
        BranchPrims { total, items, terms, w_sum, gt_idx, fg, score_sum, labels }
    }

    fn branch_loss_backward(
        boxes: T<B>,
        scores: T<B>,
        saved: BranchSaved<Self>,
        d_total: T<B>,
        cfg: BranchConfig,
    ) -> (T<B>, T<B>) {
        let outs = [(boxes.shape.clone(), boxes.dtype), (scores.shape.clone(), scores.dtype)];
        let BranchSaved { grid, gt_boxes, gt_idx, labels, score_sum, w_sum } = saved;
        let inputs = [boxes, scores, grid, gt_boxes, gt_idx, labels, score_sum, w_sum, d_total];
        let [d_boxes, d_scores] = custom_op::<B, 9, 2>(
            "yolo26_branch_loss_backward",
            inputs,
            outs,
            move |[bx, sc, gr, gb, gi, l, ss, ws, g]| {
                let saved = BranchSaved::<B> {
                    grid: gr.float(),
                    gt_boxes: gb.float(),
                    gt_idx: gi.int(),
                    labels: l.int(),
                    score_sum: ss.float(),
                    w_sum: ws.float(),
                };
                let (db, ds) = B::branch_loss_backward(bx.float(), sc.float(), saved, g.float(), cfg);
                [Prim::Float(db), Prim::Float(ds)]
            },
        );
        (d_boxes, d_scores)
    }
}
