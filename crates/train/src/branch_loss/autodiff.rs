//! [`BranchLossBackend`] for [`Autodiff`]: the forward runs on the inner backend (one node, parents `boxes`
//! and `scores`); the backward step calls the inner box-loss backward with the first three entries of the
//! upstream gradient (the `Σ w` entry has no effect: weights are constants) and the one-hot BCE backward with
//! the fourth. The assignment outputs are returned untracked.
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    NodeId,
};
use burn::backend::Autodiff;
use burn::prelude::*;
use burn::tensor::{
    ops::{FloatTensor, IntTensor},
    IntDType, TensorPrimitive,
};

use super::{BranchConfig, BranchLossBackend, BranchPrims};

#[derive(Debug)]
struct BranchBackward;

/// `(boxes, scores)` node ids, then `grid`, `gt_boxes`, `gt_idx`, `labels`, `score_sum`, the image size.
type State<B> = (NodeId, NodeId, FloatTensor<B>, FloatTensor<B>, IntTensor<B>, IntTensor<B>, FloatTensor<B>, [f32; 2]);

impl<B: BranchLossBackend> Backward<B, 2> for BranchBackward {
    type State = State<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let (boxes_id, scores_id, grid, gt_boxes, gt_idx, labels, score_sum, image) = ops.state;
        let d_sums: Tensor<B, 1> = Tensor::from_primitive(TensorPrimitive::Float(grads.consume::<B>(&ops.node)));
        let [boxes_node, scores_node] = ops.parents;
        if let Some(node) = boxes_node {
            let boxes = checkpointer.retrieve_node_output::<FloatTensor<B>>(boxes_id);
            let d = d_sums.clone().narrow(0, 0, 3).into_primitive().tensor();
            let d_boxes = B::bbox_loss_backward(boxes, grid, gt_boxes, gt_idx, score_sum.clone(), image, d);
            grads.register::<B>(node.id, d_boxes);
        }
        if let Some(node) = scores_node {
            let scores = checkpointer.retrieve_node_output::<FloatTensor<B>>(scores_id);
            let d = d_sums.narrow(0, 3, 1).into_primitive().tensor();
            grads.register::<B>(node.id, B::bce_onehot_backward(scores, labels, score_sum, d));
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
        let run = |boxes, scores, grid: FloatTensor<B>, gt_boxes: FloatTensor<B>| {
            B::branch_loss(boxes, scores, grid, gt_boxes, gt_labels, gt_mask, cfg, int_dtype)
        };
        match prep {
            OpsKind::Tracked(mut prep) => {
                let boxes_id = prep.checkpoint(&boxes);
                let scores_id = prep.checkpoint(&scores);
                let out = run(boxes.primitive, scores.primitive, grid.clone(), gt_boxes.clone());
                let state = (
                    boxes_id,
                    scores_id,
                    grid,
                    gt_boxes,
                    out.gt_idx.clone(),
                    out.labels.clone(),
                    out.score_sum.clone(),
                    cfg.image,
                );
                let sums = prep.finish(state, out.sums);
                BranchPrims {
                    sums,
                    gt_idx: out.gt_idx,
                    fg: FloatTensor::<Self>::new(out.fg),
                    score_sum: FloatTensor::<Self>::new(out.score_sum),
                    labels: out.labels,
                }
            }
            OpsKind::UnTracked(prep) => {
                let out = run(boxes.primitive, scores.primitive, grid, gt_boxes);
                BranchPrims {
                    sums: prep.finish(out.sums),
                    gt_idx: out.gt_idx,
                    fg: FloatTensor::<Self>::new(out.fg),
                    score_sum: FloatTensor::<Self>::new(out.score_sum),
                    labels: out.labels,
                }
            }
        }
    }
}
