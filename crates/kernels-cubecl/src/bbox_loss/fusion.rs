//! [`BboxLossBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream.
use burn::tensor::Shape;
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::{check_shapes, BboxLossBackend};
use crate::fusion_util::{custom_op, Prim};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

fn check<B: FusionBackend>(dist: &T<B>, anchors: &T<B>, gt_boxes: &T<B>, gt_idx: &T<B>, weight: &T<B>) {
    let s = [dist, anchors, gt_boxes, gt_idx, weight].map(|t| t.shape.as_slice());
    check_shapes(s[0], s[1], s[2], s[3], s[4]);
}

impl<B: FusionBackend + BboxLossBackend> BboxLossBackend for Fusion<B> {
    fn bbox_loss_sums(dist: T<B>, anchors: T<B>, gt_boxes: T<B>, gt_idx: T<B>, weight: T<B>, image: [f32; 2]) -> T<B> {
        check::<B>(&dist, &anchors, &gt_boxes, &gt_idx, &weight);
        let out = (Shape::new([3]), dist.dtype);
        let inputs = [dist, anchors, gt_boxes, gt_idx, weight];
        let [sums] = custom_op::<B, 5, 1>("bbox_loss_sums", inputs, [out], move |[d, a, g, i, w]| {
            [Prim::Float(B::bbox_loss_sums(d.float(), a.float(), g.float(), i.int(), w.float(), image))]
        });
        sums
    }

    fn bbox_loss_backward(
        dist: T<B>,
        anchors: T<B>,
        gt_boxes: T<B>,
        gt_idx: T<B>,
        weight: T<B>,
        image: [f32; 2],
        d_sums: T<B>,
    ) -> T<B> {
        check::<B>(&dist, &anchors, &gt_boxes, &gt_idx, &weight);
        let out = (dist.shape.clone(), dist.dtype);
        let inputs = [dist, anchors, gt_boxes, gt_idx, weight, d_sums];
        let [d_dist] = custom_op::<B, 6, 1>("bbox_loss_backward", inputs, [out], move |[d, a, g, i, w, s]| {
            let d_dist = B::bbox_loss_backward(d.float(), a.float(), g.float(), i.int(), w.float(), image, s.float());
            [Prim::Float(d_dist)]
        });
        d_dist
    }
}
