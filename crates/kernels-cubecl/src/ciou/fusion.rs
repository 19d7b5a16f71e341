//! [`CiouLossBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream.
use burn::tensor::{DType, Shape};
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::cube::check_shapes;
use super::CiouLossBackend;
use crate::fusion_util::{custom_op, Prim};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

impl<B: FusionBackend + CiouLossBackend> CiouLossBackend for Fusion<B> {
    fn ciou_loss_forward(pred: T<B>, target: T<B>) -> (T<B>, T<B>) {
        check_shapes(pred.shape.as_slice(), target.shape.as_slice());
        let m = Shape::new([pred.shape[0]]);
        // the reference path keeps F64 alpha for F64 inputs; the kernels always give F32
        let alpha_dtype = if pred.dtype == DType::F64 { DType::F64 } else { DType::F32 };
        let outs = [(m.clone(), pred.dtype), (m, alpha_dtype)];
        let [loss, alpha] = custom_op::<B, 2, 2>("ciou_loss_forward", [pred, target], outs, |[p, t]| {
            let (l, a) = B::ciou_loss_forward(p.float(), t.float());
            [Prim::Float(l), Prim::Float(a)]
        });
        (loss, alpha)
    }

    fn ciou_loss_backward(pred: T<B>, target: T<B>, alpha: T<B>, d_loss: T<B>) -> (T<B>, T<B>) {
        check_shapes(pred.shape.as_slice(), target.shape.as_slice());
        let out = (pred.shape.clone(), pred.dtype);
        let inputs = [pred, target, alpha, d_loss];
        let [d_pred, d_target] =
            custom_op::<B, 4, 2>("ciou_loss_backward", inputs, [out.clone(), out], |[p, t, a, g]| {
                let (gp, gt) = B::ciou_loss_backward(p.float(), t.float(), a.float(), g.float());
                [Prim::Float(gp), Prim::Float(gt)]
            });
        (d_pred, d_target)
    }
}
