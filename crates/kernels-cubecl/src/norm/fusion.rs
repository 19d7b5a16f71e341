//! [`NormBackend`] for [`Fusion`]: each pass is one opaque custom op of the fusion stream (the inner backend's
//! kernels; outputs `y`/`dx` in `x`'s dtype, the `[C]` vectors in `γ`'s).
use burn::tensor::Shape;
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::{BatchNormSpec, NormBackend};
use crate::fusion_util::{custom_op, Prim};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

impl<B: FusionBackend + NormBackend> NormBackend for Fusion<B> {
    fn batch_norm_train(x: T<B>, gamma: T<B>, beta: T<B>, spec: BatchNormSpec) -> (T<B>, T<B>, T<B>) {
        let c = *x.shape.as_slice().last().expect("batch_norm_train: x has no axes");
        let vector = (Shape::new([c]), gamma.dtype);
        let out = [(x.shape.clone(), x.dtype), vector.clone(), vector];
        let [y, mean, var] = custom_op::<B, 3, 3>("batch_norm_train", [x, gamma, beta], out, move |[x, g, b]| {
            let (y, m, v) = B::batch_norm_train(x.float(), g.float(), b.float(), spec);
            [Prim::Float(y), Prim::Float(m), Prim::Float(v)]
        });
        (y, mean, var)
    }

    fn batch_norm_train_backward(
        x: T<B>,
        gamma: T<B>,
        beta: T<B>,
        mean: T<B>,
        var: T<B>,
        dy: T<B>,
        spec: BatchNormSpec,
    ) -> (T<B>, T<B>, T<B>) {
        let c = *x.shape.as_slice().last().expect("batch_norm_train_backward: x has no axes");
        let vector = (Shape::new([c]), gamma.dtype);
        let out = [(x.shape.clone(), x.dtype), vector.clone(), vector];
        let [dx, dg, db] = custom_op::<B, 6, 3>(
            "batch_norm_train_backward",
            [x, gamma, beta, mean, var, dy],
            out,
            move |[x, g, b, m, v, dy]| {
                let (dx, dg, db) = B::batch_norm_train_backward(
                    x.float(),
                    g.float(),
                    b.float(),
                    m.float(),
                    v.float(),
                    dy.float(),
                    spec,
                );
                [Prim::Float(dx), Prim::Float(dg), Prim::Float(db)]
            },
        );
        (dx, dg, db)
    }
}
