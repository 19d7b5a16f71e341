//! [`BboxLossBackend`] for [`CubeBackend`]: block sums then a Burn `sum_dim` of the partials; per-anchor
//! backward. `dist` is read in place through its strides; the small inputs are made F32 and contiguous.
use burn::tensor::{DType, Shape, Tensor, TensorPrimitive};
use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::kernels::{forward_split, launch_bbox_loss_backward, launch_bbox_loss_forward};
use super::{check_shapes, reference_backward, reference_sums, BboxLossBackend};
use crate::cube_util::{empty, tight_as};

/// `(anchors, gt_boxes, gt_idx, weight)` as the kernels take them.
fn prepare<R: CubeRuntime>(
    anchors: CubeTensor<R>,
    gt_boxes: CubeTensor<R>,
    gt_idx: CubeTensor<R>,
    weight: CubeTensor<R>,
) -> [CubeTensor<R>; 4] {
    let idx_dtype = gt_idx.dtype;
    [
        tight_as(anchors, DType::F32),
        tight_as(gt_boxes, DType::F32),
        tight_as(gt_idx, idx_dtype),
        tight_as(weight, DType::F32),
    ]
}

/// Whether the kernels can run: not F64 (the reference keeps float64), at least one GT slot and one anchor.
fn kernel_path<R: CubeRuntime>(dist: &CubeTensor<R>, gt_boxes: &CubeTensor<R>) -> bool {
    dist.dtype != DType::F64 && gt_boxes.meta.shape()[1] > 0 && dist.meta.shape().num_elements() > 0
}

impl<R, F, I, BT> BboxLossBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn bbox_loss_sums(
        dist: CubeTensor<R>,
        anchors: CubeTensor<R>,
        gt_boxes: CubeTensor<R>,
        gt_idx: CubeTensor<R>,
        weight: CubeTensor<R>,
        image: [f32; 2],
    ) -> CubeTensor<R> {
        if !kernel_path(&dist, &gt_boxes) {
            return reference_sums::<Self>(dist, anchors, gt_boxes, gt_idx, weight, image);
        }
        check_shapes(
            dist.meta.shape(),
            anchors.meta.shape(),
            gt_boxes.meta.shape(),
            gt_idx.meta.shape(),
            weight.meta.shape(),
        );
        let dtype = dist.dtype;
        let [anchors, gt_boxes, gt_idx, weight] = prepare(anchors, gt_boxes, gt_idx, weight);
        let [b, _, a] = dist.meta.shape().dims::<3>();
        let (_, chunks) = forward_split(b, a);
        let partial = empty(&dist, Shape::new([b, chunks, 3]), DType::F32);
        launch_bbox_loss_forward(&dist, &anchors, &gt_boxes, &gt_idx, &weight, &partial, image);
        let sums =
            Tensor::<Self, 3>::from_primitive(TensorPrimitive::Float(partial)).reshape([b * chunks, 3]).sum_dim(0);
        let sums = sums.reshape([3]);
        let sums = sums.cast(dtype);
        sums.into_primitive().tensor()
    }

    fn bbox_loss_backward(
        dist: CubeTensor<R>,
        anchors: CubeTensor<R>,
        gt_boxes: CubeTensor<R>,
        gt_idx: CubeTensor<R>,
        weight: CubeTensor<R>,
        image: [f32; 2],
        d_sums: CubeTensor<R>,
    ) -> CubeTensor<R> {
        if !kernel_path(&dist, &gt_boxes) {
            return reference_backward::<Self>(dist, anchors, gt_boxes, gt_idx, weight, image, d_sums);
        }
        let [anchors, gt_boxes, gt_idx, weight] = prepare(anchors, gt_boxes, gt_idx, weight);
        let d_sums = tight_as(d_sums, DType::F32);
        let d_dist = empty(&dist, dist.meta.shape().clone(), dist.dtype);
        launch_bbox_loss_backward(&dist, &anchors, &gt_boxes, &gt_idx, &weight, &d_sums, &d_dist, image);
        d_dist
    }
}

#[cfg(test)]
/// Launch-level entry points with caller-provided outputs (the tests poison them).
pub mod raw {
    pub use super::super::kernels::{forward_split, launch_bbox_loss_backward, launch_bbox_loss_forward};
}
