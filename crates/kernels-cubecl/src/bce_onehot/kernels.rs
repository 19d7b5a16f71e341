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
//! (the stable BCE-with-logits of [`crate::bce`]). Both kernels are compiled with fast math: on CUDA `exp`,
//! `ln` and the reciprocal are the hardware approximations (a few ulp; the forward was compute-bound on the
//! `atanh` series of [`crate::bce`]'s `log1p` — 91 µs per `[64, 80, 8400]` call on an H200, twice its
//! memory floor). Logits are assumed finite.
//!
//! # Work split
//!
//! Grid `(⌈A / units⌉, B)`: unit `u` of cube `x` owns anchor `a = x·units + u` of image `b` and walks the `C`
//! class rows (four independent loads per step; a warp's loads of one row are coalesced). The label and
//! score of the anchor are read once, not once per class: the sums split as
//! `Σ_c [max(x, 0) + ln(1 + e^{−|x|})] − x_label·score` (forward) and the backward writes `d·σ(x)` for
//! every class, then `d·(σ(x_label) − score)` at the label's row (same unit, program order).
//! Forward: tree reduction in shared memory, one f32 partial per cube (`[B, chunks]`); the caller sums the
//! partials.
//!
//! Layouts: the logits may be strided (the head's output, or a CUDA tensor with pitched rows: read in place,
//! no copy); labels, scores and `d_logits` are contiguous. A label outside `[0, C)` has no target.
use cubecl::prelude::*;

use burn::tensor::DType;
use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use cubecl::ir::FastMath;

/// Units per cube (one anchor each).
pub const UNITS: usize = 256;

/// `max(x, 0) + ln(1 + e^{−|x|})`: the BCE-with-logits of a zero target (hardware `exp`/`ln` on CUDA).
#[cube]
pub(crate) fn bce_zero(x: f32) -> f32 {
    max(x, f32::new(0.0)) + (f32::new(1.0) + (-x.abs()).exp()).ln()
}

/// `σ(x)` without overflow from one reciprocal: `r = 1/(1 + e^{−|x|})`, `σ = r` for `x ≥ 0`, `e^{−|x|}·r`
/// otherwise.
#[cube]
pub(crate) fn sigmoid(x: f32) -> f32 {
    let u = (-x.abs()).exp();
    let r = f32::new(1.0) / (f32::new(1.0) + u);
    let mut sig = u * r;
    if x >= f32::new(0.0) {
        sig = r;
    }
    sig
}

/// `Σ_c bce(x_c, 0)` over the `C` class rows of one anchor (`logits[base + c·s1]`), four independent loads
/// per step. Shared by this forward and the detection-loss anchor pass.
#[cube]
#[allow(clippy::assign_op_pattern)]
pub(crate) fn class_bce_zero_sum<F: Float>(logits: &Tensor<F>, base: usize, s1: usize, nc: usize) -> f32 {
    let mut acc = f32::new(0.0);
    let c4 = nc - nc % 4;
    let mut c = 0usize;
    while c < c4 {
        let x0 = f32::cast_from(logits[base + c * s1]);
        let x1 = f32::cast_from(logits[base + (c + 1) * s1]);
        let x2 = f32::cast_from(logits[base + (c + 2) * s1]);
        let x3 = f32::cast_from(logits[base + (c + 3) * s1]);
        acc = acc + ((bce_zero(x0) + bce_zero(x1)) + (bce_zero(x2) + bce_zero(x3)));
        c += 4;
    }
    while c < nc {
        acc = acc + bce_zero(f32::cast_from(logits[base + c * s1]));
        c += 1;
    }
    acc
}

/// Writes `g·σ(x_c)` for the `C` classes of one anchor (`d_logits[out + c·na]`), then `g·(σ(x_y) − w)` at a
/// label `y ∈ [0, C)`. Shared by this backward and the detection-loss anchor pass.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_class_grads<F: Float>(
    logits: &Tensor<F>,
    d_logits: &mut Tensor<F>,
    base: usize,
    s1: usize,
    out: usize,
    na: usize,
    nc: usize,
    label: i32,
    w: f32,
    g: f32,
) {
    let c4 = nc - nc % 4;
    let mut c = 0usize;
    while c < c4 {
        let x0 = f32::cast_from(logits[base + c * s1]);
        let x1 = f32::cast_from(logits[base + (c + 1) * s1]);
        let x2 = f32::cast_from(logits[base + (c + 2) * s1]);
        let x3 = f32::cast_from(logits[base + (c + 3) * s1]);
        d_logits[out + c * na] = F::cast_from(g * sigmoid(x0));
        d_logits[out + (c + 1) * na] = F::cast_from(g * sigmoid(x1));
        d_logits[out + (c + 2) * na] = F::cast_from(g * sigmoid(x2));
        d_logits[out + (c + 3) * na] = F::cast_from(g * sigmoid(x3));
        c += 4;
    }
    while c < nc {
        d_logits[out + c * na] = F::cast_from(g * sigmoid(f32::cast_from(logits[base + c * s1])));
        c += 1;
    }
    if label >= 0 && label < nc as i32 {
        let lb = label as usize;
        let x = f32::cast_from(logits[base + lb * s1]);
        d_logits[out + lb * na] = F::cast_from(g * (sigmoid(x) - w));
    }
}

/// `logits [B, C, A]` (strided), `labels`, `scores [B, A]` → `partial [B, chunks]` (f32 sums).
#[cube(launch_unchecked, fast_math = FastMath::ReducedPrecision | FastMath::NotNaN | FastMath::NotInf)]
#[allow(clippy::too_many_arguments, clippy::assign_op_pattern)]
pub fn bce_onehot_fwd_kernel<F: Float, I: Int>(
    logits: &Tensor<F>,
    labels: &Tensor<I>,
    scores: &Tensor<F>,
    partial: &mut Tensor<f32>,
    num_classes: u32,
    num_anchors: u32,
    #[comptime] units: usize,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let tid = UNIT_POS_X as usize;
    let b = CUBE_POS_Y as usize;
    let na = num_anchors as usize;
    let nc = num_classes as usize;
    let a = CUBE_POS_X as usize * units + tid;
    let mut acc = f32::new(0.0);
    if a < na {
        let s1 = logits.stride(1);
        let base = b * logits.stride(0) + a * logits.stride(2);
        acc = class_bce_zero_sum::<F>(logits, base, s1, nc);
        let label = i32::cast_from(labels[b * na + a]);
        if label >= 0 && label < nc as i32 {
            let x = f32::cast_from(logits[base + label as usize * s1]);
            acc = acc - x * f32::cast_from(scores[b * na + a]);
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
        partial[b * CUBE_COUNT_X as usize + CUBE_POS_X as usize] = s[0];
    }
}

/// `logits [B, C, A]` (strided), `labels`, `scores [B, A]`, `d_total [1]` → `d_logits [B, C, A]` (contiguous).
#[cube(
    launch_unchecked,
    fast_math = FastMath::ReducedPrecision
        | FastMath::NotNaN
        | FastMath::NotInf
        | FastMath::AllowReciprocal
        | FastMath::UnsignedZero
)]
#[allow(clippy::too_many_arguments)]
pub fn bce_onehot_bwd_kernel<F: Float, I: Int>(
    logits: &Tensor<F>,
    labels: &Tensor<I>,
    scores: &Tensor<F>,
    d_total: &Tensor<F>,
    d_logits: &mut Tensor<F>,
    num_classes: u32,
    num_anchors: u32,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let b = CUBE_POS_Y as usize;
    let na = num_anchors as usize;
    let nc = num_classes as usize;
    let a = CUBE_POS_X as usize * CUBE_DIM_X as usize + UNIT_POS_X as usize;
    if a < na {
        let s1 = logits.stride(1);
        let base = b * logits.stride(0) + a * logits.stride(2);
        let out = b * nc * na + a;
        let g = f32::cast_from(d_total[0]);
        let label = i32::cast_from(labels[b * na + a]);
        let w = f32::cast_from(scores[b * na + a]);
        write_class_grads::<F>(logits, d_logits, base, s1, out, na, nc, label, w, g);
    }
}

/// Number of forward partials (f32) for logits `[B, C, A]`: `(B, ⌈A / units⌉)`.
pub fn forward_split(b: usize, _c: usize, a: usize) -> (usize, usize) {
    (b, a.div_ceil(UNITS).max(1))
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
    assert!(b <= 65_535, "{what}: at most 65 535 images per call (grid y), got {b}");
    [b, c, a]
}

/// Launches [`bce_onehot_fwd_kernel`] into `partial` (f32, contiguous `[B, chunks]` of [`forward_split`],
/// every element written). `logits` may be strided; `labels`, `scores` contiguous.
pub fn launch_bce_onehot_forward<R: CubeRuntime>(
    logits: &CubeTensor<R>,
    labels: &CubeTensor<R>,
    scores: &CubeTensor<R>,
    partial: &CubeTensor<R>,
) {
    crate::cube_util::assert_tight("launch_bce_onehot_forward", &[labels, scores, partial]);
    let [b, c, a] = check("launch_bce_onehot_forward", logits, labels, scores);
    let (rows, chunks) = forward_split(b, c, a);
    assert_eq!(partial.meta.shape().dims::<2>(), [rows, chunks], "launch_bce_onehot_forward: partial");
    assert_eq!(partial.dtype, DType::F32, "launch_bce_onehot_forward: partial dtype");
    if b * a == 0 {
        return;
    }
    // SAFETY: images are the grid's y extent `B`, anchors checked against `A`, classes `c < C` (labels
    // range-tested); logits are read through their own strides inside the shape; labels/scores at
    // `b·A + a < B·A`; partials at `b·chunks + x < B·chunks`.
    unsafe {
        bce_onehot_fwd_kernel::launch_unchecked::<R>(
            &logits.client,
            CubeCount::Static(chunks as u32, b as u32, 1),
            CubeDim::new_1d(UNITS as u32),
            logits.clone().into_tensor_arg(),
            labels.clone().into_tensor_arg(),
            scores.clone().into_tensor_arg(),
            partial.clone().into_tensor_arg(),
            c as u32,
            a as u32,
            UNITS,
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
    crate::cube_util::assert_tight("launch_bce_onehot_backward", &[labels, scores, d_total, d_logits]);
    let [b, c, a] = check("launch_bce_onehot_backward", logits, labels, scores);
    assert_eq!(d_logits.meta.shape().dims::<3>(), [b, c, a], "launch_bce_onehot_backward: d_logits");
    assert_eq!(d_total.meta.shape().num_elements(), 1, "launch_bce_onehot_backward: d_total");
    if b * c * a == 0 {
        return;
    }
    // SAFETY: images are the grid's y extent `B`, anchors checked against `A`, classes `c < C` (labels
    // range-tested); logits are read through their own strides inside the shape; `d_logits` written at
    // `(b·C + c)·A + a < B·C·A`; `d_total` has one element.
    unsafe {
        bce_onehot_bwd_kernel::launch_unchecked::<R>(
            &logits.client,
            CubeCount::Static(a.div_ceil(UNITS) as u32, b as u32, 1),
            CubeDim::new_1d(UNITS as u32),
            logits.clone().into_tensor_arg(),
            labels.clone().into_tensor_arg(),
            scores.clone().into_tensor_arg(),
            d_total.clone().into_tensor_arg(),
            d_logits.clone().into_tensor_arg(),
            c as u32,
            a as u32,
            [logits.dtype.into(), labels.dtype.into()],
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
            "bce_onehot_forward_f32",
            bce_onehot_fwd_kernel::BceOnehotFwdKernel<R>,
            units = UNITS,
            [T, T, T, T, S, S, UNITS, [F32, I32]]
        ),
        kernel_def!(
            "bce_onehot_backward_f32",
            bce_onehot_bwd_kernel::BceOnehotBwdKernel<R>,
            units = UNITS,
            [T, T, T, T, T, S, S, [F32, I32]]
        ),
    ]
}
