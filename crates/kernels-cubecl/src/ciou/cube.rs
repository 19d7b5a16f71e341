//! [`CiouLossBackend`] for [`CubeBackend`]: contiguous inputs, fresh contiguous outputs, one kernel each way.
use burn::tensor::{DType, Shape};
use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use crate::cube_util::{empty, tight_as};

use super::kernels::{backward::launch_ciou_backward, forward::launch_ciou_forward};
use super::{reference_backward, reference_forward, CiouLossBackend};

impl<R, F, I, BT> CiouLossBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn ciou_loss_forward(pred: CubeTensor<R>, target: CubeTensor<R>) -> (CubeTensor<R>, CubeTensor<R>) {
        if pred.dtype == DType::F64 {
            // The kernels compute in f32; F64 boxes (and their F64 alpha) go through the reference.
            return reference_forward::<Self>(pred, target);
        }
        forward(pred, target)
    }

    fn ciou_loss_backward(
        pred: CubeTensor<R>,
        target: CubeTensor<R>,
        alpha: CubeTensor<R>,
        d_loss: CubeTensor<R>,
    ) -> (CubeTensor<R>, CubeTensor<R>) {
        if pred.dtype == DType::F64 {
            return reference_backward::<Self>(pred, target, alpha, d_loss);
        }
        backward(pred, target, alpha, d_loss)
    }
}

/// Shape rule: `pred` and `target` `[M, 4]`.
pub(crate) fn check_shapes(pred: &[usize], target: &[usize]) {
    assert!(
        pred.len() == 2 && pred[1] == 4 && pred == target,
        "ciou_loss: expected pred and target [M, 4], got {pred:?} and {target:?}"
    );
}

/// Kernel forward: `(loss [M] in pred's dtype, alpha [M] F32)`; `target` is cast to `pred`'s dtype if needed.
pub fn forward<R: CubeRuntime>(pred: CubeTensor<R>, target: CubeTensor<R>) -> (CubeTensor<R>, CubeTensor<R>) {
    check_shapes(pred.meta.shape(), target.meta.shape());
    let dtype = pred.dtype;
    let pred = tight_as(pred, dtype);
    let target = tight_as(target, dtype);
    let m = pred.meta.shape()[0];
    let loss = empty(&pred, Shape::new([m]), pred.dtype);
    let alpha = empty(&pred, Shape::new([m]), DType::F32);
    launch_ciou_forward(&pred, &target, &loss, &alpha);
    (loss, alpha)
}

/// Kernel backward: `(d pred, d target)`, `[M, 4]` in `pred`'s dtype.
pub fn backward<R: CubeRuntime>(
    pred: CubeTensor<R>,
    target: CubeTensor<R>,
    alpha: CubeTensor<R>,
    d_loss: CubeTensor<R>,
) -> (CubeTensor<R>, CubeTensor<R>) {
    check_shapes(pred.meta.shape(), target.meta.shape());
    let dtype = pred.dtype;
    let pred = tight_as(pred, dtype);
    let target = tight_as(target, dtype);
    let alpha = tight_as(alpha, DType::F32);
    let d_loss = tight_as(d_loss, dtype);
    let d_pred = empty(&pred, pred.meta.shape().clone(), dtype);
    let d_target = empty(&pred, pred.meta.shape().clone(), dtype);
    launch_ciou_backward(&pred, &target, &alpha, &d_loss, &d_pred, &d_target);
    (d_pred, d_target)
}

#[cfg(test)]
/// Launch-level entry points with caller-provided outputs (the tests poison them with NaN).
pub mod raw {
    pub use super::super::kernels::{backward::launch_ciou_backward, forward::launch_ciou_forward};
}
