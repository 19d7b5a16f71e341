//! CubeCL kernels of the task-aligned assigner: metrics, the top-k of [`crate::topk`], then either one fused
//! launch or resolve, per-GT statistics and targets.
//!
//! # Math (ultralytics 8.4.190 `utils/tal.py::TaskAlignedAssigner._forward`)
//!
//! For image `b`, GT slot `g` (valid when `mask[b, g] > 0`) and anchor `a` (centre `p_a`, pixels):
//!
//! ```text
//! STAL box   : sides of gt[b, g] shorter than stride_val set to stride_val about the centre (valid GTs only)
//! cand[g, a] : valid(g) ∧ p_a strictly inside the STAL box (margin eps on all four sides)
//! ov[g, a]   : cand ? max(CIoU(gt[b, g], pd[b, a]), 0) : 0                 (pd: predicted xyxy pixels)
//! t[g, a]    : cand ? σ(logit[b, label(g), a])^α · ov^β : 0
//! top[g]     : the k anchors of largest t[g, ·] (ties: smaller index)      — `topk` kernel
//! pos[g, a]  : cand[g, a] ∧ a ∈ top[g]
//! owner(a)   : the only g with pos[g, a]; when several, argmax_g ov[g, a] (first maximum, over all slots)
//! one2one    : (topk2 = 1) owner(a) = g is kept only if a = argmax_a' t[g, a']·[owner(a') = g] (first maximum)
//! norm(a)    : t[g, a] · max_{a' ∈ pos(g)} ov[g, a'] / (max_{a' ∈ pos(g)} t[g, a'] + eps) with g = owner(a)
//! ```
//!
//! Outputs per anchor: `gt_idx` (owner, 0 for background), `fg` (0/1), `norm`, the target-score
//! magnitude (ultralytics `target_scores = one_hot(label) · norm`; 0 where the label is outside `[0, C)`),
//! and `labels = gt_labels[b, gt_idx]` (ultralytics `target_labels`, GT slot 0's label for background).
//!
//! Anchors are either centres `[2, A]` in pixels or the anchor grid `[3, A]` (x, y in grid units and the
//! stride: centre = (x·s, y·s)), a comptime switch of the metrics kernel.
//!
//! # Work split
//!
//! - [`tal_metrics_kernel`]: one unit per `(b, g, a)`: `t`, `ov`, `cand` (`[B, G, A]` each); the predicted box
//!   is given in pixels or decoded from the raw distances and the anchor grid (`raw`).
//! - row top-k of `t` viewed as `[B·G, A]` (the shared [`crate::topk`] kernel).
//! - [`tal_resolve_kernel`]: one unit per `(b, a)`: scans the `G` slots and their `k` top entries → owner.
//! - [`tal_gt_stats_kernel`]: one cube per `(b, g)`: tree reductions over the anchors → the GT's
//!   `max t`, `max ov` and (one2one) kept anchor.
//! - [`tal_targets_kernel`]: one unit per `(b, a)` → `gt_idx`, `fg`, `norm`, `labels` (the assigned GT's
//!   class, ultralytics `target_labels`; `norm` is 0 where that class is outside `[0, C)`).
//! - [`fused::tal_assign_fused_kernel`]: the last three in one launch, grid `(⌈A / 256⌉, B)`: a GT's positives are
//!   among its `k` top-k anchors, so each cube rebuilds its image's `G·k` top-k entries in shared memory,
//!   resolves their owners, reduces the per-GT statistics over them (not over all `A` anchors) and writes the
//!   targets of its anchors ([`fused::fused_fits`]: `G ≤ 128`, `G·k ≤ 1280`; else the three kernels).
//!
//! Arithmetic in f32; all tensors contiguous except the logits (read in place through their strides).
pub mod fused;

use cubecl::prelude::*;

use burn::tensor::DType;
use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use crate::ciou::kernels::forward::ciou_parts;

/// Units per cube.
pub(crate) const UNITS: u32 = 256;

/// Owner value of an anchor that no GT claims.
pub(crate) const NO_OWNER: u32 = u32::MAX;

/// `logits [B, C, A]` (float `F`, any strides: read in place), `boxes [B, 4, A]` (xyxy px), `anchors [2, A]`
/// (px; or `[3, A]` x, y, stride with `grid`), `gt_boxes [B, G, 4]`, `gt_labels [B, G]` (int `I`), `gt_mask [B, G]` → `align`, `overlaps` (f32) and
/// `cand` (u32 0/1), `[B, G, A]`.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments, unused_assignments)]
pub fn tal_metrics_kernel<F: Float, I: Int, D: Float>(
    logits: &Tensor<F>,
    boxes: &Tensor<D>,
    anchors: &Tensor<f32>,
    gt_boxes: &Tensor<f32>,
    gt_labels: &Tensor<I>,
    gt_mask: &Tensor<f32>,
    align: &mut Tensor<f32>,
    overlaps: &mut Tensor<f32>,
    cand: &mut Tensor<u32>,
    num_anchors: u32,
    num_gt: u32,
    num_classes: u32,
    total: u32,
    alpha: f32,
    beta: f32,
    eps: f32,
    stride_val: f32,
    #[comptime] grid: bool,
    #[comptime] raw: bool,
    #[define(F, I, D)] _dtypes: [StorageType; 3],
) {
    let i = ABSOLUTE_POS;
    if i < total as usize {
        let na = num_anchors as usize;
        let a = i % na;
        let bg = i / na;
        let b = bg / num_gt as usize;
        let zero = f32::new(0.0);
        let half = f32::new(0.5);

        let x1 = gt_boxes[bg * 4];
        let y1 = gt_boxes[bg * 4 + 1];
        let x2 = gt_boxes[bg * 4 + 2];
        let y2 = gt_boxes[bg * 4 + 3];
        let valid = gt_mask[bg] > zero;
        // select_candidates_in_gts: xyxy → xywh, STAL floor on the sides, back to xyxy
        let cx = (x1 + x2) / f32::new(2.0);
        let cy = (y1 + y2) / f32::new(2.0);
        let mut w = x2 - x1;
        let mut h = y2 - y1;
        if valid && w < stride_val {
            w = stride_val;
        }
        if valid && h < stride_val {
            h = stride_val;
        }
        let sa = anchors.stride(0);
        let gx = anchors[a];
        let gy = anchors[sa + a];
        let mut ax = gx;
        let mut ay = gy;
        let mut stride = f32::new(1.0);
        if grid {
            stride = anchors[2 * sa + a];
            ax *= stride;
            ay *= stride;
        }
        let inside = ax - (cx - w * half) > eps
            && ay - (cy - h * half) > eps
            && (cx + w * half) - ax > eps
            && (cy + h * half) - ay > eps;

        let mut t = zero;
        let mut ov = zero;
        let mut c = 0u32.runtime();
        if inside && valid {
            c = 1u32;
            let mut label = i32::cast_from(gt_labels[bg]);
            label = clamp(label, 0i32, num_classes as i32 - 1i32);
            let logit =
                f32::cast_from(logits[b * logits.stride(0) + label as usize * logits.stride(1) + a * logits.stride(2)]);
            let s = f32::new(1.0) / (f32::new(1.0) + (-logit).exp());
            // predicted xyxy pixels: decoded here from the raw distances (`raw`), or given
            let mut px1 = f32::new(0.0);
            let mut py1 = f32::new(0.0);
            let mut px2 = f32::new(0.0);
            let mut py2 = f32::new(0.0);
            if raw {
                let d0 = b * boxes.stride(0) + a * boxes.stride(2);
                let ds = boxes.stride(1);
                px1 = (gx - f32::cast_from(boxes[d0])) * stride;
                py1 = (gy - f32::cast_from(boxes[d0 + ds])) * stride;
                px2 = (gx + f32::cast_from(boxes[d0 + 2 * ds])) * stride;
                py2 = (gy + f32::cast_from(boxes[d0 + 3 * ds])) * stride;
            } else {
                let pb = b * 4 * na + a;
                px1 = f32::cast_from(boxes[pb]);
                py1 = f32::cast_from(boxes[pb + na]);
                px2 = f32::cast_from(boxes[pb + 2 * na]);
                py2 = f32::cast_from(boxes[pb + 3 * na]);
            }
            let (ciou, _alpha) = ciou_parts(x1, y1, x2, y2, px1, py1, px2, py2);
            ov = max(ciou, zero);
            if ov > zero && s > zero {
                t = f32::powf(s, alpha) * f32::powf(ov, beta);
            }
        }
        align[i] = t;
        overlaps[i] = ov;
        cand[i] = c;
    }
}

/// `cand`, `overlaps [B, G, A]` and the row top-k indices `top [B·G, k]` (int `I`) → `owner [B, A]`
/// (u32, [`NO_OWNER`] when unclaimed).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn tal_resolve_kernel<I: Int>(
    cand: &Tensor<u32>,
    overlaps: &Tensor<f32>,
    top: &Tensor<I>,
    owner: &mut Tensor<u32>,
    num_anchors: u32,
    num_gt: u32,
    k: u32,
    total: u32,
    #[define(I)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i < total as usize {
        let na = num_anchors as usize;
        let ng = num_gt as usize;
        let kk = k as usize;
        let a = i % na;
        let b = i / na;
        let mut count = 0u32.runtime();
        let mut first = NO_OWNER.runtime();
        for g in 0..ng {
            let bg = b * ng + g;
            if cand[bg * na + a] == 1u32 {
                let mut hit = false.runtime();
                for j in 0..kk {
                    if u32::cast_from(top[bg * kk + j]) == a as u32 {
                        hit = true;
                    }
                }
                if hit {
                    if count == 0u32 {
                        first = g as u32;
                    }
                    count += 1u32;
                }
            }
        }
        let mut own = first;
        if count > 1u32 {
            // select_highest_overlaps: argmax over every slot (first maximum)
            let mut best = overlaps[b * ng * na + a];
            let mut best_g = 0u32.runtime();
            for g in 1..ng {
                let v = overlaps[(b * ng + g) * na + a];
                if v > best {
                    best = v;
                    best_g = g as u32;
                }
            }
            own = best_g;
        }
        owner[i] = own;
    }
}

/// One cube per `(b, g)` (grid `B·G`): `owner [B, A]`, `align`, `overlaps [B, G, A]` → `pos_align`,
/// `pos_overlap [B, G]` (maxima over the GT's positives, 0 when none) and `keep [B, G]` (u32: the anchor
/// of largest `t·[owner = g]`, first maximum; only meaningful when `one2one`). With `one2one` the maxima
/// are taken over the kept anchor alone (ultralytics applies `topk2` before normalising).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn tal_gt_stats_kernel(
    owner: &Tensor<u32>,
    align: &Tensor<f32>,
    overlaps: &Tensor<f32>,
    pos_align: &mut Tensor<f32>,
    pos_overlap: &mut Tensor<f32>,
    keep: &mut Tensor<u32>,
    num_anchors: u32,
    num_gt: u32,
    #[comptime] units: usize,
    #[comptime] one2one: bool,
) {
    let na = num_anchors as usize;
    let bg = CUBE_POS_X as usize;
    let b = bg / num_gt as usize;
    let g = (bg % num_gt as usize) as u32;
    let tid = UNIT_POS_X as usize;
    let zero = f32::new(0.0);

    let mut max_t = zero;
    let mut max_ov = zero;
    let mut best_v = f32::new(-1.0);
    let mut best_i = u32::MAX.runtime();
    let mut a = tid;
    while a < na {
        let t = align[bg * na + a];
        let mut m = zero;
        if owner[b * na + a] == g {
            m = t;
            max_t = max(max_t, t);
            max_ov = max(max_ov, overlaps[bg * na + a]);
        }
        // anchors visited in increasing order: a strict `>` keeps the first maximum
        if m > best_v {
            best_v = m;
            best_i = a as u32;
        }
        a += units;
    }

    let mut s_t = SharedMemory::<f32>::new(units);
    let mut s_ov = SharedMemory::<f32>::new(units);
    let mut s_bv = SharedMemory::<f32>::new(units);
    let mut s_bi = SharedMemory::<u32>::new(units);
    s_t[tid] = max_t;
    s_ov[tid] = max_ov;
    s_bv[tid] = best_v;
    s_bi[tid] = best_i;
    sync_cube();
    let mut half = (units / 2).runtime();
    while half > 0 {
        if tid < half {
            let o = tid + half;
            s_t[tid] = max(s_t[tid], s_t[o]);
            s_ov[tid] = max(s_ov[tid], s_ov[o]);
            let (v0, i0) = (s_bv[tid], s_bi[tid]);
            let (v1, i1) = (s_bv[o], s_bi[o]);
            if v1 > v0 || (v1 == v0 && i1 < i0) {
                s_bv[tid] = v1;
                s_bi[tid] = i1;
            }
        }
        sync_cube();
        half /= 2;
    }
    if tid == 0 {
        let kept = s_bi[0];
        keep[bg] = kept;
        if one2one {
            let mut pa = zero;
            let mut po = zero;
            if kept < num_anchors && owner[b * na + kept as usize] == g {
                pa = align[bg * na + kept as usize];
                po = overlaps[bg * na + kept as usize];
            }
            pos_align[bg] = pa;
            pos_overlap[bg] = po;
        } else {
            pos_align[bg] = s_t[0];
            pos_overlap[bg] = s_ov[0];
        }
    }
}

/// One unit per `(b, a)`: `owner [B, A]`, `align [B, G, A]`, `pos_align`, `pos_overlap`, `keep`,
/// `gt_labels [B, G]` (int `L`) → `gt_idx [B, A]` (int `I`), `fg`, `norm [B, A]` (float `F`), `labels [B, A]`
/// (int `L`).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn tal_targets_kernel<F: Float, I: Int, L: Int>(
    owner: &Tensor<u32>,
    align: &Tensor<f32>,
    pos_align: &Tensor<f32>,
    pos_overlap: &Tensor<f32>,
    keep: &Tensor<u32>,
    gt_labels: &Tensor<L>,
    gt_idx: &mut Tensor<I>,
    fg: &mut Tensor<F>,
    norm: &mut Tensor<F>,
    labels: &mut Tensor<L>,
    num_anchors: u32,
    num_gt: u32,
    num_classes: u32,
    total: u32,
    eps: f32,
    #[comptime] one2one: bool,
    #[define(F, I, L)] _dtypes: [StorageType; 3],
) {
    let i = ABSOLUTE_POS;
    if i < total as usize {
        let na = num_anchors as usize;
        let a = i % na;
        let b = i / na;
        let g = owner[i];
        let mut is_fg = g < num_gt;
        let bg = b * num_gt as usize + g as usize;
        if is_fg && one2one {
            is_fg = keep[bg] == a as u32;
        }
        let mut idx = 0u32.runtime();
        let mut f = f32::new(0.0);
        let mut n = f32::new(0.0);
        if is_fg {
            idx = g;
            f = f32::new(1.0);
            n = align[bg * na + a] * pos_overlap[bg] / (pos_align[bg] + eps);
        }
        let label = gt_labels[b * num_gt as usize + idx as usize];
        let class = i64::cast_from(label);
        if class < 0 || class >= num_classes as i64 {
            n = f32::new(0.0);
        }
        gt_idx[i] = I::cast_from(idx);
        fg[i] = F::cast_from(f);
        norm[i] = F::cast_from(n);
        labels[i] = label;
    }
}

fn elemwise_count<R: CubeRuntime>(t: &CubeTensor<R>, n: usize) -> (CubeCount, CubeDim) {
    let cube_dim = CubeDim::new_1d(UNITS);
    (cubecl::calculate_cube_count_elemwise(&t.client, n, cube_dim), cube_dim)
}

/// Launches [`tal_metrics_kernel`]. Shapes: `logits [B, C, A]`, `boxes [B, 4, A]`, `anchors [2, A]`,
/// `gt_boxes [B, G, 4]`, `gt_labels`, `gt_mask [B, G]`; outputs `[B, G, A]`. All f32 but `logits` (any float
/// dtype, any strides), `gt_labels` (any int dtype) and `cand` (u32); all but `logits` contiguous; every output
/// element is written.
#[allow(clippy::too_many_arguments)]
pub fn launch_tal_metrics<R: CubeRuntime>(
    logits: &CubeTensor<R>,
    boxes: &CubeTensor<R>,
    anchors: &CubeTensor<R>,
    gt_boxes: &CubeTensor<R>,
    gt_labels: &CubeTensor<R>,
    gt_mask: &CubeTensor<R>,
    align: &CubeTensor<R>,
    overlaps: &CubeTensor<R>,
    cand: &CubeTensor<R>,
    cfg: &crate::tal::TalConfig,
) {
    launch_tal_metrics_inner(logits, boxes, anchors, gt_boxes, gt_labels, gt_mask, align, overlaps, cand, cfg, false)
}

/// [`launch_tal_metrics`] with the predicted boxes decoded in the kernel: `dist [B, 4, A]` raw LTRB distances
/// (grid units, the dtype of `logits`, any strides) and `anchors [3, A]` the anchor grid (F32, unit stride
/// along `A`; pitched rows are read in place) — ultralytics `bbox_decode` · stride, without the `[B, 4, A]`
/// box tensor and its launch.
#[allow(clippy::too_many_arguments)]
pub fn launch_tal_metrics_raw<R: CubeRuntime>(
    logits: &CubeTensor<R>,
    dist: &CubeTensor<R>,
    anchors: &CubeTensor<R>,
    gt_boxes: &CubeTensor<R>,
    gt_labels: &CubeTensor<R>,
    gt_mask: &CubeTensor<R>,
    align: &CubeTensor<R>,
    overlaps: &CubeTensor<R>,
    cand: &CubeTensor<R>,
    cfg: &crate::tal::TalConfig,
) {
    launch_tal_metrics_inner(logits, dist, anchors, gt_boxes, gt_labels, gt_mask, align, overlaps, cand, cfg, true)
}

#[allow(clippy::too_many_arguments)]
fn launch_tal_metrics_inner<R: CubeRuntime>(
    logits: &CubeTensor<R>,
    boxes: &CubeTensor<R>,
    anchors: &CubeTensor<R>,
    gt_boxes: &CubeTensor<R>,
    gt_labels: &CubeTensor<R>,
    gt_mask: &CubeTensor<R>,
    align: &CubeTensor<R>,
    overlaps: &CubeTensor<R>,
    cand: &CubeTensor<R>,
    cfg: &crate::tal::TalConfig,
    raw: bool,
) {
    let what = if raw { "launch_tal_metrics_raw" } else { "launch_tal_metrics" };
    crate::cube_util::assert_tight(what, &[gt_boxes, gt_labels, gt_mask, align, overlaps, cand]);
    assert_eq!(anchors.meta.strides()[1], 1, "{what}: anchors need unit stride along A");
    let [b, c, a] = logits.meta.shape().dims::<3>();
    let g = gt_boxes.meta.shape()[1];
    assert_eq!(boxes.meta.shape().dims::<3>(), [b, 4, a], "{what}: boxes");
    if raw {
        assert_eq!(boxes.dtype, logits.dtype, "{what}: dist must have the dtype of logits");
        assert_eq!(anchors.meta.shape().dims::<2>(), [3, a], "{what}: anchors must be the [3, A] grid");
    } else {
        crate::cube_util::assert_tight(what, &[boxes]);
        assert_eq!(boxes.dtype, DType::F32, "{what}: boxes must be F32");
    }
    assert_eq!(anchors.dtype, DType::F32, "{what}: anchors must be F32");
    let grid = anchors.meta.shape().dims::<2>() == [3, a];
    assert!(
        grid || anchors.meta.shape().dims::<2>() == [2, a],
        "launch_tal_metrics: anchors must be [2, {a}] (px) or [3, {a}] (grid), got {:?}",
        anchors.meta.shape()
    );
    assert_eq!(gt_boxes.meta.shape().dims::<3>(), [b, g, 4], "launch_tal_metrics: gt_boxes");
    for t in [gt_labels, gt_mask] {
        assert_eq!(t.meta.shape().dims::<2>(), [b, g], "launch_tal_metrics: gt labels/mask");
    }
    for t in [align, overlaps, cand] {
        assert_eq!(t.meta.shape().dims::<3>(), [b, g, a], "launch_tal_metrics: outputs");
    }
    let total = b * g * a;
    if total == 0 {
        return;
    }
    let (count, dim) = elemwise_count(logits, total);
    // SAFETY: every index is below the extents asserted above (`i < B·G·A`, labels clamped to `[0, C)`).
    unsafe {
        tal_metrics_kernel::launch_unchecked::<R>(
            &logits.client,
            count,
            dim,
            logits.clone().into_tensor_arg(),
            boxes.clone().into_tensor_arg(),
            anchors.clone().into_tensor_arg(),
            gt_boxes.clone().into_tensor_arg(),
            gt_labels.clone().into_tensor_arg(),
            gt_mask.clone().into_tensor_arg(),
            align.clone().into_tensor_arg(),
            overlaps.clone().into_tensor_arg(),
            cand.clone().into_tensor_arg(),
            a as u32,
            g as u32,
            c as u32,
            total as u32,
            cfg.alpha as f32,
            cfg.beta as f32,
            cfg.eps as f32,
            cfg.stride_val as f32,
            grid,
            raw,
            [logits.dtype.into(), gt_labels.dtype.into(), boxes.dtype.into()],
        )
    }
}

/// Launches [`tal_resolve_kernel`]: `cand`, `overlaps [B, G, A]`, `top [B·G, k]` → `owner [B, A]` (u32).
pub fn launch_tal_resolve<R: CubeRuntime>(
    cand: &CubeTensor<R>,
    overlaps: &CubeTensor<R>,
    top: &CubeTensor<R>,
    owner: &CubeTensor<R>,
) {
    crate::cube_util::assert_tight("launch_tal_resolve", &[cand, overlaps, top, owner]);
    let [b, g, a] = cand.meta.shape().dims::<3>();
    let [rows, k] = top.meta.shape().dims::<2>();
    assert!(rows == b * g && overlaps.meta.shape().dims::<3>() == [b, g, a], "launch_tal_resolve: shapes");
    assert_eq!(owner.meta.shape().dims::<2>(), [b, a], "launch_tal_resolve: owner");
    let total = b * a;
    if total == 0 {
        return;
    }
    let (count, dim) = elemwise_count(cand, total);
    // SAFETY: `i < B·A`, `g < G`, `j < k`: within the asserted extents.
    unsafe {
        tal_resolve_kernel::launch_unchecked::<R>(
            &cand.client,
            count,
            dim,
            cand.clone().into_tensor_arg(),
            overlaps.clone().into_tensor_arg(),
            top.clone().into_tensor_arg(),
            owner.clone().into_tensor_arg(),
            a as u32,
            g as u32,
            k as u32,
            total as u32,
            top.dtype.into(),
        )
    }
}

/// Launches [`tal_gt_stats_kernel`]: one cube per `(b, g)`.
pub fn launch_tal_gt_stats<R: CubeRuntime>(
    owner: &CubeTensor<R>,
    align: &CubeTensor<R>,
    overlaps: &CubeTensor<R>,
    pos_align: &CubeTensor<R>,
    pos_overlap: &CubeTensor<R>,
    keep: &CubeTensor<R>,
    one2one: bool,
) {
    crate::cube_util::assert_tight("launch_tal_gt_stats", &[owner, align, overlaps, pos_align, pos_overlap, keep]);
    let [b, g, a] = align.meta.shape().dims::<3>();
    assert_eq!(owner.meta.shape().dims::<2>(), [b, a], "launch_tal_gt_stats: owner");
    for t in [pos_align, pos_overlap, keep] {
        assert_eq!(t.meta.shape().dims::<2>(), [b, g], "launch_tal_gt_stats: outputs");
    }
    if b * g == 0 {
        return;
    }
    let units = UNITS as usize;
    // SAFETY: cube `bg < B·G`; anchors `a < A`; the kept index is checked against `A` before use.
    unsafe {
        tal_gt_stats_kernel::launch_unchecked::<R>(
            &align.client,
            CubeCount::Static((b * g) as u32, 1, 1),
            CubeDim::new_1d(UNITS),
            owner.clone().into_tensor_arg(),
            align.clone().into_tensor_arg(),
            overlaps.clone().into_tensor_arg(),
            pos_align.clone().into_tensor_arg(),
            pos_overlap.clone().into_tensor_arg(),
            keep.clone().into_tensor_arg(),
            a as u32,
            g as u32,
            units,
            one2one,
        )
    }
}

/// Launches [`tal_targets_kernel`]: outputs `gt_idx` (int), `fg`, `norm` (float), `labels` (the dtype of
/// `gt_labels`), all `[B, A]`; `num_classes` bounds the valid labels.
#[allow(clippy::too_many_arguments)]
pub fn launch_tal_targets<R: CubeRuntime>(
    owner: &CubeTensor<R>,
    align: &CubeTensor<R>,
    pos_align: &CubeTensor<R>,
    pos_overlap: &CubeTensor<R>,
    keep: &CubeTensor<R>,
    gt_labels: &CubeTensor<R>,
    gt_idx: &CubeTensor<R>,
    fg: &CubeTensor<R>,
    norm: &CubeTensor<R>,
    labels: &CubeTensor<R>,
    num_classes: usize,
    eps: f64,
    one2one: bool,
) {
    crate::cube_util::assert_tight(
        "launch_tal_targets",
        &[owner, align, pos_align, pos_overlap, keep, gt_labels, gt_idx, fg, norm, labels],
    );
    let [b, g, a] = align.meta.shape().dims::<3>();
    for t in [owner, gt_idx, fg, norm, labels] {
        assert_eq!(t.meta.shape().dims::<2>(), [b, a], "launch_tal_targets: [B, A] tensors");
    }
    for t in [pos_align, pos_overlap, keep, gt_labels] {
        assert_eq!(t.meta.shape().dims::<2>(), [b, g], "launch_tal_targets: [B, G] tensors");
    }
    assert_eq!(fg.dtype, norm.dtype, "launch_tal_targets: fg and norm dtypes");
    assert_eq!(labels.dtype, gt_labels.dtype, "launch_tal_targets: labels and gt_labels dtypes");
    assert!(g >= 1, "launch_tal_targets: needs at least one GT slot (G = 0 has no assignment to make)");
    let total = b * a;
    if total == 0 {
        return;
    }
    let (count, dim) = elemwise_count(owner, total);
    // SAFETY: `i < B·A`; the slot `g` is read only when `g < G`; the label slot is `g < G` or 0 (G ≥ 1).
    unsafe {
        tal_targets_kernel::launch_unchecked::<R>(
            &owner.client,
            count,
            dim,
            owner.clone().into_tensor_arg(),
            align.clone().into_tensor_arg(),
            pos_align.clone().into_tensor_arg(),
            pos_overlap.clone().into_tensor_arg(),
            keep.clone().into_tensor_arg(),
            gt_labels.clone().into_tensor_arg(),
            gt_idx.clone().into_tensor_arg(),
            fg.clone().into_tensor_arg(),
            norm.clone().into_tensor_arg(),
            labels.clone().into_tensor_arg(),
            a as u32,
            g as u32,
            num_classes as u32,
            total as u32,
            eps as f32,
            one2one,
            [fg.dtype.into(), gt_idx.dtype.into(), gt_labels.dtype.into()],
        )
    }
}

/// One representative specialisation of each kernel (f32 storage) for the source snapshots of
/// [`crate::snapshot`] (defined, never launched).
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, I32, R, S, T};
    vec![
        kernel_def!(
            "tal_metrics_f32_grid",
            tal_metrics_kernel::TalMetricsKernel<R>,
            units = UNITS,
            [T, T, T, T, T, T, T, T, T, S, S, S, S, S, S, S, S, true, false, [F32, I32, F32]]
        ),
        kernel_def!(
            "tal_metrics_f32_raw",
            tal_metrics_kernel::TalMetricsKernel<R>,
            units = UNITS,
            [T, T, T, T, T, T, T, T, T, S, S, S, S, S, S, S, S, true, true, [F32, I32, F32]]
        ),
        kernel_def!(
            "tal_assign_fused_o2m",
            fused::tal_assign_fused_kernel::TalAssignFusedKernel<R>,
            units = UNITS,
            [T, T, T, T, T, T, T, T, T, S, S, S, S, S, UNITS as usize, false, [F32, I32, I32, I32]]
        ),
        kernel_def!(
            "tal_resolve",
            tal_resolve_kernel::TalResolveKernel<R>,
            units = UNITS,
            [T, T, T, T, S, S, S, S, I32]
        ),
        kernel_def!(
            "tal_gt_stats_one2one",
            tal_gt_stats_kernel::TalGtStatsKernel<R>,
            units = UNITS,
            [T, T, T, T, T, T, S, S, UNITS as usize, true]
        ),
        kernel_def!(
            "tal_targets_f32_one2one",
            tal_targets_kernel::TalTargetsKernel<R>,
            units = UNITS,
            [T, T, T, T, T, T, T, T, T, T, S, S, S, S, S, true, [F32, I32, I32]]
        ),
    ]
}
