//! One branch of the detection loss as a single Burn op: box decode, task-aligned assignment, target
//! gathering and the three loss sums (ultralytics `v8DetectionLoss.loss` up to the normalisation), so that a
//! branch costs one fused-stream op and one autodiff node instead of ~25 of each. The pieces are the
//! `kernels-cubecl` ops (`detect_decode`, `task_aligned_assign`, `bbox_loss_sums`, `bce_onehot_sum`); this
//! op only composes them on the inner backend:
//!
//! - [`BranchLossBackend::branch_loss`] (default method: the composition, run directly on `CubeBackend`
//!   and on `Flex`); on `Fusion<B>` one opaque custom op whose `execute` runs `B`'s composition; on
//!   `Autodiff<B>` the composition on `B` plus one backward step that calls the box-loss and one-hot BCE
//!   backward ops (the assignment has no gradient: ultralytics runs it under `torch.no_grad()`).
//!
//! Output [`BranchPrims`]: `sums [4] = (Σ w·(1 − CIoU), Σ w·L1, Σ w, Σ BCE)` (`w` = target-score sum per
//! anchor; `Σ w` is ultralytics' `target_scores_sum` before its clamp at 1), differentiable w.r.t. the raw
//! `boxes` and `scores`; and the assignment (untracked).

mod autodiff;
mod fusion;

use burn::prelude::*;
use burn::tensor::{
    get_device_settings,
    ops::{FloatTensor, IntTensor},
    DType, IntDType, TensorPrimitive,
};
use kernels_cubecl::bbox_loss::{bbox_loss_sums, BboxLossBackend};
use kernels_cubecl::bce_onehot::{bce_onehot_sum, BceOneHotBackend};
use kernels_cubecl::decode::{BoxFormat, DetectDecodeBackend};
use kernels_cubecl::tal::{TalBackend, TalConfig};

use crate::assigner::get_targets;

/// Constants of a branch: the assigner's parameters and the input image size `[W, H]` in pixels (the L1
/// normalisation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BranchConfig {
    pub tal: TalConfig,
    pub image: [f32; 2],
}

/// Outputs of [`BranchLossBackend::branch_loss`] as primitives.
#[derive(Debug)]
pub struct BranchPrims<B: Backend> {
    /// `[4]` `(box_sum, l1_sum, w_sum, cls_sum)`, the dtype of `scores`.
    pub sums: FloatTensor<B>,
    /// `[B, A]` assigned GT slot (int; 0 for background).
    pub gt_idx: IntTensor<B>,
    /// `[B, A]` foreground flag (1.0 / 0.0).
    pub fg: FloatTensor<B>,
    /// `[B, A]` target-score sum of the anchor (`w`): the normalised alignment where the label is in
    /// `[0, C)`, else 0.
    pub score_sum: FloatTensor<B>,
    /// `[B, A]` assigned class id (int, the dtype of `gt_labels`; 0 for background).
    pub labels: IntTensor<B>,
}

/// Backend extension: one branch of the detection loss. Shapes: `boxes [B, 4, A]` raw LTRB distances (grid
/// units), `scores [B, C, A]` logits (same float dtype), `grid [3, A]` anchor x, y (grid units) and stride,
/// `gt_boxes [B, G, 4]` xyxy pixels, `gt_labels [B, G]` int, `gt_mask [B, G]` 1.0 / 0.0.
pub trait BranchLossBackend: DetectDecodeBackend + TalBackend + BboxLossBackend + BceOneHotBackend {
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
}

impl BranchLossBackend for burn::backend::Flex {}

impl<R, F, I, BT> BranchLossBackend for burn_cubecl::CubeBackend<R, F, I, BT>
where
    R: burn_cubecl::CubeRuntime,
    F: burn_cubecl::FloatElement,
    I: burn_cubecl::IntElement,
    BT: burn_cubecl::BoolElement,
{
}

fn float<B: Backend, const D: usize>(t: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

/// The branch on backend `B` from its ops (see the module doc).
#[allow(clippy::too_many_arguments)]
pub fn compose<B: DetectDecodeBackend + TalBackend + BboxLossBackend + BceOneHotBackend>(
    boxes: FloatTensor<B>,
    scores: FloatTensor<B>,
    grid: FloatTensor<B>,
    gt_boxes: FloatTensor<B>,
    gt_labels: IntTensor<B>,
    gt_mask: FloatTensor<B>,
    cfg: BranchConfig,
    int_dtype: IntDType,
) -> BranchPrims<B> {
    let boxes: Tensor<B, 3> = float(boxes);
    let scores: Tensor<B, 3> = float(scores);
    let grid: Tensor<B, 2> = float(grid);
    let gt_boxes: Tensor<B, 3> = float(gt_boxes);
    let gt_labels: Tensor<B, 2, Int> = Tensor::from_primitive(gt_labels);
    let [b, c, a] = scores.dims();
    let g = gt_boxes.dims()[1];
    let device = scores.device();
    let dtype = scores.dtype();

    // bbox_decode (reg_max = 1) fused with the assigner's `* stride`: xyxy pixels; anchor centres in pixels
    let pred_px = float::<B, 3>(B::detect_decode_forward(
        boxes.clone().into_primitive().tensor(),
        grid.clone().into_primitive().tensor(),
        BoxFormat::Xyxy,
    ));
    // the label outside [0, C) gets no target and no box weight (see `get_targets`)
    let (gt_idx, fg, score_sum, labels) = if g == 0 || a == 0 || b == 0 {
        let zeros = || Tensor::<B, 2>::zeros([b, a], (&device, dtype));
        let idx = Tensor::<B, 2, Int>::zeros([b, a], (&device, DType::from(int_dtype)));
        (idx, zeros(), zeros(), Tensor::<B, 2, Int>::zeros([b, a], (&device, gt_labels.dtype())))
    } else {
        let anc_px = grid.clone().narrow(0, 0, 2) * grid.clone().narrow(0, 2, 1);
        let (i, f, n) = B::task_aligned_assign(
            scores.clone().into_primitive().tensor(),
            pred_px.into_primitive().tensor(),
            anc_px.into_primitive().tensor(),
            gt_boxes.clone().into_primitive().tensor(),
            gt_labels.clone().into_primitive(),
            gt_mask,
            cfg.tal,
            int_dtype,
        );
        let gt_idx: Tensor<B, 2, Int> = Tensor::from_primitive(i);
        let (labels, score_sum) = get_targets(gt_labels, gt_idx.clone(), float::<B, 2>(n), c);
        (gt_idx, float::<B, 2>(f), score_sum, labels)
    };

    let sums_box = bbox_loss_sums(boxes, grid, gt_boxes, gt_idx.clone(), score_sum.clone(), cfg.image); // [3]
    let cls = bce_onehot_sum(scores, labels.clone(), score_sum.clone()); // [1]
    let sums = Tensor::cat(vec![sums_box.cast(dtype), cls], 0);
    BranchPrims {
        sums: sums.into_primitive().tensor(),
        gt_idx: gt_idx.into_primitive(),
        fg: fg.into_primitive().tensor(),
        score_sum: score_sum.into_primitive().tensor(),
        labels: labels.into_primitive(),
    }
}

/// Tensor-level outputs of [`branch_loss`].
#[derive(Debug, Clone)]
pub struct BranchOutput<B: Backend> {
    /// `[4]` `(box_sum, l1_sum, w_sum, cls_sum)`, differentiable w.r.t. `boxes` and `scores`.
    pub sums: Tensor<B, 1>,
    pub gt_idx: Tensor<B, 2, Int>,
    pub fg: Tensor<B, 2>,
    pub score_sum: Tensor<B, 2>,
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
        sums: float(out.sums),
        gt_idx: Tensor::from_primitive(out.gt_idx),
        fg: float(out.fg),
        score_sum: float(out.score_sum),
        labels: Tensor::from_primitive(out.labels),
    }
}
