//! [`Conv2dBackend`] for `Flex` (CPU): the forward on NHWC data without layout changes, f32 (other dtypes: the
//! reference); the gradients are in `flex_grad.rs`.
//!
//! - `groups = 1`: tiles of `TILE` output pixels, each an im2col block `[TILE, KH·KW·Ci]` (skipped for 1×1 stride-1
//!   convs, whose NHWC input already is that matrix) times `wᵀ` (`w` is `[Co, KH·KW·Ci]` row-major, so `wᵀ` is a
//!   strided view) with the `gemm` crate, then bias and activation while the tile is in cache; tiles in parallel
//!   (rayon).
//! - depthwise: per output row, taps accumulated along the contiguous channels (vectorisable).
//! - other groups: the reference.
use burn::backend::flex::FlexTensor;
use burn::backend::Flex;
use burn::tensor::{DType, TensorData};
use gemm::{gemm, Parallelism};
use rayon::prelude::*;

use super::{reference_forward, Activation, Conv2dBackend, Conv2dGeometry, Conv2dSpec};

/// Output pixels per im2col tile.
pub(super) const TILE: usize = 128;

impl Conv2dBackend for Flex {
    fn conv2d_nhwc(x: FlexTensor, w: FlexTensor, bias: Option<FlexTensor>, spec: Conv2dSpec) -> FlexTensor {
        let geo = Conv2dGeometry::new(x.layout().shape(), w.layout().shape(), &spec).unwrap_or_else(|e| panic!("{e}"));
        let f32s = x.dtype() == DType::F32 && w.dtype() == DType::F32;
        let bias_ok = bias.as_ref().is_none_or(|b| b.dtype() == DType::F32);
        if !f32s || !bias_ok || (geo.groups != 1 && !geo.depthwise()) || geo.out_shape().contains(&0) {
            return reference_forward::<Self>(x, w, bias, spec);
        }
        forward(&geo, x, w, bias, spec.activation)
    }

    fn conv2d_nhwc_backward_data(x: FlexTensor, w: FlexTensor, dy: FlexTensor, spec: Conv2dSpec) -> FlexTensor {
        super::flex_grad::backward_data(x, w, dy, spec)
    }

    fn conv2d_nhwc_backward_weight(x: FlexTensor, w: FlexTensor, dy: FlexTensor, spec: Conv2dSpec) -> FlexTensor {
        super::flex_grad::backward_weight(x, w, dy, spec)
    }
}

/// `act(conv(x, w) + bias)` in f32 (see the module docs).
fn forward(g: &Conv2dGeometry, x: FlexTensor, w: FlexTensor, bias: Option<FlexTensor>, act: Activation) -> FlexTensor {
    let (x, w) = (x.to_contiguous(), w.to_contiguous());
    let xs: &[f32] = x.as_slice().expect("contiguous f32 input");
    let ws: &[f32] = w.as_slice().expect("contiguous f32 weight");
    let bias = bias.map(|b| b.to_contiguous());
    let bs: Option<&[f32]> = bias.as_ref().map(|b| b.as_slice().expect("contiguous f32 bias"));
    let mut out = vec![0.0f32; g.out_shape().iter().product()];
    let co = g.c_out;
    if g.depthwise() {
        out.par_chunks_mut(g.ow * co).enumerate().for_each(|(row, y)| depthwise_row(g, xs, ws, row, y));
    } else {
        let k = g.kh * g.kw * g.c_in;
        let pointwise = g.kh == 1 && g.kw == 1 && g.stride == [1, 1] && g.padding == [0, 0];
        out.par_chunks_mut(TILE * co).enumerate().for_each_init(Vec::new, |col, (t, y)| {
            let m0 = t * TILE;
            let rows = y.len() / co;
            let lhs = if pointwise {
                &xs[m0 * k..(m0 + rows) * k]
            } else {
                im2col(g, xs, m0, rows, col);
                &col[..rows * k]
            };
            // SAFETY: dst is `rows × co` row-major (`y`), lhs `rows × k` row-major, rhs = wᵀ: element (kk, n) at
            // `w[n·k + kk]`; every index is inside the slices' lengths.
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
                    ws.as_ptr(),
                    k as isize,
                    1,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    Parallelism::None,
                )
            }
        });
    }
    out.par_chunks_mut(TILE * co).for_each(|y| epilogue(y, co, bs, act));
    FlexTensor::from_data(TensorData::new(out, g.out_shape()))
}

/// Rows `m0 .. m0 + rows` of the im2col matrix (`[pixel, (kh, kw, ci)]`, zeros outside the image) into `col`.
pub(super) fn im2col(g: &Conv2dGeometry, xs: &[f32], m0: usize, rows: usize, col: &mut Vec<f32>) {
    let ci = g.c_in;
    let k = g.kh * g.kw * ci;
    col.clear();
    col.resize(rows * k, 0.0);
    for r in 0..rows {
        let m = m0 + r;
        let (b, oh, ow) = (m / (g.oh * g.ow), (m / g.ow) % g.oh, m % g.ow);
        let dst = &mut col[r * k..(r + 1) * k];
        for kh in 0..g.kh {
            let ih = (oh * g.stride[0] + kh * g.dilation[0]) as isize - g.padding[0] as isize;
            if ih < 0 || ih as usize >= g.h {
                continue;
            }
            for kw in 0..g.kw {
                let iw = (ow * g.stride[1] + kw * g.dilation[1]) as isize - g.padding[1] as isize;
                if iw < 0 || iw as usize >= g.w {
                    continue;
                }
                let src = ((b * g.h + ih as usize) * g.w + iw as usize) * ci;
                let at = (kh * g.kw + kw) * ci;
                dst[at..at + ci].copy_from_slice(&xs[src..src + ci]);
            }
        }
    }
}

/// One output row (`row` = `b·OH + oh`, `y = [OW, C]`) of a depthwise convolution.
fn depthwise_row(g: &Conv2dGeometry, xs: &[f32], ws: &[f32], row: usize, y: &mut [f32]) {
    let (c, taps) = (g.c_out, g.kh * g.kw);
    let (b, oh) = (row / g.oh, row % g.oh);
    for kh in 0..g.kh {
        let ih = (oh * g.stride[0] + kh * g.dilation[0]) as isize - g.padding[0] as isize;
        if ih < 0 || ih as usize >= g.h {
            continue;
        }
        for kw in 0..g.kw {
            let tap = kh * g.kw + kw;
            for ow in 0..g.ow {
                let iw = (ow * g.stride[1] + kw * g.dilation[1]) as isize - g.padding[1] as isize;
                if iw < 0 || iw as usize >= g.w {
                    continue;
                }
                let src = &xs[((b * g.h + ih as usize) * g.w + iw as usize) * c..][..c];
                let dst = &mut y[ow * c..(ow + 1) * c];
                for ch in 0..c {
                    dst[ch] += src[ch] * ws[ch * taps + tap];
                }
            }
        }
    }
}

/// Bias and activation on `[rows, co]` output rows.
fn epilogue(y: &mut [f32], co: usize, bias: Option<&[f32]>, act: Activation) {
    for row in y.chunks_mut(co) {
        if let Some(b) = bias {
            row.iter_mut().zip(b).for_each(|(v, b)| *v += b);
        }
        if act == Activation::Silu {
            row.iter_mut().for_each(|v| *v /= 1.0 + (-*v).exp());
        }
    }
}
