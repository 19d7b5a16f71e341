//! [`TalBackend`] for [`Autodiff`]: the assignment has no gradient (ultralytics: `torch.no_grad()`); it runs
//! on the inner backend's primitives and its float outputs are returned untracked.
use burn::backend::{autodiff::checkpoint::strategy::CheckpointStrategy, Autodiff};
use burn::tensor::{ops::FloatTensor, ops::IntTensor, IntDType};

use super::{TalBackend, TalConfig};
use crate::autodiff_util::constant;

impl<B: TalBackend, C: CheckpointStrategy> TalBackend for Autodiff<B, C> {
    fn task_aligned_assign(
        logits: FloatTensor<Self>,
        boxes: FloatTensor<Self>,
        anchors: FloatTensor<Self>,
        gt_boxes: FloatTensor<Self>,
        gt_labels: IntTensor<Self>,
        gt_mask: FloatTensor<Self>,
        cfg: TalConfig,
        int_dtype: IntDType,
    ) -> (IntTensor<Self>, FloatTensor<Self>, FloatTensor<Self>, IntTensor<Self>) {
        let (gt_idx, fg, norm, labels) = B::task_aligned_assign(
            logits.primitive,
            boxes.primitive,
            anchors.primitive,
            gt_boxes.primitive,
            gt_labels,
            gt_mask.primitive,
            cfg,
            int_dtype,
        );
        (gt_idx, constant(fg), constant(norm), labels)
    }
}
