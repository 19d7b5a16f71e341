//! [`BceWithLogitsBackend`] for [`CubeBackend`]: contiguous inputs (targets and upstream gradient cast to
//! the logits' dtype), fresh contiguous outputs, one kernel each way.
use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use crate::cube_util::{empty, tight_as};

use super::kernels::{backward::launch_bce_backward, forward::launch_bce_forward};
use super::BceWithLogitsBackend;

impl<R, F, I, BT> BceWithLogitsBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn bce_with_logits_forward(logits: CubeTensor<R>, targets: CubeTensor<R>) -> CubeTensor<R> {
        forward(logits, targets)
    }

    fn bce_with_logits_backward(logits: CubeTensor<R>, targets: CubeTensor<R>, d_loss: CubeTensor<R>) -> CubeTensor<R> {
        backward(logits, targets, d_loss)
    }
}

/// Shape rule: identical shapes.
pub(crate) fn check_shapes(a: &[usize], b: &[usize]) {
    assert!(a == b, "bce_with_logits: logits and targets shapes differ: {a:?} and {b:?}");
}

fn empty_like<R: CubeRuntime>(t: &CubeTensor<R>) -> CubeTensor<R> {
    empty(t, t.meta.shape().clone(), t.dtype)
}

/// Kernel forward: loss of `logits`' shape and dtype.
pub fn forward<R: CubeRuntime>(logits: CubeTensor<R>, targets: CubeTensor<R>) -> CubeTensor<R> {
    check_shapes(logits.meta.shape(), targets.meta.shape());
    let dtype = logits.dtype;
    let logits = tight_as(logits, dtype);
    let targets = tight_as(targets, logits.dtype);
    let loss = empty_like(&logits);
    launch_bce_forward(&logits, &targets, &loss);
    loss
}

/// Kernel backward: `d logits` of `logits`' shape and dtype.
pub fn backward<R: CubeRuntime>(logits: CubeTensor<R>, targets: CubeTensor<R>, d_loss: CubeTensor<R>) -> CubeTensor<R> {
    check_shapes(logits.meta.shape(), targets.meta.shape());
    check_shapes(logits.meta.shape(), d_loss.meta.shape());
    let dtype = logits.dtype;
    let logits = tight_as(logits, dtype);
    let targets = tight_as(targets, logits.dtype);
    let d_loss = tight_as(d_loss, logits.dtype);
    let d_logits = empty_like(&logits);
    launch_bce_backward(&logits, &targets, &d_loss, &d_logits);
    d_logits
}

#[cfg(test)]
/// Launch-level entry points with caller-provided outputs (the tests poison them with NaN).
pub mod raw {
    pub use super::super::kernels::{backward::launch_bce_backward, forward::launch_bce_forward};
}
