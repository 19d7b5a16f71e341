//! [`CiouLossBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step keeps
//! `pred`, `target` (checkpointed) and the forward's `alpha` (state) and calls the inner
//! `ciou_loss_backward`. `alpha` is returned untracked (ultralytics computes it under `torch.no_grad()`).
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    NodeId,
};
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::backend::CiouLossBackend;

#[derive(Debug)]
struct CiouLossBackward;

impl<B: CiouLossBackend> Backward<B, 2> for CiouLossBackward {
    /// `(pred, target)` checkpoint ids and the forward's `alpha`.
    type State = (NodeId, NodeId, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let (pred_id, target_id, alpha) = ops.state;
        let pred = checkpointer.retrieve_node_output::<FloatTensor<B>>(pred_id);
        let target = checkpointer.retrieve_node_output::<FloatTensor<B>>(target_id);
        let d_loss = grads.consume::<B>(&ops.node);
        let (d_pred, d_target) = B::ciou_loss_backward(pred, target, alpha, d_loss);
        let [pred_node, target_node] = ops.parents;
        if let Some(node) = pred_node {
            grads.register::<B>(node.id, d_pred);
        }
        if let Some(node) = target_node {
            grads.register::<B>(node.id, d_target);
        }
    }
}

impl<B: CiouLossBackend, C: CheckpointStrategy> CiouLossBackend for Autodiff<B, C> {
    fn ciou_loss_forward(pred: FloatTensor<Self>, target: FloatTensor<Self>) -> (FloatTensor<Self>, FloatTensor<Self>) {
        match CiouLossBackward.prepare::<C>([pred.node.clone(), target.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let pred_id = prep.checkpoint(&pred);
                let target_id = prep.checkpoint(&target);
                let (loss, alpha) = B::ciou_loss_forward(pred.primitive, target.primitive);
                let loss = prep.finish((pred_id, target_id, alpha.clone()), loss);
                (loss, FloatTensor::<Self>::new(alpha))
            }
            OpsKind::UnTracked(prep) => {
                let (loss, alpha) = B::ciou_loss_forward(pred.primitive, target.primitive);
                (prep.finish(loss), FloatTensor::<Self>::new(alpha))
            }
        }
    }

    fn ciou_loss_backward(
        pred: FloatTensor<Self>,
        target: FloatTensor<Self>,
        alpha: FloatTensor<Self>,
        d_loss: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let (gp, gt) = B::ciou_loss_backward(pred.primitive, target.primitive, alpha.primitive, d_loss.primitive);
        (FloatTensor::<Self>::new(gp), FloatTensor::<Self>::new(gt))
    }
}
