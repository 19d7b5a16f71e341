//! [`BceWithLogitsBackend`] for [`CubeBackend`]: contiguous inputs (targets and upstream gradient cast to
//! the logits' dtype), fresh contiguous outputs, one kernel each way.
use burn::tensor::DType;
use burn_cubecl::{
    kernel::{cast, into_contiguous},
    ops::numeric::empty_device_contiguous_dtype,
    tensor::CubeTensor,
    BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement,
};

use super::backend::BceWithLogitsBackend;
use super::kernels::{backward::launch_bce_backward, forward::launch_bce_forward};

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

/// `t` in `dtype`, tight (a cast's output may be pitched on CUDA, so `into_contiguous` comes after it).
fn tight_as<R: CubeRuntime>(t: CubeTensor<R>, dtype: DType) -> CubeTensor<R> {
    into_contiguous(if t.dtype == dtype { t } else { cast(t, dtype) })
}

fn empty_like<R: CubeRuntime>(t: &CubeTensor<R>) -> CubeTensor<R> {
    empty_device_contiguous_dtype(t.client.clone(), t.device.clone(), t.meta.shape().clone(), t.dtype)
}

/// Kernel forward: loss of `logits`' shape and dtype.
pub fn forward<R: CubeRuntime>(logits: CubeTensor<R>, targets: CubeTensor<R>) -> CubeTensor<R> {
    check_shapes(logits.meta.shape(), targets.meta.shape());
    let logits = into_contiguous(logits);
    let targets = tight_as(targets, logits.dtype);
    let loss = empty_like(&logits);
    launch_bce_forward(&logits, &targets, &loss);
    loss
}

/// Kernel backward: `d logits` of `logits`' shape and dtype.
pub fn backward<R: CubeRuntime>(logits: CubeTensor<R>, targets: CubeTensor<R>, d_loss: CubeTensor<R>) -> CubeTensor<R> {
    check_shapes(logits.meta.shape(), targets.meta.shape());
    check_shapes(logits.meta.shape(), d_loss.meta.shape());
    let logits = into_contiguous(logits);
    let targets = tight_as(targets, logits.dtype);
    let d_loss = tight_as(d_loss, logits.dtype);
    let d_logits = empty_like(&logits);
    launch_bce_backward(&logits, &targets, &d_loss, &d_logits);
    d_logits
}

/// Launch-level entry points with caller-provided outputs (the tests poison them with NaN).
pub mod raw {
    pub use super::super::kernels::{backward::launch_bce_backward, forward::launch_bce_forward};
}
