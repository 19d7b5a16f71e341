//! [`BboxLossBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step keeps
//! `dist` (checkpointed) and the constant inputs, and calls the inner backward.
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    NodeId,
};
use burn::backend::Autodiff;
use burn::tensor::ops::{FloatTensor, IntTensor};

use super::BboxLossBackend;

#[derive(Debug)]
struct BboxLossBackward;

type State<B> = (NodeId, FloatTensor<B>, FloatTensor<B>, IntTensor<B>, FloatTensor<B>, [f32; 2]);

impl<B: BboxLossBackend> Backward<B, 1> for BboxLossBackward {
    type State = State<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let (dist_id, anchors, gt_boxes, gt_idx, weight, image) = ops.state;
        let dist = checkpointer.retrieve_node_output::<FloatTensor<B>>(dist_id);
        let d_sums = grads.consume::<B>(&ops.node);
        let [dist_node] = ops.parents;
        if let Some(node) = dist_node {
            let d = B::bbox_loss_backward(dist, anchors, gt_boxes, gt_idx, weight, image, d_sums);
            grads.register::<B>(node.id, d);
        }
    }
}

impl<B: BboxLossBackend, C: CheckpointStrategy> BboxLossBackend for Autodiff<B, C> {
    fn bbox_loss_sums(
        dist: FloatTensor<Self>,
        anchors: FloatTensor<Self>,
        gt_boxes: FloatTensor<Self>,
        gt_idx: IntTensor<Self>,
        weight: FloatTensor<Self>,
        image: [f32; 2],
    ) -> FloatTensor<Self> {
        let (anchors, gt_boxes, weight) = (anchors.primitive, gt_boxes.primitive, weight.primitive);
        match BboxLossBackward.prepare::<C>([dist.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let dist_id = prep.checkpoint(&dist);
                let out = B::bbox_loss_sums(
                    dist.primitive,
                    anchors.clone(),
                    gt_boxes.clone(),
                    gt_idx.clone(),
                    weight.clone(),
                    image,
                );
                prep.finish((dist_id, anchors, gt_boxes, gt_idx, weight, image), out)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::bbox_loss_sums(dist.primitive, anchors, gt_boxes, gt_idx, weight, image))
            }
        }
    }

    fn bbox_loss_backward(
        dist: FloatTensor<Self>,
        anchors: FloatTensor<Self>,
        gt_boxes: FloatTensor<Self>,
        gt_idx: IntTensor<Self>,
        weight: FloatTensor<Self>,
        image: [f32; 2],
        d_sums: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        FloatTensor::<Self>::new(B::bbox_loss_backward(
            dist.primitive,
            anchors.primitive,
            gt_boxes.primitive,
            gt_idx,
            weight.primitive,
            image,
            d_sums.primitive,
        ))
    }
}
