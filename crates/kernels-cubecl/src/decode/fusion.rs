//! [`DetectDecodeBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream;
//! the box format travels in the op's closure (`CustomOpIr` has no scalar slot in Burn 0.21).
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::cube::check_shapes;
use super::BoxFormat;
use super::DetectDecodeBackend;
use crate::fusion_util::{custom_op, Prim};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

impl<B: FusionBackend + DetectDecodeBackend> DetectDecodeBackend for Fusion<B> {
    fn detect_decode_forward(dist: T<B>, anchors: T<B>, format: BoxFormat) -> T<B> {
        check_shapes(dist.shape.as_slice(), anchors.shape.as_slice());
        let out = (dist.shape.clone(), dist.dtype);
        let [boxes] = custom_op::<B, 2, 1>("detect_decode_forward", [dist, anchors], [out], move |[d, a]| {
            [Prim::Float(B::detect_decode_forward(d.float(), a.float(), format))]
        });
        boxes
    }

    fn detect_decode_backward(anchors: T<B>, d_boxes: T<B>, format: BoxFormat) -> T<B> {
        check_shapes(d_boxes.shape.as_slice(), anchors.shape.as_slice());
        let out = (d_boxes.shape.clone(), d_boxes.dtype);
        let [d_dist] = custom_op::<B, 2, 1>("detect_decode_backward", [anchors, d_boxes], [out], move |[a, g]| {
            [Prim::Float(B::detect_decode_backward(a.float(), g.float(), format))]
        });
        d_dist
    }
}
