//! Task-aligned label assignment with small-target-aware enlargement (ultralytics 8.4.190
//! `utils/tal.py::TaskAlignedAssigner`, STAL in `select_candidates_in_gts`).
//!
//! The assignment itself is the `kernels-cubecl` op [`task_aligned_assign`] (CubeCL kernels on CubeCL backends,
//! plain tensor ops elsewhere): GT boxes come padded to `[B, G, 4]` with a validity mask, every GT × anchor
//! pair is evaluated on the device, no per-image loop and no host round trip; the op also returns the target
//! labels (ultralytics `get_targets`). This module wraps them as ultralytics' targets (target boxes and one-hot
//! target scores built on demand). Everything runs on detached inputs (ultralytics: `@torch.no_grad`).

use burn::prelude::*;
use kernels_cubecl::tal::{task_aligned_assign, TalConfig};

use crate::backend::TrainBackend;

/// Padded ground truth of a batch.
#[derive(Debug, Clone)]
pub struct GtBoxes<B: Backend> {
    /// `[B, G, 4]` xyxy in input pixels; padding rows are ignored (any value).
    pub bboxes: Tensor<B, 3>,
    /// `[B, G]` class ids; padding rows any valid id (e.g. 0).
    pub labels: Tensor<B, 2, Int>,
    /// `[B, G]` 1.0 for a real box, 0.0 for padding (ultralytics `mask_gt = bboxes.sum(-1) > 0`).
    pub mask: Tensor<B, 2>,
}

impl<B: Backend> GtBoxes<B> {
    /// `G`, the padded number of boxes per image.
    pub fn max_boxes(&self) -> usize {
        self.bboxes.dims()[1]
    }
}

/// Result of [`TaskAlignedAssigner::assign`] (ultralytics `_forward` returns, same layouts).
#[derive(Debug, Clone)]
pub struct Assignment<B: Backend> {
    /// `[B, A]` assigned class id (0 where background).
    pub target_labels: Tensor<B, 2, Int>,
    /// `[B, G, 4]` the ground-truth boxes the assignment indexes (see [`Assignment::target_bboxes`]).
    pub gt_bboxes: Tensor<B, 3>,
    /// `[B, A]` the row sums of [`Assignment::target_scores`]: the normalised alignment metric where the
    /// label is in `[0, C)`, 0 for background. The dense `[B, A, C]` targets are this times `one_hot(label)`.
    pub target_score_sum: Tensor<B, 2>,
    /// `C`.
    pub num_classes: usize,
    /// `[B, A]` 1.0 for foreground anchors, else 0.0.
    pub fg_mask: Tensor<B, 2>,
    /// `[B, A]` index of the assigned GT slot (0 where background).
    pub target_gt_idx: Tensor<B, 2, Int>,
}

impl<B: Backend> Assignment<B> {
    /// `[B, A, 4]` xyxy pixels of the assigned GT (GT slot 0's box where background, zeros if `G == 0`):
    /// ultralytics' `target_bboxes`, gathered on demand (the loss gathers inside its fused box op).
    pub fn target_bboxes(&self) -> Tensor<B, 3> {
        let [b, a] = self.target_gt_idx.dims();
        if self.gt_bboxes.dims()[1] == 0 {
            return Tensor::zeros([b, a, 4], &self.gt_bboxes.device());
        }
        let idx4 = self.target_gt_idx.clone().unsqueeze_dim::<3>(2).expand([b, a, 4]);
        self.gt_bboxes.clone().gather(1, idx4)
    }

    /// `[B, A, C]` ultralytics' `target_scores`: one-hot of the label × the normalised alignment metric (zero
    /// rows for background). Built on demand: the loss itself never materialises it ([`bce_onehot_sum`]).
    ///
    /// [`bce_onehot_sum`]: kernels_cubecl::bce_onehot::bce_onehot_sum
    pub fn target_scores(&self) -> Tensor<B, 3> {
        let [b, a] = self.target_labels.dims();
        let c = self.num_classes;
        let classes = Tensor::<B, 1, Int>::arange(0..c as i64, &self.target_labels.device()).reshape([1, 1, c]);
        let one_hot =
            self.target_labels.clone().unsqueeze_dim::<3>(2).expand([b, a, c]).equal(classes.expand([b, a, c]));
        one_hot.float() * self.target_score_sum.clone().unsqueeze_dim(2)
    }
}

/// ultralytics `TaskAlignedAssigner(topk, num_classes, alpha=0.5, beta=6.0, stride=[8,16,32], eps=1e-9, topk2)`:
/// the op's parameters ([`TalConfig`]: `topk`, `topk2`, `alpha`, `beta`, `eps`, STAL `stride_val`) and `C`.
#[derive(Debug, Clone)]
pub struct TaskAlignedAssigner {
    pub config: TalConfig,
    pub num_classes: usize,
}

impl TaskAlignedAssigner {
    /// `topk2 = None` means `topk` (ultralytics `topk2 or topk`).
    pub fn new(topk: usize, topk2: Option<usize>, num_classes: usize) -> Self {
        TaskAlignedAssigner { config: TalConfig::new(topk, topk2), num_classes }
    }

    /// Assigns targets (inputs are detached here).
    /// * `logits` `[B, C, A]` raw class logits (the head's layout; σ is applied inside the op),
    /// * `pd_boxes` `[B, 4, A]` predicted xyxy pixels (the `detect_decode` layout),
    /// * `anchors` `[2, A]` anchor centres in pixels, `gt` padded ground truth.
    pub fn assign<B: TrainBackend>(
        &self,
        logits: Tensor<B, 3>,
        pd_boxes: Tensor<B, 3>,
        anchors: Tensor<B, 2>,
        gt: &GtBoxes<B>,
    ) -> Assignment<B> {
        let [_, c, _] = logits.dims();
        assert_eq!(c, self.num_classes, "TaskAlignedAssigner: {c} class logits for {} classes", self.num_classes);
        let tal = task_aligned_assign(
            logits.detach(),
            pd_boxes.detach(),
            anchors.detach(),
            gt.bboxes.clone().detach(),
            gt.labels.clone(),
            gt.mask.clone().detach(),
            self.config,
        );
        // the assigner's targets kernel gathers the labels and zeroes the score of a label outside [0, C)
        // (ultralytics `get_targets`; the target boxes are gathered where used)
        Assignment {
            target_labels: tal.labels,
            gt_bboxes: gt.bboxes.clone().detach(),
            target_score_sum: tal.norm,
            num_classes: c,
            fg_mask: tal.fg,
            target_gt_idx: tal.gt_idx,
        }
    }
}
