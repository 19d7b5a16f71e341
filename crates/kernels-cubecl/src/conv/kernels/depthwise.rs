//! Depthwise convolution (`groups = Ci = Co`, one filter per channel), NHWC: the GEMM of [`super::gemm`] would
//! have `N = 1` and `K = KH·KW` per group, so these kernels work per element instead, channels across
//! neighbouring units (coalesced). f32 arithmetic whatever the storage dtype.
//!
//! `x: [B, H, W, C]`, `w: [C, KH, KW, 1]`, `y`/`dy: [B, OH, OW, C]`.
//! - [`dw_forward_kernel`]: one unit per output element, `y = act(Σ_taps x·w + bias)`.
//! - [`dw_dgrad_kernel`]: one unit per input element, `dx[b,ih,iw,c] = Σ_taps dy[b, (ih+p−kh·d)/s, …, c] · w[c,kh,kw]`
//!   (exact divisions only).
//! - [`dw_wgrad_kernel`]: unit `(c, chunk)` sums `dy · x` over its chunk of output pixels for all `KH·KW` taps
//!   (registers), writing f32 partials `[chunks, C, KH·KW]` that the caller sums.
use cubecl::prelude::*;

use super::gemm::{Geo, ACT_SILU};

/// Depthwise forward: `out [B, OH, OW, C]`. Grid: `(CUBE_COUNT_X·CUBE_COUNT_Y)` cubes of `units` over the
/// elements (a surplus unit returns).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn dw_forward_kernel<F: Float>(
    x: &Tensor<F>,
    w: &Tensor<F>,
    bias: &Tensor<F>,
    out: &mut Tensor<F>,
    geo: Geo,
    #[comptime] taps: u32,
    #[comptime] has_bias: bool,
    #[comptime] act: u32,
    #[define(F)] _dtype: StorageType,
) {
    let idx = (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) * CUBE_DIM_X + UNIT_POS_X;
    let total = geo.b * geo.oh * geo.ow * geo.co;
    if idx >= total {
        terminate!();
    }
    let c = idx % geo.co;
    let p = idx / geo.co;
    let ow = p % geo.ow;
    let t = p / geo.ow;
    let oh = t % geo.oh;
    let b = t / geo.oh;
    let mut v = f32::new(0.0);
    #[unroll]
    for tap in 0..taps {
        let kh = tap / geo.kw;
        let kw = tap % geo.kw;
        let ih = (oh * geo.sh + kh * geo.dh) as i32 - geo.ph as i32;
        let iw = (ow * geo.sw + kw * geo.dw) as i32 - geo.pw as i32;
        if ih >= 0 && iw >= 0 && ih < geo.h as i32 && iw < geo.w as i32 {
            let xi = ((b * geo.h + ih as u32) * geo.w + iw as u32) * geo.ci + c;
            v += f32::cast_from(x[xi as usize]) * f32::cast_from(w[(c * taps + tap) as usize]);
        }
    }
    if has_bias {
        v += f32::cast_from(bias[c as usize]);
    }
    if act == ACT_SILU {
        v = v / (f32::new(1.0) + (-v).exp());
    }
    out[idx as usize] = F::cast_from(v);
}

/// Depthwise input gradient: `dx [B, H, W, C]` from `dy [B, OH, OW, C]`.
#[cube(launch_unchecked)]
pub fn dw_dgrad_kernel<F: Float>(
    dy: &Tensor<F>,
    w: &Tensor<F>,
    dx: &mut Tensor<F>,
    geo: Geo,
    #[comptime] taps: u32,
    #[define(F)] _dtype: StorageType,
) {
    let idx = (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) * CUBE_DIM_X + UNIT_POS_X;
    let total = geo.b * geo.h * geo.w * geo.ci;
    if idx >= total {
        terminate!();
    }
    let c = idx % geo.ci;
    let p = idx / geo.ci;
    let iw = p % geo.w;
    let t = p / geo.w;
    let ih = t % geo.h;
    let b = t / geo.h;
    let mut v = f32::new(0.0);
    #[unroll]
    for tap in 0..taps {
        let kh = tap / geo.kw;
        let kw = tap % geo.kw;
        let th = (ih + geo.ph) as i32 - (kh * geo.dh) as i32;
        let tw = (iw + geo.pw) as i32 - (kw * geo.dw) as i32;
        if th >= 0 && tw >= 0 {
            let oh = th as u32 / geo.sh;
            let ow = tw as u32 / geo.sw;
            if oh * geo.sh == th as u32 && ow * geo.sw == tw as u32 && oh < geo.oh && ow < geo.ow {
                let di = ((b * geo.oh + oh) * geo.ow + ow) * geo.co + c;
                v += f32::cast_from(dy[di as usize]) * f32::cast_from(w[(c * taps + tap) as usize]);
            }
        }
    }
    dx[idx as usize] = F::cast_from(v);
}

/// Depthwise weight gradient, partial sums: unit `c` of cube `(CUBE_POS_X = channel block, CUBE_POS_Y = chunk)`
/// sums over output pixels `[chunk·pix_chunk, (chunk+1)·pix_chunk)` → `part [chunks, C, taps]` (f32).
#[cube(launch_unchecked)]
pub fn dw_wgrad_kernel<F: Float>(
    x: &Tensor<F>,
    dy: &Tensor<F>,
    part: &mut Tensor<f32>,
    geo: Geo,
    pix_chunk: u32,
    #[comptime] taps: u32,
    #[define(F)] _dtype: StorageType,
) {
    let c = CUBE_POS_X * CUBE_DIM_X + UNIT_POS_X;
    if c >= geo.co {
        terminate!();
    }
    let chunk = CUBE_POS_Y;
    let pixels = geo.b * geo.oh * geo.ow;
    let begin = chunk * pix_chunk;
    let end = min(pixels, begin + pix_chunk);
    let mut acc = Array::<f32>::new(comptime!(taps as usize));
    #[unroll]
    for tap in 0..taps {
        acc[tap as usize] = f32::new(0.0);
    }
    let mut p = begin;
    while p < end {
        let ow = p % geo.ow;
        let t = p / geo.ow;
        let oh = t % geo.oh;
        let b = t / geo.oh;
        let g = f32::cast_from(dy[(p * geo.co + c) as usize]);
        #[unroll]
        for tap in 0..taps {
            let kh = tap / geo.kw;
            let kw = tap % geo.kw;
            let ih = (oh * geo.sh + kh * geo.dh) as i32 - geo.ph as i32;
            let iw = (ow * geo.sw + kw * geo.dw) as i32 - geo.pw as i32;
            if ih >= 0 && iw >= 0 && ih < geo.h as i32 && iw < geo.w as i32 {
                let xi = ((b * geo.h + ih as u32) * geo.w + iw as u32) * geo.ci + c;
                acc[tap as usize] += g * f32::cast_from(x[xi as usize]);
            }
        }
        p += 1;
    }
    #[unroll]
    for tap in 0..taps {
        part[((chunk * geo.co + c) * taps + tap) as usize] = acc[tap as usize];
    }
}
