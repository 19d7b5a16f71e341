//! One branch of the detection loss as a single Burn op: box decode, task-aligned assignment and the three
//! loss items normalised as ultralytics does (`v8DetectionLoss.loss`), so that a branch costs one
//! fused-stream op and one autodiff node (forward and backward) instead of ~25 of each. The pieces are the
//! `kernels-cubecl` ops (`detect_decode`, `task_aligned_assign`, `bbox_loss_sums`, `bce_onehot_sum`,
//! `loss_items`); this op only composes them:
//!
//! - [`BranchLossBackend::branch_loss`] / [`BranchLossBackend::branch_loss_backward`]: default methods compose
//!   the ops with tensor ops (`Flex`, and any dtype the kernels do not take); on `CubeBackend` the kernels
//!   are launched directly (`cube.rs`: 5 launches forward — the assigner's metrics (box decode included),
//!   top-k and fused resolve/statistics/targets, the fused box + BCE anchor pass, the items — and 1
//!   backward); on `Fusion<B>` each is one opaque custom op running `B`'s method; on `Autodiff<B>` the
//!   forward runs on `B` and the backward step calls `B::branch_loss_backward` (the assignment has no
//!   gradient: ultralytics runs it under `torch.no_grad()`).
//!
//! Output [`BranchPrims`]: `total [1] = mix·(box + cls + l1)`, differentiable w.r.t. the raw `boxes` and
//! `scores` (`mix` = the branch's weight in `E2ELoss`, 1 alone); the values `items [3] = (box, cls, l1)` =
//! `(Σ w·(1 − CIoU), Σ BCE, Σ w·L1) · gain · B / max(Σ w, 1)` (`w` = target-score sum per anchor) and
//! `terms [3] = mix·items`; `w_sum [1] = Σ w` (ultralytics' `target_scores_sum` before its clamp) and the
//! assignment. Only `total` carries a gradient: a training step back-propagates the sum of the terms, so the
//! backward is one scaling of the per-anchor gradients (no separate items graph, no mixing ops).

mod autodiff;
mod cube;
mod fusion;
pub(crate) mod kernels;
mod reference;

#[cfg(test)]
mod tests;

pub use reference::{compose, compose_backward, items_backward, items_from_sums};

use crate::bbox_loss::BboxLossBackend;
use crate::bce_onehot::BceOneHotBackend;
use crate::decode::DetectDecodeBackend;
use crate::tal::{TalBackend, TalConfig};
use crate::tensor_util::float;
use burn::prelude::*;
use burn::tensor::{
    get_device_settings,
    ops::{FloatTensor, IntTensor},
    IntDType,
};

/// Constants of a branch: the assigner's parameters, the input image size `[W, H]` in pixels (the L1
/// normalisation), the loss gains `(box, cls, l1)` (the op multiplies them by the batch size) and `mix`, the
/// branch's weight in the total (ProgLoss; 1 for a lone branch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BranchConfig {
    /// The assigner's parameters.
    pub tal: TalConfig,
    /// Input image size `[W, H]` in pixels (the L1 normalisation).
    pub image: [f32; 2],
    /// Loss gains `(box, cls, l1)` (ultralytics `box 7.5`, `cls 0.5`, `dfl 1.5`: the latter weighs L1).
    pub gains: [f32; 3],
    /// The branch's weight in the total (1 for a lone branch).
    pub mix: f32,
}

impl BranchConfig {
    /// The gains times the batch size `b` (ultralytics returns `loss * batch_size`).
    pub fn batch_gains(&self, b: usize) -> [f32; 3] {
        self.gains.map(|g| g * b as f32)
    }
}

/// Outputs of [`BranchLossBackend::branch_loss`] as primitives.
#[derive(Debug)]
pub struct BranchPrims<B: Backend> {
    /// `[1]` `mix·(box + cls + l1)`, the dtype of `scores`: the differentiable output.
    pub total: FloatTensor<B>,
    /// `[3]` `(box, cls, l1)` loss items, the dtype of `scores`.
    pub items: FloatTensor<B>,
    /// `[3]` `mix·items`.
    pub terms: FloatTensor<B>,
    /// `[1]` `Σ w`, the dtype of `scores`.
    pub w_sum: FloatTensor<B>,
    /// `[B, A]` assigned GT slot (int; 0 for background).
    pub gt_idx: IntTensor<B>,
    /// `[B, A]` foreground flag (1.0 / 0.0).
    pub fg: FloatTensor<B>,
    /// `[B, A]` target-score sum of the anchor (`w`): the normalised alignment where the label is in
    /// `[0, C)`, else 0.
    pub score_sum: FloatTensor<B>,
    /// `[B, A]` assigned class id (int, the dtype of `gt_labels`; GT slot 0's label for background).
    pub labels: IntTensor<B>,
}

/// What the backward of a branch needs from its forward (besides the raw `boxes` and `scores`).
#[derive(Debug, Clone)]
pub struct BranchSaved<B: Backend> {
    /// `[3, A]` the anchor grid of the forward.
    pub grid: FloatTensor<B>,
    /// `[B, G, 4]` the GT boxes (xyxy pixels).
    pub gt_boxes: FloatTensor<B>,
    /// `[B, A]` assigned GT slot.
    pub gt_idx: IntTensor<B>,
    /// `[B, A]` assigned class id.
    pub labels: IntTensor<B>,
    /// `[B, A]` target-score sum `w` of the anchor.
    pub score_sum: FloatTensor<B>,
    /// `[1]` `Σ w`.
    pub w_sum: FloatTensor<B>,
}

/// Backend extension: one branch of the detection loss. Shapes: `boxes [B, 4, A]` raw LTRB distances (grid
/// units), `scores [B, C, A]` logits (same float dtype), `grid [3, A]` anchor x, y (grid units) and stride,
/// `gt_boxes [B, G, 4]` xyxy pixels, `gt_labels [B, G]` int, `gt_mask [B, G]` 1.0 / 0.0.
pub trait BranchLossBackend: DetectDecodeBackend + TalBackend + BboxLossBackend + BceOneHotBackend {
    /// The branch's forward: the loss, its items and the assignment ([`BranchPrims`]).
    #[allow(clippy::too_many_arguments)]
    fn branch_loss(
        boxes: FloatTensor<Self>,
        scores: FloatTensor<Self>,
        grid: FloatTensor<Self>,
        gt_boxes: FloatTensor<Self>,
        gt_labels: IntTensor<Self>,
        gt_mask: FloatTensor<Self>,
        cfg: BranchConfig,
        int_dtype: IntDType,
    ) -> BranchPrims<Self> {
        compose::<Self>(boxes, scores, grid, gt_boxes, gt_labels, gt_mask, cfg, int_dtype)
    }

    /// `d total [1]` → `(d boxes [B, 4, A], d scores [B, C, A])`.
    fn branch_loss_backward(
        boxes: FloatTensor<Self>,
        scores: FloatTensor<Self>,
        saved: BranchSaved<Self>,
        d_total: FloatTensor<Self>,
        cfg: BranchConfig,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        compose_backward::<Self>(boxes, scores, saved, d_total, cfg)
    }
}

impl BranchLossBackend for burn::backend::Flex {}

/// Tensor-level outputs of [`branch_loss`].
#[derive(Debug, Clone)]
pub struct BranchOutput<B: Backend> {
    /// `[1]` `mix·(box + cls + l1)`, differentiable w.r.t. `boxes` and `scores`.
    pub total: Tensor<B, 1>,
    /// `[3]` `(box, cls, l1)` loss items (values).
    pub items: Tensor<B, 1>,
    /// `[3]` `mix·items` (values).
    pub terms: Tensor<B, 1>,
    /// `[1]` `Σ w` (target-score sum).
    pub w_sum: Tensor<B, 1>,
    /// `[B, A]` assigned GT slot (0 for background).
    pub gt_idx: Tensor<B, 2, Int>,
    /// `[B, A]` foreground flag (1.0 / 0.0).
    pub fg: Tensor<B, 2>,
    /// `[B, A]` target-score sum `w` of the anchor.
    pub score_sum: Tensor<B, 2>,
    /// `[B, A]` assigned class id.
    pub labels: Tensor<B, 2, Int>,
}

/// One loss branch (see the module doc). `gt_labels` outside `[0, C)` get no target.
#[allow(clippy::too_many_arguments)]
pub fn branch_loss<B: BranchLossBackend>(
    boxes: Tensor<B, 3>,
    scores: Tensor<B, 3>,
    grid: Tensor<B, 2>,
    gt_boxes: Tensor<B, 3>,
    gt_labels: Tensor<B, 2, Int>,
    gt_mask: Tensor<B, 2>,
    cfg: BranchConfig,
) -> BranchOutput<B> {
    let [b, _, a] = scores.dims();
    assert!(
        boxes.dims() == [b, 4, a] && grid.dims() == [3, a],
        "branch_loss: expected boxes [{b}, 4, {a}] and grid [3, {a}] for scores [B, C, A] = {:?}; got {:?}, {:?}",
        scores.dims(),
        boxes.dims(),
        grid.dims()
    );
    assert_eq!(boxes.dtype(), scores.dtype(), "branch_loss: boxes and scores must share a float dtype");
    let int_dtype = get_device_settings::<B>(&scores.device()).int_dtype;
    let out = B::branch_loss(
        boxes.into_primitive().tensor(),
        scores.into_primitive().tensor(),
        grid.detach().into_primitive().tensor(),
        gt_boxes.detach().into_primitive().tensor(),
        gt_labels.into_primitive(),
        gt_mask.detach().into_primitive().tensor(),
        cfg,
        int_dtype,
    );
    BranchOutput {
        total: float(out.total),
        items: float(out.items),
        terms: float(out.terms),
        w_sum: float(out.w_sum),
        gt_idx: Tensor::from_primitive(out.gt_idx),
        fg: float(out.fg),
        score_sum: float(out.score_sum),
        labels: Tensor::from_primitive(out.labels),
    }
}
