//! [`BranchLossBackend`] for [`Autodiff`]: the forward runs on the inner backend (one node, parents `boxes`
//! and `scores`); the backward step is one call of the inner `branch_loss_backward` with the upstream
//! gradient of `total`. The items, terms, assignment outputs and `w_sum` are returned untracked.
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    NodeId,
};
use burn::backend::Autodiff;
use burn::tensor::{
    ops::{FloatTensor, IntTensor},
    IntDType,
};

use super::{BranchConfig, BranchLossBackend, BranchPrims, BranchSaved};

#[derive(Debug)]
struct BranchBackward;

type State<B> = (NodeId, NodeId, BranchSaved<B>, BranchConfig);

impl<B: BranchLossBackend> Backward<B, 2> for BranchBackward {
    type State = State<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let (boxes_id, scores_id, saved, cfg) = ops.state;
        let d_total = grads.consume::<B>(&ops.node);
        let [boxes_node, scores_node] = ops.parents;
        let boxes = checkpointer.retrieve_node_output::<FloatTensor<B>>(boxes_id);
        let scores = checkpointer.retrieve_node_output::<FloatTensor<B>>(scores_id);
        let (d_boxes, d_scores) = B::branch_loss_backward(boxes, scores, saved, d_total, cfg);
        if let Some(node) = boxes_node {
            grads.register::<B>(node.id, d_boxes);
        }
        if let Some(node) = scores_node {
            grads.register::<B>(node.id, d_scores);
        }
    }
}

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
        let prep = BranchBackward.prepare::<C>([boxes.node.clone(), scores.node.clone()]).compute_bound().stateful();
        let untracked = |out: BranchPrims<B>, total: FloatTensor<Self>| BranchPrims {
            total,
            items: FloatTensor::<Self>::new(out.items),
            terms: FloatTensor::<Self>::new(out.terms),
            w_sum: FloatTensor::<Self>::new(out.w_sum),
            gt_idx: out.gt_idx,
            fg: FloatTensor::<Self>::new(out.fg),
            score_sum: FloatTensor::<Self>::new(out.score_sum),
            labels: out.labels,
        };
        match prep {
            OpsKind::Tracked(mut prep) => {
                let boxes_id = prep.checkpoint(&boxes);
                let scores_id = prep.checkpoint(&scores);
                let out = B::branch_loss(
                    boxes.primitive,
                    scores.primitive,
                    grid.clone(),
                    gt_boxes.clone(),
                    gt_labels,
                    gt_mask,
                    cfg,
                    int_dtype,
                );
                let saved = BranchSaved {
                    grid,
                    gt_boxes,
                    gt_idx: out.gt_idx.clone(),
                    labels: out.labels.clone(),
                    score_sum: out.score_sum.clone(),
                    w_sum: out.w_sum.clone(),
                };
                let total = prep.finish((boxes_id, scores_id, saved, cfg), out.total.clone());
                untracked(out, total)
            }
            OpsKind::UnTracked(prep) => {
                let out = B::branch_loss(
                    boxes.primitive,
                    scores.primitive,
                    grid,
                    gt_boxes,
                    gt_labels,
                    gt_mask,
                    cfg,
                    int_dtype,
                );
                let total = prep.finish(out.total.clone());
                untracked(out, total)
            }
        }
    }
}
