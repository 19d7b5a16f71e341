//! Kernels of the one-hot BCE sum.
//!
//! # Math
//!
//! For logits `x[b, c, a]` and per-anchor `(label[b, a], score[b, a])`, the target is
//! `t[b, c, a] = score[b, a]·[c = label[b, a]]` and
//!
//! ```text
//! L = Σ_{b,c,a} max(x, 0) − x·t + ln(1 + e^{−|x|})          ∂L/∂x = σ(x) − t
//! ```
//!
//! (the stable BCE-with-logits of [`crate::bce`], `ln(1 + u)` by its `atanh` series).
//!
//! # Work split
//!
//! Forward: cube `i` sums `units·per_unit` consecutive elements (unit `u` takes elements `u, u + units, …`:
//! coalesced), tree reduction in shared memory, one f32 partial per cube; the host sums the partials.
//! Backward: one unit per element. Tensors contiguous; `x` in its `[B, C, A]` layout (the detection head's).
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use crate::bce::kernels::{backward::stable_sigmoid, forward::log1p_unit};

/// Units per cube.
pub const UNITS: usize = 256;

/// Target of element `i` (`[B, C, A]` flat index).
#[cube]
fn target<F: Float, I: Int>(labels: &Tensor<I>, scores: &Tensor<F>, i: usize, nc: usize, na: usize) -> f32 {
    let a = i % na;
    let bc = i / na;
    let c = bc % nc;
    let ba = (bc / nc) * na + a;
    let mut t = f32::new(0.0);
    if i32::cast_from(labels[ba]) == c as i32 {
        t = f32::cast_from(scores[ba]);
    }
    t
}

/// `logits [B, C, A]`, `labels`, `scores [B, A]` → `partial [cubes]` (f32 sums).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments, clippy::assign_op_pattern)]
pub fn bce_onehot_fwd_kernel<F: Float, I: Int>(
    logits: &Tensor<F>,
    labels: &Tensor<I>,
    scores: &Tensor<F>,
    partial: &mut Tensor<f32>,
    n: u32,
    num_classes: u32,
    num_anchors: u32,
    per_unit: u32,
    #[comptime] units: usize,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let tid = UNIT_POS_X as usize;
    let cube = CUBE_POS_X as usize;
    let n = n as usize;
    let per_unit = per_unit as usize;
    let base = cube * units * per_unit;
    let mut acc = f32::new(0.0);
    for k in 0..per_unit {
        let i = base + k * units + tid;
        if i < n {
            let x = f32::cast_from(logits[i]);
            let t = target::<F, I>(labels, scores, i, num_classes as usize, num_anchors as usize);
            let u = (-x.abs()).exp();
            acc = acc + (max(x, f32::new(0.0)) - x * t + log1p_unit(u));
        }
    }
    let mut s = SharedMemory::<f32>::new(units);
    s[tid] = acc;
    sync_cube();
    let mut half = (units / 2).runtime();
    while half > 0 {
        if tid < half {
            s[tid] = s[tid] + s[tid + half];
        }
        sync_cube();
        half /= 2;
    }
    if tid == 0 {
        partial[cube] = s[0];
    }
}

/// `logits [B, C, A]`, `labels`, `scores [B, A]`, `d_total [1]` → `d_logits [B, C, A]`.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn bce_onehot_bwd_kernel<F: Float, I: Int>(
    logits: &Tensor<F>,
    labels: &Tensor<I>,
    scores: &Tensor<F>,
    d_total: &Tensor<F>,
    d_logits: &mut Tensor<F>,
    n: u32,
    num_classes: u32,
    num_anchors: u32,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let i = ABSOLUTE_POS;
    if i < n as usize {
        let x = f32::cast_from(logits[i]);
        let t = target::<F, I>(labels, scores, i, num_classes as usize, num_anchors as usize);
        let g = f32::cast_from(d_total[0]);
        d_logits[i] = F::cast_from(g * (stable_sigmoid(x) - t));
    }
}

/// Elements per unit and number of cubes of the forward for `n` elements (grid x ≤ 65 535).
pub fn forward_split(n: usize) -> (usize, usize) {
    let per_unit = n.div_ceil(UNITS * 65_535).max(16);
    (per_unit, n.div_ceil(UNITS * per_unit).max(1))
}

fn check<R: CubeRuntime>(
    what: &str,
    logits: &CubeTensor<R>,
    labels: &CubeTensor<R>,
    scores: &CubeTensor<R>,
) -> [usize; 3] {
    let [b, c, a] = logits.meta.shape().dims::<3>();
    assert_eq!(labels.meta.shape().dims::<2>(), [b, a], "{what}: labels");
    assert_eq!(scores.meta.shape().dims::<2>(), [b, a], "{what}: scores");
    assert_eq!(scores.dtype, logits.dtype, "{what}: scores dtype");
    [b, c, a]
}

/// Launches [`bce_onehot_fwd_kernel`] into `partial` (f32, `[forward_split(n).1]`, every element written).
pub fn launch_bce_onehot_forward<R: CubeRuntime>(
    logits: &CubeTensor<R>,
    labels: &CubeTensor<R>,
    scores: &CubeTensor<R>,
    partial: &CubeTensor<R>,
) {
    crate::attention::kernels::assert_tight("launch_bce_onehot_forward", &[logits, labels, scores, partial]);
    let [b, c, a] = check("launch_bce_onehot_forward", logits, labels, scores);
    let n = b * c * a;
    let (per_unit, cubes) = forward_split(n);
    assert_eq!(partial.meta.shape().dims::<1>(), [cubes], "launch_bce_onehot_forward: partial");
    // SAFETY: every element index is checked against `n`; labels/scores are read at `[b, a]` < `B·A`.
    unsafe {
        bce_onehot_fwd_kernel::launch_unchecked::<R>(
            &logits.client,
            CubeCount::Static(cubes as u32, 1, 1),
            CubeDim::new_1d(UNITS as u32),
            logits.clone().into_tensor_arg(),
            labels.clone().into_tensor_arg(),
            scores.clone().into_tensor_arg(),
            partial.clone().into_tensor_arg(),
            n as u32,
            c as u32,
            a as u32,
            per_unit as u32,
            UNITS,
            [logits.dtype.into(), labels.dtype.into()],
        )
    }
}

/// Launches [`bce_onehot_bwd_kernel`] into `d_logits` (`[B, C, A]`, logits' dtype, every element written).
pub fn launch_bce_onehot_backward<R: CubeRuntime>(
    logits: &CubeTensor<R>,
    labels: &CubeTensor<R>,
    scores: &CubeTensor<R>,
    d_total: &CubeTensor<R>,
    d_logits: &CubeTensor<R>,
) {
    crate::attention::kernels::assert_tight("launch_bce_onehot_backward", &[logits, labels, scores, d_total, d_logits]);
    let [b, c, a] = check("launch_bce_onehot_backward", logits, labels, scores);
    assert_eq!(d_logits.meta.shape().dims::<3>(), [b, c, a], "launch_bce_onehot_backward: d_logits");
    assert_eq!(d_total.meta.shape().num_elements(), 1, "launch_bce_onehot_backward: d_total");
    let n = b * c * a;
    let cube_dim = CubeDim::new_1d(UNITS as u32);
    let count = cubecl::calculate_cube_count_elemwise(&logits.client, n, cube_dim);
    // SAFETY: `i < n`; labels/scores read at `[b, a]` < `B·A`; `d_total` has one element.
    unsafe {
        bce_onehot_bwd_kernel::launch_unchecked::<R>(
            &logits.client,
            count,
            cube_dim,
            logits.clone().into_tensor_arg(),
            labels.clone().into_tensor_arg(),
            scores.clone().into_tensor_arg(),
            d_total.clone().into_tensor_arg(),
            d_logits.clone().into_tensor_arg(),
            n as u32,
            c as u32,
            a as u32,
            [logits.dtype.into(), labels.dtype.into()],
        )
    }
}
