//! The gradients of [`Conv2dBackend`] for `Flex` (CPU), f32 on NHWC data (other dtypes and grouped non-depthwise
//! convolutions: the reference). Layouts: `x, dx [B, H, W, Ci]`, `dy [B, OH, OW, Co]` (the gradient before the
//! activation), `w, dw [Co, KH, KW, Ci]` (OHWI, so `w` is the `[Co, K]` matrix with `K = KH·KW·Ci`).
//!
//! - input gradient, `groups = 1`: per tile of `TILE` output pixels `dcol = dy_tile · w` (`[TILE, K]`, the `gemm`
//!   crate), then col2im adds `dcol` into `dx` (the transpose of the forward's im2col). Receptive fields of different
//!   tiles overlap, so the images run in parallel and the tiles of one image in order; a 1×1 stride-1 convolution
//!   writes `dy · w` straight into `dx` (tiles in parallel).
//! - weight gradient, `groups = 1`: `dw = Σ_tiles dy_tileᵀ · col_tile`; the tiles are cut into one contiguous run
//!   per thread, each run accumulates its own `[Co, K]` partial, and the partials are summed in run order (the result
//!   depends on the thread count only through that summation order).
//! - depthwise: both gradients per image, the taps accumulated along the contiguous channels.
use burn::backend::flex::FlexTensor;
use burn::backend::Flex;
use burn::tensor::{DType, TensorData};
use gemm::{gemm, Parallelism};
use rayon::prelude::*;

use super::flex::{for_taps, im2col, TILE};
use super::{reference_backward_data, reference_backward_weight, Conv2dGeometry, Conv2dSpec};
use crate::flex_buf::dense;

/// Whether the f32 CPU gradients handle this convolution (otherwise: the reference).
fn supported(g: &Conv2dGeometry, ts: [&FlexTensor; 3]) -> bool {
    ts.iter().all(|t| t.dtype() == DType::F32) && (g.groups == 1 || g.depthwise()) && !g.out_shape().contains(&0)
}

/// `(x, w, dy)` as contiguous tensors (read through [`slice`]).
fn contiguous(x: FlexTensor, w: FlexTensor, dy: FlexTensor) -> [FlexTensor; 3] {
    [dense(x), dense(w), dense(dy)]
}

fn slice(t: &FlexTensor) -> &[f32] {
    t.as_slice().expect("contiguous f32 tensor")
}

pub(super) fn backward_data(x: FlexTensor, w: FlexTensor, dy: FlexTensor, spec: Conv2dSpec) -> FlexTensor {
    let g = Conv2dGeometry::new(x.layout().shape(), w.layout().shape(), &spec).unwrap_or_else(|e| panic!("{e}"));
    if !supported(&g, [&x, &w, &dy]) {
        return reference_backward_data::<Flex>(x, w, dy, spec);
    }
    let shape = [g.batch, g.h, g.w, g.c_in];
    let [_, w, dy] = contiguous(x, w, dy);
    let (ws, dys) = (slice(&w), slice(&dy));
    let mut dx = vec![0.0f32; shape.iter().product()];
    let image = g.h * g.w * g.c_in;
    if g.depthwise() {
        dx.par_chunks_mut(image).enumerate().for_each(|(b, dxb)| depthwise_data(&g, ws, dys, b, dxb));
    } else if pointwise(&g) {
        // dx = dy · w: `[M, Co] × [Co, Ci]`, tiles of pixels in parallel
        let (co, ci) = (g.c_out, g.c_in);
        dx.par_chunks_mut(TILE * ci).zip(dys.par_chunks(TILE * co)).for_each(|(dxt, dyt)| {
            let rows = dyt.len() / co;
            // SAFETY: dst `rows × ci`, lhs `rows × co`, rhs `co × ci`, all row-major and inside their slices.
            unsafe { gemm_rm(rows, ci, co, dxt.as_mut_ptr(), false, dyt.as_ptr(), co, 1, ws.as_ptr(), ci, 1) }
        });
    } else {
        dx.par_chunks_mut(image).enumerate().for_each_init(Vec::new, |dcol, (b, dxb)| {
            let (k, co) = (g.kh * g.kw * g.c_in, g.c_out);
            let per_image = g.oh * g.ow;
            for m0 in (0..per_image).step_by(TILE) {
                let rows = TILE.min(per_image - m0);
                dcol.clear();
                dcol.resize(rows * k, 0.0);
                let dyt = &dys[(b * per_image + m0) * co..][..rows * co];
                // SAFETY: dst `rows × k`, lhs `rows × co`, rhs = w `co × k`, row-major, inside their slices.
                unsafe { gemm_rm(rows, k, co, dcol.as_mut_ptr(), false, dyt.as_ptr(), co, 1, ws.as_ptr(), k, 1) }
                col2im(&g, dcol, m0, rows, dxb);
            }
        });
    }
    FlexTensor::from_data(TensorData::new(dx, shape))
}

pub(super) fn backward_weight(x: FlexTensor, w: FlexTensor, dy: FlexTensor, spec: Conv2dSpec) -> FlexTensor {
    let g = Conv2dGeometry::new(x.layout().shape(), w.layout().shape(), &spec).unwrap_or_else(|e| panic!("{e}"));
    if !supported(&g, [&x, &w, &dy]) {
        return reference_backward_weight::<Flex>(x, w, dy, spec);
    }
    let [x, _, dy] = contiguous(x, w, dy);
    let (xs, dys) = (slice(&x), slice(&dy));
    let k = g.kh * g.kw * g.c_in / g.groups;
    let len = g.c_out * k;
    let runs = rayon::current_num_threads().max(1);
    let partials: Vec<Vec<f32>> = if g.depthwise() {
        // one partial per run of images, `[KH·KW, C]` (channels contiguous), transposed below
        let per = g.batch.div_ceil(runs);
        (0..g.batch.div_ceil(per))
            .into_par_iter()
            .map(|r| {
                let mut acc = vec![0.0f32; len];
                for b in r * per..((r + 1) * per).min(g.batch) {
                    depthwise_weight(&g, xs, dys, b, &mut acc);
                }
                acc
            })
            .collect()
    } else {
        let m = g.batch * g.oh * g.ow;
        let tiles = m.div_ceil(TILE);
        let per = tiles.div_ceil(runs);
        let pointwise = pointwise(&g);
        (0..tiles.div_ceil(per))
            .into_par_iter()
            .map(|r| {
                let (mut acc, mut col) = (vec![0.0f32; len], Vec::new());
                for t in r * per..((r + 1) * per).min(tiles) {
                    let (m0, co) = (t * TILE, g.c_out);
                    let rows = TILE.min(m - m0);
                    let rhs = if pointwise {
                        &xs[m0 * k..(m0 + rows) * k]
                    } else {
                        im2col(&g, xs, m0, rows, &mut col);
                        &col[..rows * k]
                    };
                    let dyt = &dys[m0 * co..(m0 + rows) * co];
                    // SAFETY: dst = acc `co × k`; lhs = dy_tileᵀ `co × rows` (element (n, r) at dyt[r·co + n]);
                    // rhs `rows × k` row-major; inside their slices.
                    unsafe { gemm_rm(co, k, rows, acc.as_mut_ptr(), true, dyt.as_ptr(), 1, co, rhs.as_ptr(), k, 1) }
                }
                acc
            })
            .collect()
    };
    let mut dw = vec![0.0f32; len];
    for p in &partials {
        dw.iter_mut().zip(p).for_each(|(d, v)| *d += v);
    }
    if g.depthwise() {
        // [KH·KW, C] → [C, KH·KW] (= OHWI with Ci/g = 1)
        let taps = g.kh * g.kw;
        dw = (0..len).map(|i| dw[(i % taps) * g.c_out + i / taps]).collect();
    }
    FlexTensor::from_data(TensorData::new(dw, g.weight_shape()))
}

fn pointwise(g: &Conv2dGeometry) -> bool {
    g.kh == 1 && g.kw == 1 && g.stride == [1, 1] && g.padding == [0, 0]
}

/// `dst (m × n, row-major) (+)= lhs · rhs` with `lhs` element (i, kk) at `lhs[i·lhs_rs + kk·lhs_cs]` and `rhs`
/// element (kk, j) at `rhs[kk·rhs_rs + j·rhs_cs]`; accumulates into `dst` when `accumulate`.
///
/// # Safety
/// Every element addressed this way must be inside the allocations behind the pointers.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_rm(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut f32,
    accumulate: bool,
    lhs: *const f32,
    lhs_rs: usize,
    lhs_cs: usize,
    rhs: *const f32,
    rhs_rs: usize,
    rhs_cs: usize,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        gemm(
            m,
            n,
            k,
            dst,
            1,
            n as isize,
            accumulate,
            lhs,
            lhs_cs as isize,
            lhs_rs as isize,
            rhs,
            rhs_cs as isize,
            rhs_rs as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        )
    }
}

/// The transpose of [`im2col`]: rows `m0 .. m0 + rows` of `dcol` (`[pixel, (kh, kw, ci)]`, pixels of one image)
/// added into that image's `dx [H, W, Ci]`.
fn col2im(g: &Conv2dGeometry, dcol: &[f32], m0: usize, rows: usize, dx: &mut [f32]) {
    let ci = g.c_in;
    let k = g.kh * g.kw * ci;
    for r in 0..rows {
        let m = m0 + r;
        let (oh, ow) = (m / g.ow, m % g.ow);
        let src = &dcol[r * k..(r + 1) * k];
        for_taps(g, oh, ow, |tap, ih, iw| {
            let dst = &mut dx[(ih * g.w + iw) * ci..][..ci];
            dst.iter_mut().zip(&src[tap * ci..(tap + 1) * ci]).for_each(|(d, s)| *d += s);
        });
    }
}

/// Depthwise input gradient of image `b`: `dx[ih, iw, c] += dy[oh, ow, c] · w[c, tap]`.
fn depthwise_data(g: &Conv2dGeometry, ws: &[f32], dys: &[f32], b: usize, dx: &mut [f32]) {
    let (c, taps) = (g.c_out, g.kh * g.kw);
    // the weights as [tap, C] so the channel loop is contiguous
    let wt: Vec<f32> = (0..taps * c).map(|i| ws[(i % c) * taps + i / c]).collect();
    for oh in 0..g.oh {
        for ow in 0..g.ow {
            let d = &dys[((b * g.oh + oh) * g.ow + ow) * c..][..c];
            for_taps(g, oh, ow, |tap, ih, iw| {
                let dst = &mut dx[(ih * g.w + iw) * c..][..c];
                let wr = &wt[tap * c..(tap + 1) * c];
                for ch in 0..c {
                    dst[ch] += d[ch] * wr[ch];
                }
            });
        }
    }
}

/// Depthwise weight gradient of image `b` added into `acc [KH·KW, C]`: `Σ dy[oh, ow, c] · x[ih, iw, c]`.
fn depthwise_weight(g: &Conv2dGeometry, xs: &[f32], dys: &[f32], b: usize, acc: &mut [f32]) {
    let c = g.c_out;
    for oh in 0..g.oh {
        for ow in 0..g.ow {
            let d = &dys[((b * g.oh + oh) * g.ow + ow) * c..][..c];
            for_taps(g, oh, ow, |tap, ih, iw| {
                let xr = &xs[((b * g.h + ih) * g.w + iw) * c..][..c];
                let a = &mut acc[tap * c..(tap + 1) * c];
                for ch in 0..c {
                    a[ch] += d[ch] * xr[ch];
                }
            });
        }
    }
}
