//! Task-aligned label assignment (TOOD's TAL with YOLO's small-target-aware enlargement, STAL) as a Burn op:
//! ultralytics 8.4.190 `utils/tal.py::TaskAlignedAssigner` with `alpha`, `beta`, `topk`, `topk2`, `eps`
//! and `stride_val` as parameters. It has no gradient (ultralytics runs it under `torch.no_grad()`).
//!
//! - [`task_aligned_assign`]: the `Tensor`-level function. Inputs: class logits `[B, C, A]` (the raw head
//!   layout; σ is applied inside), predicted boxes `[B, 4, A]` xyxy pixels, anchor centres `[2, A]` pixels
//!   (or the anchor grid `[3, A]`: x, y in grid units and the stride), GT boxes `[B, G, 4]` xyxy pixels, GT
//!   labels `[B, G]`, GT validity mask `[B, G]` (1.0 / 0.0). Output [`TalAssignment`]: per anchor the GT
//!   slot, the foreground flag, the target-score magnitude and the target label.
//! - [`TalBackend`]: the backend extension trait: four CubeCL kernels plus the top-k passes on
//!   `CubeBackend` (`kernels.rs`; no host round trip, no per-image loop), a custom op on `Fusion`, the inner
//!   backend's op under `Autodiff` (outputs untracked), plain tensor ops elsewhere ([`reference_assign`]).
//!
//! `topk2` other than `topk` (off) and 1 (YOLO26's one2one branch) runs the reference on every backend.

mod autodiff;
pub(crate) mod cube;
mod fusion;
pub(crate) mod kernels;
mod reference;

#[cfg(test)]
mod tests;

pub use reference::reference_assign;

use burn::tensor::{
    backend::Backend,
    get_device_settings,
    ops::{FloatTensor, IntTensor},
    Int, IntDType, Tensor, TensorPrimitive,
};

use crate::ciou::CiouLossBackend;
use crate::topk::TopKBackend;

/// Parameters of the assigner (ultralytics `TaskAlignedAssigner(topk, num_classes, alpha, beta, stride,
/// eps, topk2)`, `stride_val = stride[1]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TalConfig {
    /// Candidates kept per GT by alignment metric (YOLO26: 10 one2many, 7 one2one).
    pub topk: usize,
    /// Second top-k per GT after conflict resolution; `topk2 == topk` is off (YOLO26 one2one: 1).
    pub topk2: usize,
    /// Exponent of the classification score in the alignment metric `s^α · IoU^β` (YOLO26: 0.5).
    pub alpha: f64,
    /// Exponent of the CIoU overlap in the alignment metric (YOLO26: 6).
    pub beta: f64,
    /// Added to the per-GT maximum alignment before normalising (ultralytics `eps = 1e-9`).
    pub eps: f64,
    /// STAL: GT sides shorter than this (pixels) are enlarged to it for the centre-in-box test only.
    pub stride_val: f64,
}

impl TalConfig {
    /// ultralytics defaults of `v8DetectionLoss`: `alpha 0.5`, `beta 6.0`, `eps 1e-9`, `stride_val 16`.
    pub fn new(topk: usize, topk2: Option<usize>) -> Self {
        TalConfig { topk, topk2: topk2.unwrap_or(topk), alpha: 0.5, beta: 6.0, eps: 1e-9, stride_val: 16.0 }
    }

    /// `topk2 = 1`: the one2one branch (the kernels handle it; other `topk2` values use the reference).
    pub fn one2one(&self) -> bool {
        self.topk2 != self.topk && self.topk2 == 1
    }
}

/// Per-anchor result of the assignment (ultralytics `_forward`'s `target_gt_idx`, `fg_mask` and the
/// factor of `target_scores`).
#[derive(Debug, Clone)]
pub struct TalAssignment<B: Backend> {
    /// `[B, A]` assigned GT slot (0 for background, as ultralytics).
    pub gt_idx: Tensor<B, 2, Int>,
    /// `[B, A]` 1.0 for foreground anchors, else 0.0.
    pub fg: Tensor<B, 2>,
    /// `[B, A]` normalised alignment `t · max_IoU_gt / (max_t_gt + eps)` (0 for background, and 0 where the
    /// assigned label is outside `[0, C)`): the target score of the assigned class
    /// (`target_scores = one_hot(label) · norm`).
    pub norm: Tensor<B, 2>,
    /// `[B, A]` the assigned GT's class, `gt_labels[b, gt_idx]` (ultralytics `target_labels`; GT slot 0's
    /// label for background), in the int dtype of `gt_labels`.
    pub labels: Tensor<B, 2, Int>,
}

/// Backend extension: task-aligned assignment. Shapes as in [`task_aligned_assign`] (`G ≥ 1`); returns
/// `(gt_idx [B, A] of int_dtype, fg [B, A], norm [B, A], labels [B, A])`, floats in the dtype of `logits`,
/// labels in the dtype of `gt_labels`.
pub trait TalBackend: CiouLossBackend + TopKBackend {
    /// The assignment of every anchor (see [`task_aligned_assign`] for the shapes and rules).
    #[allow(clippy::too_many_arguments)]
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
        reference_assign::<Self>(logits, boxes, anchors, gt_boxes, gt_labels, gt_mask, cfg, int_dtype)
    }
}

impl TalBackend for burn::backend::Flex {}

/// Checks the shapes of an assignment call; returns `(B, C, A, G)`.
pub(crate) fn check_shapes(
    logits: &[usize],
    boxes: &[usize],
    anchors: &[usize],
    gt_boxes: &[usize],
    gt_labels: &[usize],
    gt_mask: &[usize],
    cfg: &TalConfig,
) -> (usize, usize, usize, usize) {
    assert!(logits.len() == 3, "task_aligned_assign: logits must be [B, C, A], got {logits:?}");
    let (b, c, a) = (logits[0], logits[1], logits[2]);
    assert!(boxes == [b, 4, a], "task_aligned_assign: boxes must be [{b}, 4, {a}] (xyxy px), got {boxes:?}");
    assert!(
        anchors == [2, a] || anchors == [3, a],
        "task_aligned_assign: anchors must be [2, {a}] (px) or [3, {a}] (grid x, y, stride), got {anchors:?}"
    );
    assert!(
        gt_boxes.len() == 3 && gt_boxes[0] == b && gt_boxes[2] == 4,
        "task_aligned_assign: gt_boxes must be [{b}, G, 4], got {gt_boxes:?}"
    );
    let g = gt_boxes[1];
    assert!(gt_labels == [b, g], "task_aligned_assign: gt_labels must be [{b}, {g}], got {gt_labels:?}");
    assert!(gt_mask == [b, g], "task_aligned_assign: gt_mask must be [{b}, {g}], got {gt_mask:?}");
    assert!(c >= 1, "task_aligned_assign: no classes");
    assert!(
        cfg.topk >= 1 && cfg.topk2 >= 1 && cfg.topk2 <= cfg.topk,
        "task_aligned_assign: need 1 ≤ topk2 ≤ topk, got topk {} topk2 {}",
        cfg.topk,
        cfg.topk2
    );
    assert!(
        a == 0 || cfg.topk <= a,
        "task_aligned_assign: topk {} exceeds the {a} anchors (torch.topk would fail too)",
        cfg.topk
    );
    (b, c, a, g)
}

/// Task-aligned assignment of GT boxes to anchors (see the module doc for layouts). Images whose GT rows
/// are all padding, and `G = 0`, give all-background rows (labels 0). Runs on the device without host
/// round trips.
pub fn task_aligned_assign<B: TalBackend>(
    logits: Tensor<B, 3>,
    boxes: Tensor<B, 3>,
    anchors: Tensor<B, 2>,
    gt_boxes: Tensor<B, 3>,
    gt_labels: Tensor<B, 2, Int>,
    gt_mask: Tensor<B, 2>,
    cfg: TalConfig,
) -> TalAssignment<B> {
    let (b, _, a, g) = check_shapes(
        &logits.dims(),
        &boxes.dims(),
        &anchors.dims(),
        &gt_boxes.dims(),
        &gt_labels.dims(),
        &gt_mask.dims(),
        &cfg,
    );
    let device = logits.device();
    if g == 0 || a == 0 || b == 0 {
        let dtype = logits.dtype();
        return TalAssignment {
            gt_idx: Tensor::zeros([b, a], &device),
            fg: Tensor::<B, 2>::zeros([b, a], &device).cast(dtype),
            norm: Tensor::<B, 2>::zeros([b, a], &device).cast(dtype),
            labels: Tensor::<B, 2, Int>::zeros([b, a], &device).cast(gt_labels.dtype()),
        };
    }
    let int_dtype = get_device_settings::<B>(&device).int_dtype;
    let f = |t: Tensor<B, 3>| t.into_primitive().tensor();
    let (gt_idx, fg, norm, labels) = B::task_aligned_assign(
        f(logits),
        f(boxes),
        anchors.into_primitive().tensor(),
        f(gt_boxes),
        gt_labels.into_primitive(),
        gt_mask.into_primitive().tensor(),
        cfg,
        int_dtype,
    );
    TalAssignment {
        gt_idx: Tensor::from_primitive(gt_idx),
        fg: Tensor::from_primitive(TensorPrimitive::Float(fg)),
        norm: Tensor::from_primitive(TensorPrimitive::Float(norm)),
        labels: Tensor::from_primitive(labels),
    }
}
