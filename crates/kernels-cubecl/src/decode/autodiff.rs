//! [`DetectDecodeBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step
//! keeps the anchors (a constant `[3, A]` tensor, no gradient) and calls the inner
//! `detect_decode_backward`. `detect_decode_backward` on `Autodiff` itself is not differentiable.
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::backend::DetectDecodeBackend;
use super::BoxFormat;

#[derive(Debug)]
struct DetectDecodeBackward;

impl<B: DetectDecodeBackend> Backward<B, 1> for DetectDecodeBackward {
    /// The anchors (inner primitive) and the format.
    type State = (FloatTensor<B>, BoxFormat);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let (anchors, format) = ops.state;
        let d_boxes = grads.consume::<B>(&ops.node);
        let [dist_node] = ops.parents;
        if let Some(node) = dist_node {
            grads.register::<B>(node.id, B::detect_decode_backward(anchors, d_boxes, format));
        }
    }
}

impl<B: DetectDecodeBackend, C: CheckpointStrategy> DetectDecodeBackend for Autodiff<B, C> {
    fn detect_decode_forward(
        dist: FloatTensor<Self>,
        anchors: FloatTensor<Self>,
        format: BoxFormat,
    ) -> FloatTensor<Self> {
        // Only `dist` is a parent: the anchors are constants (their gradient is never computed).
        match DetectDecodeBackward.prepare::<C>([dist.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let anchors = anchors.primitive;
                let out = B::detect_decode_forward(dist.primitive, anchors.clone(), format);
                prep.finish((anchors, format), out)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::detect_decode_forward(dist.primitive, anchors.primitive, format))
            }
        }
    }

    fn detect_decode_backward(
        anchors: FloatTensor<Self>,
        d_boxes: FloatTensor<Self>,
        format: BoxFormat,
    ) -> FloatTensor<Self> {
        FloatTensor::<Self>::new(B::detect_decode_backward(anchors.primitive, d_boxes.primitive, format))
    }
}
