//! [`DetectDecodeBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step
//! keeps the anchors (a constant `[3, A]` tensor, no gradient) and calls the inner
//! `detect_decode_backward`. `detect_decode_backward` on `Autodiff` itself is not differentiable.
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::BoxFormat;
use super::DetectDecodeBackend;
use crate::autodiff_util::differentiable;

impl<B: DetectDecodeBackend, C: CheckpointStrategy> DetectDecodeBackend for Autodiff<B, C> {
    fn detect_decode_forward(
        dist: FloatTensor<Self>,
        anchors: FloatTensor<Self>,
        format: BoxFormat,
    ) -> FloatTensor<Self> {
        // only `dist` is a parent: the anchors are constants (their gradient is never computed)
        let a = anchors.primitive;
        differentiable::<B, C, _, 1>(
            [dist],
            |[d]| (B::detect_decode_forward(d, a.clone(), format), (a, format)),
            // the boxes are linear in the distances: d dist depends on the anchors' stride only
            |(a, format), d_boxes, _| [Some(B::detect_decode_backward(a, d_boxes, format))],
        )
    }

    fn detect_decode_backward(
        anchors: FloatTensor<Self>,
        d_boxes: FloatTensor<Self>,
        format: BoxFormat,
    ) -> FloatTensor<Self> {
        FloatTensor::<Self>::new(B::detect_decode_backward(anchors.primitive, d_boxes.primitive, format))
    }
}
