//! [`Conv2dBackend`] for `Flex` (CPU): the forward on NHWC data without layout changes, f32 (other dtypes: the
//! reference); the gradients are in `flex_grad.rs`.
//!
//! - `groups = 1`: tiles of `TILE` (up to 1024, [`forward_tile`]) output pixels, each an im2col block `[tile, KH·KW·Ci]` (skipped for 1×1 stride-1
//!   convs, whose NHWC input already is that matrix) times `wᵀ` (`w` is `[Co, KH·KW·Ci]` row-major; `wᵀ` is copied
//!   once per call to `[KH·KW·Ci, Co]` row-major, which `gemm` reads without re-packing it per tile) with the
//!   `gemm` crate, then bias and activation while the tile is in cache; tiles in parallel (rayon).
//! - depthwise: per output row, taps accumulated along the contiguous channels (weights copied tap-major, so both
//!   operands are contiguous; vectorised with AVX-512 / AVX2 where present).
//! - other groups: the reference.
use burn::backend::flex::FlexTensor;
use burn::backend::Flex;
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{DType, FloatDType, TensorData};
use gemm::{gemm, Parallelism};
use rayon::prelude::*;

use super::{reference_forward, Activation, Conv2dBackend, Conv2dGeometry, Conv2dSpec};
use crate::flex_buf::{dense, par_filled};

/// Output pixels per im2col tile.
pub(super) const TILE: usize = 128;

impl Conv2dBackend for Flex {
    const ROW_REDUCTIONS_ARE_FAST: bool = true;
    const HOST_POOL: bool = true;

    fn conv2d_nhwc(x: FlexTensor, w: FlexTensor, bias: Option<FlexTensor>, spec: Conv2dSpec) -> FlexTensor {
        if let Some(half) = half_dtype([Some(&x), Some(&w), bias.as_ref()]) {
            // f16/bf16 storage, f32 arithmetic (as the GPU kernels: f32 accumulation), rounded once at the end
            let y = Self::conv2d_nhwc(up(x), up(w), bias.map(up), spec);
            return down(y, half);
        }
        let geo = Conv2dGeometry::new(x.layout().shape(), w.layout().shape(), &spec).unwrap_or_else(|e| panic!("{e}"));
        let f32s = x.dtype() == DType::F32 && w.dtype() == DType::F32;
        let bias_ok = bias.as_ref().is_none_or(|b| b.dtype() == DType::F32);
        if !f32s || !bias_ok || (geo.groups != 1 && !geo.depthwise()) || geo.out_shape().contains(&0) {
            return reference_forward::<Self>(x, w, bias, spec);
        }
        forward(&geo, x, w, bias, spec.activation)
    }

    fn conv2d_nhwc_backward_data(x: FlexTensor, w: FlexTensor, dy: FlexTensor, spec: Conv2dSpec) -> FlexTensor {
        match half_dtype([Some(&x), Some(&w), Some(&dy)]) {
            Some(half) => down(super::flex_grad::backward_data(up(x), up(w), up(dy), spec), half),
            None => super::flex_grad::backward_data(x, w, dy, spec),
        }
    }

    fn conv2d_nhwc_backward_weight(x: FlexTensor, w: FlexTensor, dy: FlexTensor, spec: Conv2dSpec) -> FlexTensor {
        match half_dtype([Some(&x), Some(&w), Some(&dy)]) {
            Some(half) => down(super::flex_grad::backward_weight(up(x), up(w), up(dy), spec), half),
            None => super::flex_grad::backward_weight(x, w, dy, spec),
        }
    }
}

/// The half dtype (f16 or bf16) all of `ts` share, if they do: such a convolution is computed in f32 from the
/// upcast values and rounded once ([`up`], [`down`]), like the GPU kernels that accumulate in f32. (With Burn's
/// own f16 convolution, the reference, a mixed-precision step of the calibrated yolo26n on Flex had weight
/// gradients 35 % from the f32 step's, 11 % with this; its raw outputs 2.0 % and 0.6 %.)
fn half_dtype<const N: usize>(ts: [Option<&FlexTensor>; N]) -> Option<DType> {
    let first = ts[0]?.dtype();
    let half = matches!(first, DType::F16 | DType::BF16);
    (half && ts.iter().flatten().all(|t| t.dtype() == first)).then_some(first)
}

fn up(t: FlexTensor) -> FlexTensor {
    Flex::float_cast(t, FloatDType::F32)
}

fn down(t: FlexTensor, dtype: DType) -> FlexTensor {
    Flex::float_cast(t, dtype.into())
}

/// Output pixels per forward tile: [`TILE`], or more while the tile's im2col block stays within 256 KiB (`k` floats
/// per pixel; 0 for a pointwise conv, which has none) and the `m` pixels still make at least 8 tiles per thread.
/// Larger tiles repack the weight (inside `gemm`) fewer times.
fn forward_tile(m: usize, k: usize) -> usize {
    let by_cache = 65_536usize.checked_div(k).map_or(1024, |rows| rows.clamp(TILE, 1024));
    let by_threads = (m / (8 * rayon::current_num_threads().max(1))).max(TILE);
    by_cache.min(by_threads).next_multiple_of(16)
}

/// `act(conv(x, w) + bias)` in f32 (see the module docs).
fn forward(g: &Conv2dGeometry, x: FlexTensor, w: FlexTensor, bias: Option<FlexTensor>, act: Activation) -> FlexTensor {
    let (x, w) = (dense(x), dense(w));
    let xs: &[f32] = x.as_slice().expect("contiguous f32 input");
    let ws: &[f32] = w.as_slice().expect("contiguous f32 weight");
    let bias = bias.map(dense);
    let bs: Option<&[f32]> = bias.as_ref().map(|b| b.as_slice().expect("contiguous f32 bias"));
    let n: usize = g.out_shape().iter().product();
    let co = g.c_out;
    let out = if g.depthwise() {
        let wt = tap_major(ws, co, g.kh * g.kw);
        par_filled(
            n,
            g.ow * co,
            0.0,
            || (),
            |_, row, y| {
                depthwise_row(g, xs, &wt, row, y);
                epilogue(y, co, bs, act);
            },
        )
    } else {
        let k = g.kh * g.kw * g.c_in;
        let pointwise = g.kh == 1 && g.kw == 1 && g.stride == [1, 1] && g.padding == [0, 0];
        let tile = forward_tile(g.batch * g.oh * g.ow, if pointwise { 0 } else { k });
        // `wᵀ` = `[K, Co]` row-major: `gemm` computes the transposed product (output channels on its 64-row side)
        // and reads this as its left operand in place; from `[Co, K]` it re-packed the whole weight for every
        // tile (7 % of a CPU forward)
        let wt = tap_major(ws, co, k);
        par_filled(n, tile * co, 0.0, Vec::new, |col, t, y| {
            let m0 = t * tile;
            let rows = y.len() / co;
            let lhs = if pointwise {
                &xs[m0 * k..(m0 + rows) * k]
            } else {
                im2col(g, xs, m0, rows, col);
                &col[..rows * k]
            };
            // SAFETY: dst is `rows × co` row-major (`y`), lhs `rows × k` row-major, rhs = wᵀ `k × co` row-major;
            // every index is inside the slices' lengths.
            unsafe {
                gemm(
                    rows,
                    co,
                    k,
                    y.as_mut_ptr(),
                    1,
                    co as isize,
                    false,
                    lhs.as_ptr(),
                    1,
                    k as isize,
                    wt.as_ptr(),
                    1,
                    co as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    Parallelism::None,
                )
            }
            epilogue(y, co, bs, act); // while the tile is in cache
        })
    };
    FlexTensor::from_data(TensorData::new(out, g.out_shape()))
}

/// Rows `m0 .. m0 + rows` of the im2col matrix (`[pixel, (kh, kw, ci)]`, zeros outside the image) into `col`
/// (each value written once: copies for taps inside the image, zeros for the others).
pub(super) fn im2col(g: &Conv2dGeometry, xs: &[f32], m0: usize, rows: usize, col: &mut Vec<f32>) {
    let ci = g.c_in;
    let k = g.kh * g.kw * ci;
    if col.len() < rows * k {
        col.resize(rows * k, 0.0);
    }
    for r in 0..rows {
        let m = m0 + r;
        let (b, oh, ow) = (m / (g.oh * g.ow), (m / g.ow) % g.oh, m % g.ow);
        let dst = &mut col[r * k..(r + 1) * k];
        // the row's taps inside the image along w, when they are adjacent pixels (dilation 1): one copy per kh
        let iw0 = (ow * g.stride[1]).checked_sub(g.padding[1]);
        let run = iw0.filter(|&i| g.dilation[1] == 1 && i + g.kw <= g.w);
        for kh in 0..g.kh {
            let ih = (oh * g.stride[0] + kh * g.dilation[0]).checked_sub(g.padding[0]).filter(|&i| i < g.h);
            if let (Some(ih), Some(iw0)) = (ih, run) {
                let row = &mut dst[kh * g.kw * ci..(kh + 1) * g.kw * ci];
                row.copy_from_slice(&xs[((b * g.h + ih) * g.w + iw0) * ci..][..g.kw * ci]);
                continue;
            }
            for kw in 0..g.kw {
                let tap = &mut dst[(kh * g.kw + kw) * ci..][..ci];
                let iw = (ow * g.stride[1] + kw * g.dilation[1]).checked_sub(g.padding[1]).filter(|&i| i < g.w);
                match (ih, iw) {
                    (Some(ih), Some(iw)) => tap.copy_from_slice(&xs[((b * g.h + ih) * g.w + iw) * ci..][..ci]),
                    _ => tap.fill(0.0),
                }
            }
        }
    }
}

/// `f(tap, ih, iw)` for every tap of output pixel `(oh, ow)` that lies inside the input (`tap = kh·KW + kw`).
#[inline(always)]
pub(super) fn for_taps(g: &Conv2dGeometry, oh: usize, ow: usize, mut f: impl FnMut(usize, usize, usize)) {
    for kh in 0..g.kh {
        let ih = (oh * g.stride[0] + kh * g.dilation[0]) as isize - g.padding[0] as isize;
        if ih < 0 || ih as usize >= g.h {
            continue;
        }
        for kw in 0..g.kw {
            let iw = (ow * g.stride[1] + kw * g.dilation[1]) as isize - g.padding[1] as isize;
            if iw >= 0 && (iw as usize) < g.w {
                f(kh * g.kw + kw, ih as usize, iw as usize);
            }
        }
    }
}

/// `[R, T]` row-major → `[T, R]` row-major (a weight `[Co, K]` as `wᵀ`, or a depthwise weight `[C, taps]` as rows
/// of channels per tap).
fn tap_major(w: &[f32], rows: usize, taps: usize) -> Vec<f32> {
    // blocks of 16 taps: 16 output rows written in step (sequential streams) from 64-byte runs of each input row;
    // blocks in parallel (a weight is up to 2.4 M values; serial and element by element this copy took 6 % of a
    // CPU forward)
    const B: usize = 16;
    if w.is_empty() {
        return Vec::new();
    }
    let mut t = vec![0.0; w.len()];
    let block = |(i, dst): (usize, &mut [f32])| {
        let t0 = i * B;
        for (r, row) in w.chunks_exact(taps).enumerate() {
            for (j, v) in row[t0..t0 + dst.len() / rows].iter().enumerate() {
                dst[j * rows + r] = *v;
            }
        }
    };
    if w.len() >= 1 << 16 {
        t.par_chunks_mut(B * rows).enumerate().for_each(block);
    } else {
        t.chunks_mut(B * rows).enumerate().for_each(block);
    }
    t
}

/// One output row (`row` = `b·OH + oh`, `y = [OW, C]`) of a depthwise convolution; `wt` = `[taps, C]` (channels
/// contiguous per tap, so the channel loop is lane-wise on both operands). An AVX-512 or AVX2 copy where the CPU has
/// it (the CPU checked once per row; separate multiply and add, no fused multiply-add, so every copy gives the same
/// bits).
fn depthwise_row(g: &Conv2dGeometry, xs: &[f32], wt: &[f32], row: usize, y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            unsafe { depthwise_row_avx512(g, xs, wt, row, y) };
            return;
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { depthwise_row_avx2(g, xs, wt, row, y) };
            return;
        }
    }
    depthwise_row_generic(g, xs, wt, row, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn depthwise_row_avx512(g: &Conv2dGeometry, xs: &[f32], wt: &[f32], row: usize, y: &mut [f32]) {
    depthwise_row_generic(g, xs, wt, row, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn depthwise_row_avx2(g: &Conv2dGeometry, xs: &[f32], wt: &[f32], row: usize, y: &mut [f32]) {
    depthwise_row_generic(g, xs, wt, row, y)
}

#[inline(always)]
fn depthwise_row_generic(g: &Conv2dGeometry, xs: &[f32], wt: &[f32], row: usize, y: &mut [f32]) {
    let c = g.c_out;
    let (b, oh) = (row / g.oh, row % g.oh);
    for kh in 0..g.kh {
        let ih = (oh * g.stride[0] + kh * g.dilation[0]) as isize - g.padding[0] as isize;
        if ih < 0 || ih as usize >= g.h {
            continue;
        }
        for kw in 0..g.kw {
            let w = &wt[(kh * g.kw + kw) * c..][..c];
            for ow in 0..g.ow {
                let iw = (ow * g.stride[1] + kw * g.dilation[1]) as isize - g.padding[1] as isize;
                if iw < 0 || iw as usize >= g.w {
                    continue;
                }
                let src = &xs[((b * g.h + ih as usize) * g.w + iw as usize) * c..][..c];
                let dst = &mut y[ow * c..(ow + 1) * c];
                dst.iter_mut().zip(src).zip(w).for_each(|((y, x), w)| *y += x * w);
            }
        }
    }
}

/// Bias and activation on `[rows, co]` output rows (an AVX-512 or AVX2 copy of the same arithmetic where the CPU has
/// it: the loops are plain lane-wise `f32` operations without fused multiply-adds, so every copy gives the same bits).
fn epilogue(y: &mut [f32], co: usize, bias: Option<&[f32]>, act: Activation) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            unsafe { epilogue_avx512(y, co, bias, act) };
            return;
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { epilogue_avx2(y, co, bias, act) };
            return;
        }
    }
    epilogue_generic(y, co, bias, act)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn epilogue_avx512(y: &mut [f32], co: usize, bias: Option<&[f32]>, act: Activation) {
    epilogue_generic(y, co, bias, act)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn epilogue_avx2(y: &mut [f32], co: usize, bias: Option<&[f32]>, act: Activation) {
    epilogue_generic(y, co, bias, act)
}

/// The epilogue's arithmetic: the bias row added to every row, then SiLU over the whole buffer in blocks of 16
/// (fixed-size arrays, so the loop body vectorises whatever the row length).
#[inline(always)]
fn epilogue_generic(y: &mut [f32], co: usize, bias: Option<&[f32]>, act: Activation) {
    if let Some(b) = bias {
        for row in y.chunks_exact_mut(co) {
            row.iter_mut().zip(b).for_each(|(v, b)| *v += b);
        }
    }
    if act == Activation::Silu {
        let mut blocks = y.chunks_exact_mut(16);
        for block in &mut blocks {
            let block: &mut [f32; 16] = block.try_into().expect("blocks of 16");
            block.iter_mut().for_each(|v| *v = silu(*v));
        }
        blocks.into_remainder().iter_mut().for_each(|v| *v = silu(*v));
    }
}

/// `v / (1 + e⁻ᵛ)` (NaN stays NaN).
#[inline(always)]
fn silu(v: f32) -> f32 {
    v / (1.0 + exp(-v))
}

/// `eˣ` in `f32` without branches or calls, so loops over it vectorise: `x = n·ln 2 + r` (Cody–Waite, two constants),
/// Cephes' `expf` polynomial for `eʳ` (`|r| ≤ ln 2 / 2`, relative error ≈ 1 ulp, as libm's), times `2ⁿ` put into
/// the exponent bits. `x` is clamped to `[-87.3, 88]` (`2ⁿ` stays a normal number; SiLU of `v < −88` is then
/// `v / (1 + e⁸⁸) ≈ −5·10⁻³⁷` instead of `−0`).
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5·2²³: adding and subtracting it rounds to an integer (ties to even)
    let x = x.clamp(-87.336_54, 88.0);
    let t = x * std::f32::consts::LOG2_E + MAGIC;
    let n = t - MAGIC;
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5; // Cephes: 5.0000001201e-1, which rounds to 0.5 in f32
    let e = p * r * r + r + 1.0;
    // t's low mantissa bits hold n (`t.to_bits() = 0x4B40_0000 + n`), so 2ⁿ's exponent is integer arithmetic
    // (no saturating float → int conversion, which would not vectorise)
    e * f32::from_bits(t.to_bits().wrapping_sub(0x4B40_0000 - 127) << 23)
}

#[cfg(test)]
mod tests {
    /// The vectorisable `exp` against libm's `expf` (as f64 reference) over the SiLU range: within 2 ulp.
    #[test]
    fn conv_flex_exp_within_two_ulp() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let got = super::exp(x) as f64;
            let want = (x as f64).exp();
            let ulp = (want as f32).abs() * f32::EPSILON;
            worst = worst.max((got - want).abs() / ulp as f64);
            x += 0.000_731;
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
    }
}
