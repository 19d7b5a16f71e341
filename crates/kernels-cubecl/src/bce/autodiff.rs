//! [`BceWithLogitsBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step
//! keeps `logits` (checkpointed) and the targets (state, a constant) and calls the inner
//! `bce_with_logits_backward`. Only the logits are a parent node: **no gradient flows to the targets**.
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    NodeId,
};
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::backend::BceWithLogitsBackend;

#[derive(Debug)]
struct BceWithLogitsBackward;

impl<B: BceWithLogitsBackend> Backward<B, 1> for BceWithLogitsBackward {
    /// The logits' checkpoint id and the targets (inner primitive).
    type State = (NodeId, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let (logits_id, targets) = ops.state;
        let logits = checkpointer.retrieve_node_output::<FloatTensor<B>>(logits_id);
        let d_loss = grads.consume::<B>(&ops.node);
        let [logits_node] = ops.parents;
        if let Some(node) = logits_node {
            grads.register::<B>(node.id, B::bce_with_logits_backward(logits, targets, d_loss));
        }
    }
}

impl<B: BceWithLogitsBackend, C: CheckpointStrategy> BceWithLogitsBackend for Autodiff<B, C> {
    fn bce_with_logits_forward(logits: FloatTensor<Self>, targets: FloatTensor<Self>) -> FloatTensor<Self> {
        match BceWithLogitsBackward.prepare::<C>([logits.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let logits_id = prep.checkpoint(&logits);
                let targets = targets.primitive;
                let loss = B::bce_with_logits_forward(logits.primitive, targets.clone());
                prep.finish((logits_id, targets), loss)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::bce_with_logits_forward(logits.primitive, targets.primitive)),
        }
    }

    fn bce_with_logits_backward(
        logits: FloatTensor<Self>,
        targets: FloatTensor<Self>,
        d_loss: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        FloatTensor::<Self>::new(B::bce_with_logits_backward(logits.primitive, targets.primitive, d_loss.primitive))
    }
}
