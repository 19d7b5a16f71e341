//! [`BceOneHotBackend`] for [`CubeBackend`]: per-cube partial sums (one unit per anchor, looping over the classes)
//! then a Burn `sum` of the partials; the backward writes every element from one unit per anchor.
//! The logits are read in place with their strides (no contiguous copy of the largest tensor of the loss).
use burn::tensor::{DType, Shape, Tensor, TensorPrimitive};
use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::kernels::{forward_split, launch_bce_onehot_backward, launch_bce_onehot_forward};
use super::{check_shapes, reference_backward, reference_sum, BceOneHotBackend};
use crate::cube_util::{empty, tight_as};

impl<R, F, I, BT> BceOneHotBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn bce_onehot_sum(logits: CubeTensor<R>, labels: CubeTensor<R>, scores: CubeTensor<R>) -> CubeTensor<R> {
        if logits.dtype == DType::F64 {
            return reference_sum::<Self>(logits, labels, scores);
        }
        check_shapes(logits.meta.shape(), labels.meta.shape(), scores.meta.shape());
        let dtype = logits.dtype;
        let scores = tight_as(scores, dtype);
        let labels_dtype = labels.dtype;
        let labels = tight_as(labels, labels_dtype);
        let [b, c, a] = logits.meta.shape().dims::<3>();
        let (rows, chunks) = forward_split(b, c, a);
        let partial = empty(&logits, Shape::new([rows, chunks]), DType::F32);
        launch_bce_onehot_forward(&logits, &labels, &scores, &partial);
        let total = Tensor::<Self, 2>::from_primitive(TensorPrimitive::Float(partial)).sum();
        let total = total.cast(dtype);
        total.into_primitive().tensor()
    }

    fn bce_onehot_backward(
        logits: CubeTensor<R>,
        labels: CubeTensor<R>,
        scores: CubeTensor<R>,
        d_total: CubeTensor<R>,
    ) -> CubeTensor<R> {
        if logits.dtype == DType::F64 {
            return reference_backward::<Self>(logits, labels, scores, d_total);
        }
        check_shapes(logits.meta.shape(), labels.meta.shape(), scores.meta.shape());
        let dtype = logits.dtype;
        let scores = tight_as(scores, dtype);
        let d_total = tight_as(d_total, dtype);
        let labels_dtype = labels.dtype;
        let labels = tight_as(labels, labels_dtype);
        let d_logits = empty(&logits, logits.meta.shape().clone(), dtype);
        launch_bce_onehot_backward(&logits, &labels, &scores, &d_total, &d_logits);
        d_logits
    }
}

#[cfg(test)]
/// Launch-level entry points with caller-provided outputs (the tests poison them).
pub mod raw {
    pub use super::super::kernels::{forward_split, launch_bce_onehot_backward, launch_bce_onehot_forward};
}
