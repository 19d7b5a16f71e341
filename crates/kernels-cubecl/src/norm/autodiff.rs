//! [`NormBackend`] for [`Autodiff`]: the inner forward, and one backward step for `x`, `γ` and `β` (the inner
//! backend's [`NormBackend::batch_norm_train_backward`]); the statistics are outputs without gradient.
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::{BatchNormSpec, NormBackend};
use crate::autodiff_util::{constant, differentiable_with};

impl<B: NormBackend, C: CheckpointStrategy> NormBackend for Autodiff<B, C> {
    fn batch_norm_train(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        spec: BatchNormSpec,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (y, (mean, var)) = differentiable_with::<B, C, _, _, 3>(
            [x, gamma, beta],
            |[x, g, b]| {
                let (y, mean, var) = B::batch_norm_train(x.clone(), g.clone(), b.clone(), spec);
                // the backward needs the input and the statistics only (not the output or any intermediate)
                (y, (x, g, b, mean.clone(), var.clone(), spec), (mean, var))
            },
            |(x, g, b, mean, var, spec), dy, _needs| {
                let (dx, dg, db) = B::batch_norm_train_backward(x, g, b, mean, var, dy, spec);
                [Some(dx), Some(dg), Some(db)]
            },
        );
        (y, constant(mean), constant(var))
    }

    fn batch_norm_train_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        var: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        spec: BatchNormSpec,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (dx, dg, db) = B::batch_norm_train_backward(
            x.primitive,
            gamma.primitive,
            beta.primitive,
            mean.primitive,
            var.primitive,
            dy.primitive,
            spec,
        );
        (constant(dx), constant(dg), constant(db))
    }
}
