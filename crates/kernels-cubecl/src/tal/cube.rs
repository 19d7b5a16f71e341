//! [`TalBackend`] for [`CubeBackend`]: f32 working tensors, the metrics kernel, the shared top-k kernel,
//! then the resolve, per-GT statistics and targets kernels — one fused launch when `G` and `G·k` fit its
//! shared-memory tables ([`fused_fits`]), else three. No host round trip.
use burn::tensor::{DType, IntDType, Shape};
use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::kernels::fused::{fused_fits, launch_tal_assign_fused};
use super::kernels::{
    launch_tal_gt_stats, launch_tal_metrics, launch_tal_metrics_raw, launch_tal_resolve, launch_tal_targets,
};
use super::{check_shapes, reference_assign, TalBackend, TalConfig};
use crate::cube_util::{empty, f32_rows, tight_as};
use crate::topk::{cube::topk, kernels::chunk_for};

impl<R, F, I, BT> TalBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn task_aligned_assign(
        logits: CubeTensor<R>,
        boxes: CubeTensor<R>,
        anchors: CubeTensor<R>,
        gt_boxes: CubeTensor<R>,
        gt_labels: CubeTensor<R>,
        gt_mask: CubeTensor<R>,
        cfg: TalConfig,
        int_dtype: IntDType,
    ) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
        let kernel_path = (cfg.topk2 == cfg.topk || cfg.one2one()) && chunk_for(cfg.topk).is_some();
        if logits.dtype == DType::F64 || !kernel_path {
            return reference_assign::<Self>(logits, boxes, anchors, gt_boxes, gt_labels, gt_mask, cfg, int_dtype);
        }
        let [gt_idx, fg, norm, labels] =
            assign(logits, boxes, anchors, gt_boxes, gt_labels, gt_mask, cfg, int_dtype.into());
        (gt_idx, fg, norm, labels)
    }
}

/// Kernel assignment: `[gt_idx [B, A] of int_dtype, fg, norm [B, A] in the dtype of logits, labels [B, A]
/// in the dtype of gt_labels]`. `anchors` `[2, A]` px or `[3, A]` grid (see [`super::task_aligned_assign`]).
/// Requires `topk2 ∈ {topk, 1}` and a top-k chunk for `topk` ([`chunk_for`]).
#[allow(clippy::too_many_arguments)]
pub fn assign<R: CubeRuntime>(
    logits: CubeTensor<R>,
    boxes: CubeTensor<R>,
    anchors: CubeTensor<R>,
    gt_boxes: CubeTensor<R>,
    gt_labels: CubeTensor<R>,
    gt_mask: CubeTensor<R>,
    cfg: TalConfig,
    int_dtype: DType,
) -> [CubeTensor<R>; 4] {
    assign_inner(logits, boxes, anchors, gt_boxes, gt_labels, gt_mask, cfg, int_dtype, false)
}

/// [`assign`] from the raw head outputs: `dist [B, 4, A]` LTRB distances in grid units (the dtype of `logits`,
/// any strides) and `grid [3, A]` the anchor grid; the metrics kernel decodes the boxes itself (no decode
/// launch, no `[B, 4, A]` box tensor). The same assignment as [`assign`] on `detect_decode(dist, grid, xyxy)`.
#[allow(clippy::too_many_arguments)]
pub fn assign_raw<R: CubeRuntime>(
    logits: CubeTensor<R>,
    dist: CubeTensor<R>,
    grid: CubeTensor<R>,
    gt_boxes: CubeTensor<R>,
    gt_labels: CubeTensor<R>,
    gt_mask: CubeTensor<R>,
    cfg: TalConfig,
    int_dtype: DType,
) -> [CubeTensor<R>; 4] {
    assign_inner(logits, dist, grid, gt_boxes, gt_labels, gt_mask, cfg, int_dtype, true)
}

#[allow(clippy::too_many_arguments)]
fn assign_inner<R: CubeRuntime>(
    logits: CubeTensor<R>,
    boxes: CubeTensor<R>,
    anchors: CubeTensor<R>,
    gt_boxes: CubeTensor<R>,
    gt_labels: CubeTensor<R>,
    gt_mask: CubeTensor<R>,
    cfg: TalConfig,
    int_dtype: DType,
    raw: bool,
) -> [CubeTensor<R>; 4] {
    let (b, c, a, g) = check_shapes(
        logits.meta.shape(),
        boxes.meta.shape(),
        anchors.meta.shape(),
        gt_boxes.meta.shape(),
        gt_labels.meta.shape(),
        gt_mask.meta.shape(),
        &cfg,
    );
    assert!(cfg.topk2 == cfg.topk || cfg.one2one(), "tal kernels: topk2 must equal topk or be 1");
    let chunk = chunk_for(cfg.topk).expect("tal kernels: topk too large for the top-k kernel");
    let out_dtype = logits.dtype;
    let f32t = |t: CubeTensor<R>| tight_as(t, DType::F32);
    // the logits (the largest input, often pitched or strided) and the raw distances are read in place, the
    // anchor rows may be pitched
    let boxes = if raw { boxes } else { f32t(boxes) };
    let (anchors, gt_boxes, gt_mask) = (f32_rows(anchors), f32t(gt_boxes), f32t(gt_mask));
    let labels_dtype = gt_labels.dtype;
    let gt_labels = tight_as(gt_labels, labels_dtype);
    let bga = Shape::new([b, g, a]);
    let align = empty(&logits, bga.clone(), DType::F32);
    let overlaps = empty(&logits, bga.clone(), DType::F32);
    let cand = empty(&logits, bga, DType::U32);
    if raw {
        launch_tal_metrics_raw(
            &logits, &boxes, &anchors, &gt_boxes, &gt_labels, &gt_mask, &align, &overlaps, &cand, &cfg,
        );
    } else {
        launch_tal_metrics(&logits, &boxes, &anchors, &gt_boxes, &gt_labels, &gt_mask, &align, &overlaps, &cand, &cfg);
    }

    let rows = burn_cubecl::ops::reshape(align.clone(), Shape::new([b * g, a]));
    let (_, top) = topk(rows, cfg.topk, chunk, int_dtype);
    let one2one = cfg.one2one();
    let ba = Shape::new([b, a]);
    let gt_idx = empty(&logits, ba.clone(), int_dtype);
    let fg = empty(&logits, ba.clone(), out_dtype);
    let norm = empty(&logits, ba.clone(), out_dtype);
    let labels = empty(&logits, ba, labels_dtype);
    if fused_fits(g, cfg.topk) {
        // resolve, GT statistics and targets in one launch
        launch_tal_assign_fused(
            &cand, &align, &overlaps, &top, &gt_labels, &gt_idx, &fg, &norm, &labels, c, cfg.eps, one2one,
        );
        return [gt_idx, fg, norm, labels];
    }
    let owner = empty(&logits, Shape::new([b, a]), DType::U32);
    launch_tal_resolve(&cand, &overlaps, &top, &owner);

    let bg = Shape::new([b, g]);
    let pos_align = empty(&logits, bg.clone(), DType::F32);
    let pos_overlap = empty(&logits, bg.clone(), DType::F32);
    let keep = empty(&logits, bg, DType::U32);
    launch_tal_gt_stats(&owner, &align, &overlaps, &pos_align, &pos_overlap, &keep, one2one);

    launch_tal_targets(
        &owner,
        &align,
        &pos_align,
        &pos_overlap,
        &keep,
        &gt_labels,
        &gt_idx,
        &fg,
        &norm,
        &labels,
        c,
        cfg.eps,
        one2one,
    );
    [gt_idx, fg, norm, labels]
}

#[cfg(test)]
/// Launch-level entry points with caller-provided outputs (the tests poison them).
pub mod raw {
    pub use super::super::kernels::fused::{fused_fits, launch_tal_assign_fused};
    pub use super::super::kernels::{launch_tal_gt_stats, launch_tal_metrics, launch_tal_resolve, launch_tal_targets};
}
