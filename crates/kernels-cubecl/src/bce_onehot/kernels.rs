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
//! Rows `r = b·C + c` of the logits are spread over the grid's y (and z, past 65 535 rows) axes; along x a
//! cube covers `units·PER_UNIT` consecutive anchors of its row (coalesced: unit `u` takes anchors
//! `u, u + units, …`). No per-element division: `(b, c)` come from the row once per cube.
//! Forward: tree reduction in shared memory, one f32 partial per cube (`[rows, chunks]`); the host sums the
//! partials. Backward: one unit per element.
//!
//! Layouts: the logits may be strided (the head's output, or a CUDA tensor with pitched rows: read in place,
//! no copy); labels, scores and `d_logits` are contiguous.
use cubecl::prelude::*;

use burn::tensor::DType;
use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use crate::bce::kernels::{backward::stable_sigmoid, forward::log1p_unit};

/// Units per cube.
pub const UNITS: usize = 256;

/// Anchors per unit in the forward.
pub const PER_UNIT: usize = 8;

/// Largest grid y extent (CUDA's limit); more rows go to z.
const MAX_Y: usize = 65_535;

/// `(row, b, c)` of this cube; `row ≥ rows` for the padding cubes of the z split.
#[cube]
fn cube_row(num_classes: u32) -> (usize, usize, usize) {
    let row = CUBE_POS_Z as usize * CUBE_COUNT_Y as usize + CUBE_POS_Y as usize;
    let nc = num_classes as usize;
    (row, row / nc, row % nc)
}

/// `(offset of logits[b, c, 0], stride of the anchor axis)`.
#[cube]
fn row_base<F: Float>(logits: &Tensor<F>, b: usize, c: usize) -> (usize, usize) {
    (b * logits.stride(0) + c * logits.stride(1), logits.stride(2))
}

/// `logits [B, C, A]` (strided), `labels`, `scores [B, A]` → `partial [B·C, chunks]` (f32 sums).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments, clippy::assign_op_pattern)]
pub fn bce_onehot_fwd_kernel<F: Float, I: Int>(
    logits: &Tensor<F>,
    labels: &Tensor<I>,
    scores: &Tensor<F>,
    partial: &mut Tensor<f32>,
    rows: u32,
    num_classes: u32,
    num_anchors: u32,
    #[comptime] units: usize,
    #[comptime] per_unit: usize,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let tid = UNIT_POS_X as usize;
    let (row, b, c) = cube_row(num_classes);
    let na = num_anchors as usize;
    let mut acc = f32::new(0.0);
    if row < rows as usize {
        let (base, sa) = row_base::<F>(logits, b, c);
        let first = CUBE_POS_X as usize * units * per_unit;
        for k in 0..per_unit {
            let a = first + k * units + tid;
            if a < na {
                let x = f32::cast_from(logits[base + a * sa]);
                let mut t = f32::new(0.0);
                if i32::cast_from(labels[b * na + a]) == c as i32 {
                    t = f32::cast_from(scores[b * na + a]);
                }
                let u = (-x.abs()).exp();
                acc = acc + (max(x, f32::new(0.0)) - x * t + log1p_unit(u));
            }
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
    if tid == 0 && row < rows as usize {
        partial[row * CUBE_COUNT_X as usize + CUBE_POS_X as usize] = s[0];
    }
}

/// `logits [B, C, A]` (strided), `labels`, `scores [B, A]`, `d_total [1]` → `d_logits [B, C, A]` (contiguous).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn bce_onehot_bwd_kernel<F: Float, I: Int>(
    logits: &Tensor<F>,
    labels: &Tensor<I>,
    scores: &Tensor<F>,
    d_total: &Tensor<F>,
    d_logits: &mut Tensor<F>,
    rows: u32,
    num_classes: u32,
    num_anchors: u32,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let (row, b, c) = cube_row(num_classes);
    let na = num_anchors as usize;
    let a = CUBE_POS_X as usize * CUBE_DIM_X as usize + UNIT_POS_X as usize;
    if row < rows as usize && a < na {
        let (base, sa) = row_base::<F>(logits, b, c);
        let x = f32::cast_from(logits[base + a * sa]);
        let mut t = f32::new(0.0);
        if i32::cast_from(labels[b * na + a]) == c as i32 {
            t = f32::cast_from(scores[b * na + a]);
        }
        let g = f32::cast_from(d_total[0]);
        d_logits[row * na + a] = F::cast_from(g * (stable_sigmoid(x) - t));
    }
}

/// Grid `(x, y, z)` for `rows` rows of `x` cubes each.
fn grid(x: usize, rows: usize) -> CubeCount {
    let y = rows.clamp(1, MAX_Y);
    CubeCount::Static(x as u32, y as u32, rows.div_ceil(y).max(1) as u32)
}

/// Number of forward partials (`rows · chunks`, f32) for logits `[B, C, A]`: `(B·C, ⌈A / (units·PER_UNIT)⌉)`.
pub fn forward_split(b: usize, c: usize, a: usize) -> (usize, usize) {
    (b * c, a.div_ceil(UNITS * PER_UNIT).max(1))
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

/// Launches [`bce_onehot_fwd_kernel`] into `partial` (f32, contiguous `[rows, chunks]` of [`forward_split`],
/// every element written). `logits` may be strided; `labels`, `scores` contiguous.
pub fn launch_bce_onehot_forward<R: CubeRuntime>(
    logits: &CubeTensor<R>,
    labels: &CubeTensor<R>,
    scores: &CubeTensor<R>,
    partial: &CubeTensor<R>,
) {
    crate::attention::kernels::assert_tight("launch_bce_onehot_forward", &[labels, scores, partial]);
    let [b, c, a] = check("launch_bce_onehot_forward", logits, labels, scores);
    let (rows, chunks) = forward_split(b, c, a);
    assert_eq!(partial.meta.shape().dims::<2>(), [rows, chunks], "launch_bce_onehot_forward: partial");
    assert_eq!(partial.dtype, DType::F32, "launch_bce_onehot_forward: partial dtype");
    if rows * a == 0 {
        return;
    }
    // SAFETY: rows are checked against `B·C` and anchors against `A`; logits are read through their own
    // strides at `(b, c, a)` inside the shape; labels/scores at `b·A + a < B·A`; partials at
    // `row·chunks + x < rows·chunks`.
    unsafe {
        bce_onehot_fwd_kernel::launch_unchecked::<R>(
            &logits.client,
            grid(chunks, rows),
            CubeDim::new_1d(UNITS as u32),
            logits.clone().into_tensor_arg(),
            labels.clone().into_tensor_arg(),
            scores.clone().into_tensor_arg(),
            partial.clone().into_tensor_arg(),
            rows as u32,
            c as u32,
            a as u32,
            UNITS,
            PER_UNIT,
            [logits.dtype.into(), labels.dtype.into()],
        )
    }
}

/// Launches [`bce_onehot_bwd_kernel`] into `d_logits` (contiguous `[B, C, A]`, logits' dtype, every element
/// written). `logits` may be strided; the other tensors contiguous.
pub fn launch_bce_onehot_backward<R: CubeRuntime>(
    logits: &CubeTensor<R>,
    labels: &CubeTensor<R>,
    scores: &CubeTensor<R>,
    d_total: &CubeTensor<R>,
    d_logits: &CubeTensor<R>,
) {
    crate::attention::kernels::assert_tight("launch_bce_onehot_backward", &[labels, scores, d_total, d_logits]);
    let [b, c, a] = check("launch_bce_onehot_backward", logits, labels, scores);
    assert_eq!(d_logits.meta.shape().dims::<3>(), [b, c, a], "launch_bce_onehot_backward: d_logits");
    assert_eq!(d_total.meta.shape().num_elements(), 1, "launch_bce_onehot_backward: d_total");
    let rows = b * c;
    if rows * a == 0 {
        return;
    }
    // SAFETY: rows are checked against `B·C` and anchors against `A`; logits are read through their own
    // strides inside the shape; `d_logits` written at `row·A + a < B·C·A`; `d_total` has one element.
    unsafe {
        bce_onehot_bwd_kernel::launch_unchecked::<R>(
            &logits.client,
            grid(a.div_ceil(UNITS), rows),
            CubeDim::new_1d(UNITS as u32),
            logits.clone().into_tensor_arg(),
            labels.clone().into_tensor_arg(),
            scores.clone().into_tensor_arg(),
            d_total.clone().into_tensor_arg(),
            d_logits.clone().into_tensor_arg(),
            rows as u32,
            c as u32,
            a as u32,
            [logits.dtype.into(), labels.dtype.into()],
        )
    }
}
