//! The fused assigner kernel: resolve, per-GT statistics and targets of [`super`] in one launch
//! (math in that module's doc; the three separate kernels remain for problems past the shared-memory tables).
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::{NO_OWNER, UNITS};

/// Slots and top-k entries per image the fused kernel holds in shared memory; larger problems take the
/// three-kernel path.
pub const FUSED_MAX_GT: usize = 128;
/// See [`FUSED_MAX_GT`]: `G·k` at most this.
pub const FUSED_MAX_ENTRIES: usize = 1280;

/// Resolve, per-GT statistics and targets in one launch. Grid `(⌈A / units⌉, B)`. The positives of GT `g`
/// are among its `k` top-k anchors, so each cube first rebuilds its image's `G·k` top-k entries in shared
/// memory (anchor, claim = `cand`, owner by the rule of [`super::tal_resolve_kernel`]), then the per-GT maxima and
/// kept anchor of [`super::tal_gt_stats_kernel`] over those entries (not over all `A` anchors), then writes the
/// outputs of [`super::tal_targets_kernel`] for its `units` anchors. Same results as the three kernels.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn tal_assign_fused_kernel<F: Float, I: Int, T: Int, L: Int>(
    cand: &Tensor<u32>,
    align: &Tensor<f32>,
    overlaps: &Tensor<f32>,
    top: &Tensor<T>,
    gt_labels: &Tensor<L>,
    gt_idx: &mut Tensor<I>,
    fg: &mut Tensor<F>,
    norm: &mut Tensor<F>,
    labels: &mut Tensor<L>,
    num_anchors: u32,
    num_gt: u32,
    num_classes: u32,
    k: u32,
    eps: f32,
    #[comptime] units: usize,
    #[comptime] one2one: bool,
    #[define(F, I, T, L)] _dtypes: [StorageType; 4],
) {
    let tid = UNIT_POS_X as usize;
    let b = CUBE_POS_Y as usize;
    let na = num_anchors as usize;
    let ng = num_gt as usize;
    let kk = k as usize;
    let ne = ng * kk;
    let start = CUBE_POS_X as usize * units;
    let zero = f32::new(0.0);
    let mut s_anchor = SharedMemory::<u32>::new(FUSED_MAX_ENTRIES);
    let mut s_claim = SharedMemory::<u32>::new(FUSED_MAX_ENTRIES);
    let mut s_pos = SharedMemory::<u32>::new(FUSED_MAX_ENTRIES);
    let mut s_pa = SharedMemory::<f32>::new(FUSED_MAX_GT);
    let mut s_po = SharedMemory::<f32>::new(FUSED_MAX_GT);
    let mut s_keep = SharedMemory::<u32>::new(FUSED_MAX_GT);
    let mut s_own = SharedMemory::<u32>::new(units);

    // the image's top-k entries: anchor and claim (candidate of its GT)
    let mut e = tid;
    while e < ne {
        let g = e / kk;
        let a = u32::cast_from(top[(b * ng + g) * kk + e % kk]);
        s_anchor[e] = a;
        s_claim[e] = cand[(b * ng + g) * na + a as usize];
        e += units;
    }
    s_own[tid] = NO_OWNER;
    sync_cube();

    // positive = claimed and owned by its GT (several claims on one anchor: argmax over all slots of the
    // overlaps, first maximum — select_highest_overlaps)
    let mut e = tid;
    while e < ne {
        let mut p = 0u32.runtime();
        if s_claim[e] == 1u32 {
            let a = s_anchor[e];
            let mut count = 0u32.runtime();
            for e2 in 0..ne {
                if s_claim[e2] == 1u32 && s_anchor[e2] == a {
                    count += 1u32;
                }
            }
            let g = (e / kk) as u32;
            let mut own = g;
            if count > 1u32 {
                let mut best = overlaps[b * ng * na + a as usize];
                let mut best_g = 0u32.runtime();
                for g2 in 1..ng {
                    let v = overlaps[(b * ng + g2) * na + a as usize];
                    if v > best {
                        best = v;
                        best_g = g2 as u32;
                    }
                }
                own = best_g;
            }
            if own == g {
                p = 1u32;
            }
        }
        s_pos[e] = p;
        e += units;
    }
    sync_cube();

    // per GT: maxima of t and ov over its positives; one2one: the kept anchor (first anchor of largest
    // t·[owner = g] over all anchors: the smallest positive index of the largest t, or anchor 0 when that
    // largest value is 0) and the maxima over it alone
    let mut g = tid;
    while g < ng {
        let row = (b * ng + g) * na;
        let mut max_t = zero;
        let mut max_ov = zero;
        let mut best_v = f32::new(-1.0);
        let mut best_a = u32::MAX.runtime();
        let mut owns0 = false.runtime();
        for j in 0..kk {
            let e = g * kk + j;
            if s_pos[e] == 1u32 {
                let a = s_anchor[e];
                let t = align[row + a as usize];
                max_t = max(max_t, t);
                max_ov = max(max_ov, overlaps[row + a as usize]);
                if t > best_v || (t == best_v && a < best_a) {
                    best_v = t;
                    best_a = a;
                }
                if a == 0u32 {
                    owns0 = true;
                }
            }
        }
        let mut keep = 0u32.runtime();
        let mut owns_keep = owns0;
        if best_v > zero {
            keep = best_a;
            owns_keep = true;
        }
        s_keep[g] = keep;
        if one2one {
            let mut pa = zero;
            let mut po = zero;
            if owns_keep {
                pa = align[row + keep as usize];
                po = overlaps[row + keep as usize];
            }
            s_pa[g] = pa;
            s_po[g] = po;
        } else {
            s_pa[g] = max_t;
            s_po[g] = max_ov;
        }
        g += units;
    }
    // owners of this cube's anchors (an anchor has at most one positive entry)
    let mut e = tid;
    while e < ne {
        if s_pos[e] == 1u32 {
            let a = s_anchor[e] as usize;
            if a >= start && a < start + units {
                s_own[a - start] = (e / kk) as u32;
            }
        }
        e += units;
    }
    sync_cube();

    let a = start + tid;
    if a < na {
        let i = b * na + a;
        let g = s_own[tid];
        let mut is_fg = g < num_gt;
        if is_fg && one2one {
            is_fg = s_keep[g as usize] == a as u32;
        }
        let mut idx = 0u32.runtime();
        let mut f = zero;
        let mut n = zero;
        if is_fg {
            idx = g;
            f = f32::new(1.0);
            let gi = g as usize;
            n = align[(b * ng + gi) * na + a] * s_po[gi] / (s_pa[gi] + eps);
        }
        let label = gt_labels[b * ng + idx as usize];
        let class = i64::cast_from(label);
        if class < 0 || class >= num_classes as i64 {
            n = zero;
        }
        gt_idx[i] = I::cast_from(idx);
        fg[i] = F::cast_from(f);
        norm[i] = F::cast_from(n);
        labels[i] = label;
    }
}

/// Whether [`tal_assign_fused_kernel`] takes `G` slots and top-`k`.
pub fn fused_fits(g: usize, k: usize) -> bool {
    (1..=FUSED_MAX_GT).contains(&g) && g * k <= FUSED_MAX_ENTRIES
}

/// Launches [`tal_assign_fused_kernel`]: `cand`, `align`, `overlaps [B, G, A]`, `top [B·G, k]` (int),
/// `gt_labels [B, G]` → `gt_idx` (int), `fg`, `norm` (float), `labels` (the dtype of `gt_labels`), all `[B, A]`,
/// contiguous, every element written. Requires [`fused_fits`].
#[allow(clippy::too_many_arguments)]
pub fn launch_tal_assign_fused<R: CubeRuntime>(
    cand: &CubeTensor<R>,
    align: &CubeTensor<R>,
    overlaps: &CubeTensor<R>,
    top: &CubeTensor<R>,
    gt_labels: &CubeTensor<R>,
    gt_idx: &CubeTensor<R>,
    fg: &CubeTensor<R>,
    norm: &CubeTensor<R>,
    labels: &CubeTensor<R>,
    num_classes: usize,
    eps: f64,
    one2one: bool,
) {
    let what = "launch_tal_assign_fused";
    crate::cube_util::assert_tight(what, &[cand, align, overlaps, top, gt_labels, gt_idx, fg, norm, labels]);
    let [b, g, a] = align.meta.shape().dims::<3>();
    let [rows, k] = top.meta.shape().dims::<2>();
    assert!(rows == b * g && k <= a, "{what}: top must be [B·G, k] with k ≤ A");
    for t in [cand, overlaps] {
        assert_eq!(t.meta.shape().dims::<3>(), [b, g, a], "{what}: [B, G, A] tensors");
    }
    for t in [gt_idx, fg, norm, labels] {
        assert_eq!(t.meta.shape().dims::<2>(), [b, a], "{what}: [B, A] outputs");
    }
    assert_eq!(gt_labels.meta.shape().dims::<2>(), [b, g], "{what}: gt_labels");
    assert_eq!(fg.dtype, norm.dtype, "{what}: fg and norm dtypes");
    assert_eq!(labels.dtype, gt_labels.dtype, "{what}: labels and gt_labels dtypes");
    assert!(fused_fits(g, k), "{what}: G = {g}, k = {k} exceed the shared-memory tables");
    assert!(b <= 65_535, "{what}: at most 65 535 images per call (grid y), got {b}");
    if b * a == 0 {
        return;
    }
    let units = UNITS as usize;
    // SAFETY: entries `e < G·k ≤ FUSED_MAX_ENTRIES`, slots `g < G ≤ FUSED_MAX_GT`; top-k indices are anchors
    // `< A` (the top-k kernel's output); outputs at `b·A + a` with `a < A`.
    unsafe {
        tal_assign_fused_kernel::launch_unchecked::<R>(
            &align.client,
            CubeCount::Static(a.div_ceil(units) as u32, b as u32, 1),
            CubeDim::new_1d(UNITS),
            cand.clone().into_tensor_arg(),
            align.clone().into_tensor_arg(),
            overlaps.clone().into_tensor_arg(),
            top.clone().into_tensor_arg(),
            gt_labels.clone().into_tensor_arg(),
            gt_idx.clone().into_tensor_arg(),
            fg.clone().into_tensor_arg(),
            norm.clone().into_tensor_arg(),
            labels.clone().into_tensor_arg(),
            a as u32,
            g as u32,
            num_classes as u32,
            k as u32,
            eps as f32,
            units,
            one2one,
            [fg.dtype.into(), gt_idx.dtype.into(), top.dtype.into(), gt_labels.dtype.into()],
        )
    }
}
