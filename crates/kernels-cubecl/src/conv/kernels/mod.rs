//! CubeCL kernels of the NHWC convolution and their launchers (outputs given by the caller, tight, every element
//! written: the tests poison them first).
//!
//! - [`gemm`]: implicit GEMM on plain units, forward (+ bias + activation), input gradient, weight-gradient
//!   partials (split-K).
//! - [`depthwise`]: `groups = Ci = Co` forward, input gradient, weight-gradient partials.
//! - [`act`]: SiLU in place (after cubek's tensor-core GEMM, which adds the bias but has no activation).
//! - [`wgrad_cmma`]: the weight-gradient partials on tensor cores (CubeCL `cmma`, f16/bf16; CUDA).
//! - [`spread`]: a strided conv's output gradient spread onto the stride-1 grid (zeros between), for cubek's
//!   stride-1 backward-data GEMM.
pub mod act;
pub mod depthwise;
pub mod gemm;
pub mod spread;
pub mod wgrad_cmma;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};
use cubecl::prelude::*;

use self::gemm::{GeoLaunch, DGRAD, FWD, WGRAD};
use super::Conv2dGeometry;
use crate::cube_util::assert_tight;

/// Cubes per grid row: CUDA and Vulkan allow 65535 per dimension.
const MAX_GRID: usize = 65535;

/// `(x, y)` cubes covering `n` cubes with the fewest surplus (`x ≤ 65535`).
pub(crate) fn grid_2d(n: usize) -> (u32, u32) {
    let y = n.div_ceil(MAX_GRID).max(1);
    (n.div_ceil(y).max(1) as u32, y as u32)
}

/// A GEMM tile: `UM × UN` units, each `TM × TN` outputs, `BK` reduction steps per shared-memory stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Units along `m`.
    pub um: u32,
    /// Units along `n`.
    pub un: u32,
    /// Outputs per unit along `m`.
    pub tm: u32,
    /// Outputs per unit along `n`.
    pub tn: u32,
    /// Reduction depth of one shared-memory stage.
    pub bk: u32,
}

impl Tile {
    /// Rows of `C` per cube.
    pub fn bm(&self) -> usize {
        (self.um * self.tm) as usize
    }
    /// Columns of `C` per cube.
    pub fn bn(&self) -> usize {
        (self.un * self.tn) as usize
    }
}

/// `(units, outputs per unit)` along a side of `len` outputs: the smallest power of two ≥ `len` from 16 to 128.
fn side(len: usize) -> (u32, u32) {
    match len {
        0..=16 => (4, 4),
        17..=32 => (8, 4),
        33..=64 => (8, 8),
        _ => (16, 8),
    }
}

/// The tile for a GEMM of `m × n`: the wide side gets 128 (8 per unit: twice the FMAs per shared-memory read
/// of 4 per unit), the narrow side the smallest power of two ≥ its length (16 … 128), so channel counts like
/// 16 or 32 do not compute padding.
pub fn pick_tile(m: usize, n: usize) -> Tile {
    let narrow = side;
    if n <= m {
        let (un, tn) = narrow(n);
        let (um, tm) = if un * tn <= 32 { (256 / un, 4) } else { (16, 8) };
        Tile { um, un, tm, tn, bk: 16 }
    } else {
        let (um, tm) = narrow(m);
        let (un, tn) = if um * tm <= 32 { (256 / um, 4) } else { (16, 8) };
        Tile { um, un, tm, tn, bk: 16 }
    }
}

fn geo_arg<R: CubeRuntime>(g: &Conv2dGeometry) -> GeoLaunch<R> {
    let u = |v: usize| v as u32;
    GeoLaunch::new(
        u(g.batch),
        u(g.h),
        u(g.w),
        u(g.c_in),
        u(g.oh),
        u(g.ow),
        u(g.c_out),
        u(g.kh),
        u(g.kw),
        u(g.stride[0]),
        u(g.stride[1]),
        u(g.padding[0]),
        u(g.padding[1]),
        u(g.dilation[0]),
        u(g.dilation[1]),
        u(g.groups),
    )
}

/// `(M, N, K)` of one group's GEMM for `pass`.
pub fn gemm_dims(g: &Conv2dGeometry, pass: u32) -> (usize, usize, usize) {
    let (cig, cog, taps) = (g.c_in / g.groups, g.c_out / g.groups, g.kh * g.kw);
    match pass {
        FWD => (g.batch * g.oh * g.ow, cog, taps * cig),
        DGRAD => (g.batch * g.h * g.w, cig, taps * cog),
        _ => (cog, taps * cig, g.batch * g.oh * g.ow),
    }
}

/// The weight gradient's tile: each side as narrow as its length allows (`M = Cog` and `N = KH·KW·Cig` are
/// often far below 128: the stem's 16 × 27, the head's 4 × 16), so a cube computes no padding; the split-K
/// ([`wgrad_splits`]) supplies the parallelism. Wide sides get [`pick_tile`]'s 128.
pub fn pick_wgrad_tile(m: usize, n: usize) -> Tile {
    let ((um, tm), (un, tn)) = (side(m), side(n));
    Tile { um, un, tm, tn, bk: 16 }
}

/// Units the weight gradient aims to run at once (split-K cubes × units): about one wave of a 132-SM GPU (2,048
/// units each); more splits only add partial sums to write and reduce.
const WGRAD_TARGET_UNITS: usize = 1 << 18;

/// Splits of the weight gradient's pixel reduction: enough cubes for [`WGRAD_TARGET_UNITS`] units in all, each
/// split at least 512 pixels. Returns `(splits, pixels per split)`.
pub fn wgrad_splits(g: &Conv2dGeometry, tile: Tile) -> (usize, usize) {
    let (m, n, k) = gemm_dims(g, WGRAD);
    let tiles = m.div_ceil(tile.bm()) * n.div_ceil(tile.bn()) * g.groups;
    let units = (tile.um * tile.un) as usize;
    let splits = WGRAD_TARGET_UNITS.div_ceil(tiles * units).clamp(1, k.div_ceil(512).max(1));
    let chunk = k.div_ceil(splits).div_ceil(tile.bk as usize) * tile.bk as usize;
    (k.div_ceil(chunk), chunk)
}

/// Launches [`gemm::conv_gemm_kernel`] for `pass`: `a`, `b` as in its docs, `bias` read only when `has_bias`
/// (any tight tensor otherwise), `out` `y [B,OH,OW,Co]` / `dx [B,H,W,Ci]` / f32 partials
/// `[splits, Co, KH·KW·Cig]` (`splits` from [`wgrad_splits`]).
#[allow(clippy::too_many_arguments)]
pub fn launch_gemm<R: CubeRuntime>(
    pass: u32,
    geo: &Conv2dGeometry,
    tile: Tile,
    a: &CubeTensor<R>,
    b: &CubeTensor<R>,
    bias: &CubeTensor<R>,
    out: &CubeTensor<R>,
    has_bias: bool,
    act: u32,
) {
    assert_tight("conv gemm", &[a, b, bias, out]);
    let units = (tile.um * tile.un) as usize;
    assert!(
        units.is_multiple_of(tile.bk as usize) && (tile.bm() * tile.bk as usize).is_multiple_of(units),
        "conv gemm: tile {tile:?} does not split into whole unit slots"
    );
    let (m, n, _) = gemm_dims(geo, pass);
    let (m_tiles, n_tiles) = (m.div_ceil(tile.bm()), n.div_ceil(tile.bn()));
    let (splits, chunk) = if pass == WGRAD { wgrad_splits(geo, tile) } else { (1, 0) };
    let (gx, gy) = grid_2d(m_tiles * n_tiles);
    let client = a.client.clone();
    // SAFETY: every read is bounded by the geometry (the real shapes of the tight tensors, checked by the
    // caller); each output index is inside `out`'s shape for `m < M`, `n < N` (and `split < splits`).
    unsafe {
        gemm::conv_gemm_kernel::launch_unchecked::<R>(
            &client,
            CubeCount::Static(gx, gy, (splits * geo.groups) as u32),
            CubeDim::new_1d(tile.um * tile.un),
            a.clone().into_tensor_arg(),
            b.clone().into_tensor_arg(),
            bias.clone().into_tensor_arg(),
            out.clone().into_tensor_arg(),
            geo_arg(geo),
            m_tiles as u32,
            n_tiles as u32,
            chunk as u32,
            pass,
            tile.um,
            tile.un,
            tile.tm,
            tile.tn,
            tile.bk,
            has_bias,
            act,
            [a.dtype.into(), out.dtype.into()],
        )
    }
}

/// Units per cube of the depthwise kernels.
const DW_UNITS: usize = 256;

/// Launches [`depthwise::dw_forward_kernel`]: `x`, `w [C, KH, KW, 1]`, `bias` (read when `has_bias`) → `out`.
pub fn launch_dw_forward<R: CubeRuntime>(
    geo: &Conv2dGeometry,
    x: &CubeTensor<R>,
    w: &CubeTensor<R>,
    bias: &CubeTensor<R>,
    out: &CubeTensor<R>,
    has_bias: bool,
    act: u32,
) {
    assert_tight("depthwise forward", &[x, w, bias, out]);
    let (gx, gy) = grid_2d((geo.batch * geo.oh * geo.ow * geo.c_out).div_ceil(DW_UNITS));
    // SAFETY: one unit per output element (surplus units return); reads bounded by the geometry.
    unsafe {
        depthwise::dw_forward_kernel::launch_unchecked::<R>(
            &x.client,
            CubeCount::Static(gx, gy, 1),
            CubeDim::new_1d(DW_UNITS as u32),
            x.clone().into_tensor_arg(),
            w.clone().into_tensor_arg(),
            bias.clone().into_tensor_arg(),
            out.clone().into_tensor_arg(),
            geo_arg(geo),
            (geo.kh * geo.kw) as u32,
            has_bias,
            act,
            x.dtype.into(),
        )
    }
}

/// Launches [`depthwise::dw_dgrad_kernel`]: `dy`, `w` → `dx [B, H, W, C]`.
pub fn launch_dw_dgrad<R: CubeRuntime>(
    geo: &Conv2dGeometry,
    dy: &CubeTensor<R>,
    w: &CubeTensor<R>,
    dx: &CubeTensor<R>,
) {
    assert_tight("depthwise dgrad", &[dy, w, dx]);
    let (gx, gy) = grid_2d((geo.batch * geo.h * geo.w * geo.c_in).div_ceil(DW_UNITS));
    // SAFETY: one unit per input element (surplus units return); reads bounded by the geometry.
    unsafe {
        depthwise::dw_dgrad_kernel::launch_unchecked::<R>(
            &dy.client,
            CubeCount::Static(gx, gy, 1),
            CubeDim::new_1d(DW_UNITS as u32),
            dy.clone().into_tensor_arg(),
            w.clone().into_tensor_arg(),
            dx.clone().into_tensor_arg(),
            geo_arg(geo),
            (geo.kh * geo.kw) as u32,
            dy.dtype.into(),
        )
    }
}

/// Units per cube of the depthwise weight gradient (channels per cube).
const DW_WGRAD_UNITS: usize = 64;

/// Pixel chunks of the depthwise weight gradient: `(chunks, pixels per chunk)`, ~1024 cubes in all.
pub fn dw_wgrad_chunks(geo: &Conv2dGeometry) -> (usize, usize) {
    let pixels = geo.batch * geo.oh * geo.ow;
    let blocks = geo.c_out.div_ceil(DW_WGRAD_UNITS);
    let chunks = 1024usize.div_ceil(blocks).clamp(1, pixels.div_ceil(64).max(1));
    let per = pixels.div_ceil(chunks);
    (pixels.div_ceil(per), per)
}

/// Launches [`depthwise::dw_wgrad_kernel`]: `x`, `dy` → f32 partials `[chunks, C, KH·KW]` ([`dw_wgrad_chunks`]).
pub fn launch_dw_wgrad<R: CubeRuntime>(
    geo: &Conv2dGeometry,
    x: &CubeTensor<R>,
    dy: &CubeTensor<R>,
    part: &CubeTensor<R>,
) {
    assert_tight("depthwise wgrad", &[x, dy, part]);
    let (chunks, per) = dw_wgrad_chunks(geo);
    // SAFETY: unit (c, chunk) with c < C reads pixels of its chunk only and writes its own `taps` partials.
    unsafe {
        depthwise::dw_wgrad_kernel::launch_unchecked::<R>(
            &x.client,
            CubeCount::Static(geo.c_out.div_ceil(DW_WGRAD_UNITS) as u32, chunks as u32, 1),
            CubeDim::new_1d(DW_WGRAD_UNITS as u32),
            x.clone().into_tensor_arg(),
            dy.clone().into_tensor_arg(),
            part.clone().into_tensor_arg(),
            geo_arg(geo),
            per as u32,
            (geo.kh * geo.kw) as u32,
            x.dtype.into(),
        )
    }
}

/// One representative specialisation of each kernel (f32; the GEMM with the tiles a 64-channel forward, a
/// 32-channel input gradient and the stem's weight gradient get) for the source snapshots of [`crate::snapshot`].
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, R, S, T};
    let geo = crate::snapshot::conv_geo;
    let gemm_def = |name: &'static str, pass: u32, t: Tile, bias: bool, act: u32| {
        let (_, def) = kernel_def!(
            "conv_gemm",
            gemm::conv_gemm_kernel::ConvGemmKernel<R>,
            units = t.um * t.un,
            [T, T, T, T, geo(), S, S, S, pass, t.um, t.un, t.tm, t.tn, t.bk, bias, act, [F32, F32]]
        );
        (name, def)
    };
    vec![
        gemm_def("conv_gemm_fwd_f32_n64_silu", FWD, pick_tile(4096, 64), true, gemm::ACT_SILU),
        gemm_def("conv_gemm_dgrad_f32_n32", DGRAD, pick_tile(4096, 32), false, gemm::ACT_NONE),
        gemm_def("conv_gemm_wgrad_f32_m16_n27", WGRAD, pick_wgrad_tile(16, 27), false, gemm::ACT_NONE),
        kernel_def!(
            "conv_dw_forward_f32_3x3_silu",
            depthwise::dw_forward_kernel::DwForwardKernel<R>,
            units = DW_UNITS,
            [T, T, T, T, geo(), 9u32, true, gemm::ACT_SILU, F32]
        ),
        kernel_def!(
            "conv_dw_dgrad_f32_3x3",
            depthwise::dw_dgrad_kernel::DwDgradKernel<R>,
            units = DW_UNITS,
            [T, T, T, geo(), 9u32, F32]
        ),
        kernel_def!(
            "conv_dw_wgrad_f32_3x3",
            depthwise::dw_wgrad_kernel::DwWgradKernel<R>,
            units = DW_WGRAD_UNITS,
            [T, T, T, geo(), S, 9u32, F32]
        ),
        kernel_def!("conv_silu_inplace_f32", act::silu_inplace_kernel::SiluInplaceKernel<R>, units = 256, [T, S, F32]),
        kernel_def!(
            "conv_spread_f32",
            spread::spread_kernel::SpreadKernel<R>,
            units = 256,
            [T, T, S, S, S, S, S, S, S, S, F32]
        ),
    ]
}
