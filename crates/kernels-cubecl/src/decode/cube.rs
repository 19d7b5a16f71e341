//! [`DetectDecodeBackend`] for [`CubeBackend`]: contiguous inputs, fresh contiguous outputs, one kernel.
use burn::tensor::DType;
use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use crate::cube_util::{empty, tight_as};

use super::kernels::{backward::launch_decode_backward, forward::launch_decode_forward};
use super::BoxFormat;
use super::{reference_backward, reference_forward, DetectDecodeBackend};

impl<R, F, I, BT> DetectDecodeBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn detect_decode_forward(dist: CubeTensor<R>, anchors: CubeTensor<R>, format: BoxFormat) -> CubeTensor<R> {
        if dist.dtype == DType::F64 {
            // The kernels compute in f32; F64 distances go through the (F64) reference.
            return reference_forward::<Self>(dist, anchors, format);
        }
        forward(dist, anchors, format)
    }

    fn detect_decode_backward(anchors: CubeTensor<R>, d_boxes: CubeTensor<R>, format: BoxFormat) -> CubeTensor<R> {
        if d_boxes.dtype == DType::F64 {
            return reference_backward::<Self>(anchors, d_boxes, format);
        }
        backward(anchors, d_boxes, format)
    }
}

/// Shape rules: `dist`/`d_boxes` `[B, 4, A]`, `anchors` `[3, A]`.
pub(crate) fn check_shapes(dist: &[usize], anchors: &[usize]) {
    assert!(
        dist.len() == 3 && anchors.len() == 2 && dist[1] == 4 && anchors[0] == 3 && dist[2] == anchors[1],
        "detect_decode: expected [B, 4, A] and anchors [3, A], got {dist:?} and {anchors:?}"
    );
}

/// Anchors as a tight F32 tensor.
fn anchors_f32<R: CubeRuntime>(anchors: CubeTensor<R>) -> CubeTensor<R> {
    tight_as(anchors, DType::F32)
}

/// Kernel forward: `boxes [B, 4, A]` in `dist`'s dtype.
pub fn forward<R: CubeRuntime>(dist: CubeTensor<R>, anchors: CubeTensor<R>, format: BoxFormat) -> CubeTensor<R> {
    check_shapes(dist.meta.shape(), anchors.meta.shape());
    let dtype = dist.dtype;
    // `dist` is read in place through its strides (the head's output is often pitched on CUDA)
    let anchors = anchors_f32(anchors);
    let boxes = empty(&dist, dist.meta.shape().clone(), dtype);
    launch_decode_forward(&dist, &anchors, &boxes, format.is_xywh());
    boxes
}

/// Kernel backward: `d_dist [B, 4, A]` in `d_boxes`' dtype.
pub fn backward<R: CubeRuntime>(anchors: CubeTensor<R>, d_boxes: CubeTensor<R>, format: BoxFormat) -> CubeTensor<R> {
    check_shapes(d_boxes.meta.shape(), anchors.meta.shape());
    let dtype = d_boxes.dtype;
    let d_boxes = tight_as(d_boxes, dtype);
    let anchors = anchors_f32(anchors);
    let d_dist = empty(&d_boxes, d_boxes.meta.shape().clone(), dtype);
    launch_decode_backward(&anchors, &d_boxes, &d_dist, format.is_xywh());
    d_dist
}

#[cfg(test)]
/// Launch-level entry points with caller-provided outputs (the tests poison them with NaN).
pub mod raw {
    pub use super::super::kernels::{backward::launch_decode_backward, forward::launch_decode_forward};
}
