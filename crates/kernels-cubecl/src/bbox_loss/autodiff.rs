//! [`BboxLossBackend`] for [`Autodiff`]: the forward runs on the inner backend; the backward step keeps
//! `dist` and the constant inputs (anchors, assigned boxes and indices, weights: no gradient) and calls the
//! inner backward. Only `dist` is a parent.
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::{FloatTensor, IntTensor};

use super::BboxLossBackend;
use crate::autodiff_util::{constant, differentiable};

impl<B: BboxLossBackend, C: CheckpointStrategy> BboxLossBackend for Autodiff<B, C> {
    fn bbox_loss_sums(
        dist: FloatTensor<Self>,
        anchors: FloatTensor<Self>,
        gt_boxes: FloatTensor<Self>,
        gt_idx: IntTensor<Self>,
        weight: FloatTensor<Self>,
        image: [f32; 2],
    ) -> FloatTensor<Self> {
        let consts = (anchors.primitive, gt_boxes.primitive, gt_idx, weight.primitive, image);
        differentiable::<B, C, _, 1>(
            [dist],
            |[d]| {
                let (a, g, i, w, image) = consts.clone();
                (B::bbox_loss_sums(d.clone(), a, g, i, w, image), (d, consts))
            },
            // the three sums (CIoU, L1, weight) → d dist through the per-anchor box gradient
            |(d, (a, g, i, w, image)), d_sums, _| [Some(B::bbox_loss_backward(d, a, g, i, w, image, d_sums))],
        )
    }

    fn bbox_loss_backward(
        dist: FloatTensor<Self>,
        anchors: FloatTensor<Self>,
        gt_boxes: FloatTensor<Self>,
        gt_idx: IntTensor<Self>,
        weight: FloatTensor<Self>,
        image: [f32; 2],
        d_sums: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let (d, a, g, w, s) =
            (dist.primitive, anchors.primitive, gt_boxes.primitive, weight.primitive, d_sums.primitive);
        constant(B::bbox_loss_backward(d, a, g, gt_idx, w, image, s))
    }
}
