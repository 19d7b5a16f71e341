//! [`BceOneHotBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step keeps the
//! logits (checkpointed), the labels and the scores (state, constants) and calls the inner backward.
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    NodeId,
};
use burn::backend::Autodiff;
use burn::tensor::ops::{FloatTensor, IntTensor};

use super::BceOneHotBackend;

#[derive(Debug)]
struct BceOneHotBackward;

impl<B: BceOneHotBackend> Backward<B, 1> for BceOneHotBackward {
    type State = (NodeId, IntTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let (logits_id, labels, scores) = ops.state;
        let logits = checkpointer.retrieve_node_output::<FloatTensor<B>>(logits_id);
        let d_total = grads.consume::<B>(&ops.node);
        let [logits_node] = ops.parents;
        if let Some(node) = logits_node {
            grads.register::<B>(node.id, B::bce_onehot_backward(logits, labels, scores, d_total));
        }
    }
}

impl<B: BceOneHotBackend, C: CheckpointStrategy> BceOneHotBackend for Autodiff<B, C> {
    fn bce_onehot_sum(
        logits: FloatTensor<Self>,
        labels: IntTensor<Self>,
        scores: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        match BceOneHotBackward.prepare::<C>([logits.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let logits_id = prep.checkpoint(&logits);
                let scores = scores.primitive;
                let total = B::bce_onehot_sum(logits.primitive, labels.clone(), scores.clone());
                prep.finish((logits_id, labels, scores), total)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::bce_onehot_sum(logits.primitive, labels, scores.primitive)),
        }
    }

    fn bce_onehot_backward(
        logits: FloatTensor<Self>,
        labels: IntTensor<Self>,
        scores: FloatTensor<Self>,
        d_total: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        FloatTensor::<Self>::new(B::bce_onehot_backward(logits.primitive, labels, scores.primitive, d_total.primitive))
    }
}
