//! [`CiouLossBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step keeps
//! `pred`, `target` and the forward's `alpha` and calls the inner `ciou_loss_backward`. `alpha` is returned
//! untracked (ultralytics computes it under `torch.no_grad()`).
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::CiouLossBackend;
use crate::autodiff_util::{constant, differentiable_with};

impl<B: CiouLossBackend, C: CheckpointStrategy> CiouLossBackend for Autodiff<B, C> {
    fn ciou_loss_forward(pred: FloatTensor<Self>, target: FloatTensor<Self>) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let (loss, alpha) = differentiable_with::<B, C, _, _, 2>(
            [pred, target],
            |[p, t]| {
                let (loss, alpha) = B::ciou_loss_forward(p.clone(), t.clone());
                (loss, (p, t, alpha.clone()), alpha)
            },
            // both boxes get the CIoU gradient; alpha is the constant aspect-ratio weight of the forward
            |(p, t, alpha), d_loss, _| {
                let (d_pred, d_target) = B::ciou_loss_backward(p, t, alpha, d_loss);
                [Some(d_pred), Some(d_target)]
            },
        );
        (loss, constant(alpha))
    }

    fn ciou_loss_backward(
        pred: FloatTensor<Self>,
        target: FloatTensor<Self>,
        alpha: FloatTensor<Self>,
        d_loss: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let (gp, gt) = B::ciou_loss_backward(pred.primitive, target.primitive, alpha.primitive, d_loss.primitive);
        (constant(gp), constant(gt))
    }
}
