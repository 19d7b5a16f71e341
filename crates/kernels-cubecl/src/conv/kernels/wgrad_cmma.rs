//! The weight gradient (`WGRAD` of [`super::gemm`]) on tensor cores: CubeCL `cmma` 16×16×16 tiles, f16/bf16
//! operands, f32 accumulation, split-K over the pixels with f32 partial sums `[splits, Co, KH·KW·Cig]` exactly
//! as the plain kernel writes them (the caller sums them). CUDA only in practice (the device must report the
//! `cmma` configuration: [`supported`]); elsewhere the plain kernel runs.
//!
//! `C[m, n] = Σ_k A[m, k] · B[k, n]` with `m` = output channel of the group, `n = (kh, kw, ci)`, `k` = output
//! pixel `(b, oh, ow)`: `A[m, k] = dy[k, g·Cog + m]`, `B[k, n] = x[b, oh·s + kh·d − p, ow·s + kw·d − p, g·Cig + ci]`
//! (0 outside the image). A product of two f16 (or bf16) values is exact in f32, so this computes the same sum
//! as the plain kernel's f32 FMAs, in another order.
//!
//! # Work split
//!
//! A cube is 4 planes of 32 units; plane `p` owns a 32 × 32 block of `C` (2 × 2 accumulator fragments) at
//! `(p % PM, p / PM)` in a `PM × (4 / PM)` arrangement: tiles of 64 × 64 (`PM = 2`) or 32 × 128 (`PM = 1`, for
//! `Cog ≤ 32`). Per step of [`BK`] pixels the cube stages `A` as `[BK][BM]` (column-major `m × k`, loaded
//! along the contiguous NHWC channels of `dy`) and `B` as `[BK][BN]` (row-major `k × n`, along `x`'s channels)
//! in shared memory, then each plane runs `BK / 16 × 4` tensor-core products. Every unit keeps one `m` (or `n`)
//! column for all its staged elements, so its channel and tap decomposition is computed once per cube. The grid
//! is `(tiles, splits · groups)` as in the plain kernel; at the end the accumulators go through shared memory
//! to coalesced, bounds-checked writes of the partials.
use burn_cubecl::{tensor::CubeTensor, CubeRuntime};
use cubecl::prelude::*;

use super::gemm::Geo;
use super::{geo_arg, grid_2d};
use crate::conv::Conv2dGeometry;

/// Tensor-core tile edge.
const T: u32 = 16;
/// [`T`] as a fragment dimension.
const TU: usize = 16;
/// Units per plane the kernel is written for (CUDA warps).
pub const PLANE: u32 = 32;
/// Planes per cube.
pub const PLANES: u32 = 4;
/// Pixels per shared-memory stage.
pub const BK: u32 = 32;

/// See the module docs. `dy: [B, OH, OW, Co]`, `x: [B, H, W, Ci]` (f16/bf16, tight), `out`: f32 partials;
/// `pm` = planes along `m` (1 or 2).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn wgrad_cmma_kernel<F: Float>(
    dy: &Tensor<F>,
    x: &Tensor<F>,
    out: &mut Tensor<f32>,
    geo: Geo,
    m_tiles: u32,
    n_tiles: u32,
    k_chunk: u32,
    #[comptime] pm: u32,
    #[define(F)] _dtype: StorageType,
) {
    let pn = comptime!(PLANES / pm);
    let bm = comptime!(pm * 2 * T);
    let bn = comptime!(pn * 2 * T);
    let units = comptime!(PLANES * PLANE);
    let plane = UNIT_POS_Y;
    let tid = plane * PLANE + UNIT_POS_X;

    let cig = geo.ci / geo.groups;
    let cog = geo.co / geo.groups;
    let m_len = cog;
    let n_len = geo.kh * geo.kw * cig;
    let k_len = geo.b * geo.oh * geo.ow;
    let tile = min(CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X, m_tiles * n_tiles - 1);
    let m0 = (tile % m_tiles) * bm;
    let n0 = (tile / m_tiles) * bn;
    let g = CUBE_POS_Z % geo.groups;
    let split = CUBE_POS_Z / geo.groups;
    let k_begin = split * k_chunk;
    let k_end = min(k_len, k_begin + k_chunk);

    let mut a_s = SharedMemory::<F>::new(comptime!((BK * bm) as usize));
    let mut b_s = SharedMemory::<F>::new(comptime!((BK * bn) as usize));
    let mut c_s = SharedMemory::<f32>::new(comptime!((bm * bn) as usize));

    // the unit's staged column: `m` of A (units / BM pixels per pass), `n` of B (units / BN pixels per pass)
    let mm = tid % bm;
    let kq_a = tid / bm;
    let m = m0 + mm;
    let a_ok = m < m_len;
    let a_off = g * cog + m;
    let nn = tid % bn;
    let kq_b = tid / bn;
    let n = n0 + nn;
    let b_ok = n < n_len;
    let c = n % cig;
    let r = n / cig;
    let dh = (r / geo.kw) * geo.dh;
    let dw = (r % geo.kw) * geo.dw;
    let x_off = g * cig + c;

    let a0 =
        unsafe { cmma::Matrix::<F>::uninitialized(cmma::MatrixIdent::A, TU, TU, TU, cmma::MatrixLayout::ColMajor) };
    let a1 =
        unsafe { cmma::Matrix::<F>::uninitialized(cmma::MatrixIdent::A, TU, TU, TU, cmma::MatrixLayout::ColMajor) };
    let b0 =
        unsafe { cmma::Matrix::<F>::uninitialized(cmma::MatrixIdent::B, TU, TU, TU, cmma::MatrixLayout::RowMajor) };
    let b1 =
        unsafe { cmma::Matrix::<F>::uninitialized(cmma::MatrixIdent::B, TU, TU, TU, cmma::MatrixLayout::RowMajor) };
    let acc00 = unsafe {
        cmma::Matrix::<f32>::uninitialized(cmma::MatrixIdent::Accumulator, TU, TU, TU, cmma::MatrixLayout::Undefined)
    };
    let acc01 = unsafe {
        cmma::Matrix::<f32>::uninitialized(cmma::MatrixIdent::Accumulator, TU, TU, TU, cmma::MatrixLayout::Undefined)
    };
    let acc10 = unsafe {
        cmma::Matrix::<f32>::uninitialized(cmma::MatrixIdent::Accumulator, TU, TU, TU, cmma::MatrixLayout::Undefined)
    };
    let acc11 = unsafe {
        cmma::Matrix::<f32>::uninitialized(cmma::MatrixIdent::Accumulator, TU, TU, TU, cmma::MatrixLayout::Undefined)
    };
    cmma::fill(&acc00, f32::new(0.0));
    cmma::fill(&acc01, f32::new(0.0));
    cmma::fill(&acc10, f32::new(0.0));
    cmma::fill(&acc11, f32::new(0.0));
    // the plane's 32 × 32 block of C
    let row0 = (plane % pm) * 2 * T;
    let col0 = (plane / pm) * 2 * T;

    let mut k0 = k_begin;
    while k0 < k_end {
        // ---- A = dy[pixel, channel]: [BK][BM] ----
        #[unroll]
        for l in 0..comptime!(BK * bm / units) {
            let kq = l * comptime!(units / bm) + kq_a;
            let k = k0 + kq;
            let mut v = F::new(0.0);
            if a_ok && k < k_end {
                v = dy[(k * geo.co + a_off) as usize];
            }
            a_s[(kq * bm + mm) as usize] = v;
        }
        // ---- B = x at the pixel's tap: [BK][BN] ----
        #[unroll]
        for l in 0..comptime!(BK * bn / units) {
            let kq = l * comptime!(units / bn) + kq_b;
            let k = k0 + kq;
            let mut v = F::new(0.0);
            if b_ok && k < k_end {
                let ow = k % geo.ow;
                let t = k / geo.ow;
                let oh = t % geo.oh;
                let bb = t / geo.oh;
                let ih = (oh * geo.sh + dh) as i32 - geo.ph as i32;
                let iw = (ow * geo.sw + dw) as i32 - geo.pw as i32;
                if ih >= 0 && iw >= 0 && ih < geo.h as i32 && iw < geo.w as i32 {
                    v = x[(((bb * geo.h + ih as u32) * geo.w + iw as u32) * geo.ci + x_off) as usize];
                }
            }
            b_s[(kq * bn + nn) as usize] = v;
        }
        sync_cube();

        // ---- the plane's 2 × 2 fragments, BK / 16 steps ----
        #[unroll]
        for kf in 0..comptime!(BK / T) {
            // A (m × k) column-major: element (m, k) at k·BM + m
            let sa = (kf * T * bm + row0) as usize;
            cmma::load(&a0, &a_s.slice(sa, sa + comptime!(((T - 1) * bm + T) as usize)), bm);
            let sa1 = sa + comptime!(T as usize);
            cmma::load(&a1, &a_s.slice(sa1, sa1 + comptime!(((T - 1) * bm + T) as usize)), bm);
            // B (k × n) row-major: element (k, n) at k·BN + n
            let sb = (kf * T * bn + col0) as usize;
            cmma::load(&b0, &b_s.slice(sb, sb + comptime!(((T - 1) * bn + T) as usize)), bn);
            let sb1 = sb + comptime!(T as usize);
            cmma::load(&b1, &b_s.slice(sb1, sb1 + comptime!(((T - 1) * bn + T) as usize)), bn);
            cmma::execute::<F, F, f32, f32>(&a0, &b0, &acc00, &acc00);
            cmma::execute::<F, F, f32, f32>(&a0, &b1, &acc01, &acc01);
            cmma::execute::<F, F, f32, f32>(&a1, &b0, &acc10, &acc10);
            cmma::execute::<F, F, f32, f32>(&a1, &b1, &acc11, &acc11);
        }
        sync_cube();
        k0 += BK;
    }

    // ---- accumulators → shared [BM][BN] → partials ----
    let len = comptime!(((T - 1) * bn + T) as usize);
    let s00 = (row0 * bn + col0) as usize;
    let s01 = s00 + comptime!(T as usize);
    let s10 = s00 + comptime!((T * bn) as usize);
    let s11 = s10 + comptime!(T as usize);
    cmma::store(&mut c_s.slice_mut(s00, s00 + len), &acc00, bn, cmma::MatrixLayout::RowMajor);
    cmma::store(&mut c_s.slice_mut(s01, s01 + len), &acc01, bn, cmma::MatrixLayout::RowMajor);
    cmma::store(&mut c_s.slice_mut(s10, s10 + len), &acc10, bn, cmma::MatrixLayout::RowMajor);
    cmma::store(&mut c_s.slice_mut(s11, s11 + len), &acc11, bn, cmma::MatrixLayout::RowMajor);
    sync_cube();
    #[unroll]
    for l in 0..comptime!(bm * bn / units) {
        let e = l * units + tid;
        let om = m0 + e / bn;
        let on = n0 + e % bn;
        if om < m_len && on < n_len {
            out[((split * geo.co + g * cog + om) * n_len + on) as usize] = c_s[e as usize];
        }
    }
}

/// Planes along `m` for a group's `Cog` output channels: 1 (32 × 128 tiles) up to 32, else 2 (64 × 64).
pub fn planes_m(cog: usize) -> u32 {
    if cog <= 32 {
        1
    } else {
        2
    }
}

/// Cubes the split-K aims for: 8 per SM of a 132-SM GPU.
const TARGET_CUBES: usize = 1056;

/// `(splits, pixels per split)` of the tensor-core weight gradient: about [`TARGET_CUBES`] cubes, at least 512
/// pixels (16 stages) per split.
pub fn splits(geo: &Conv2dGeometry) -> (usize, usize) {
    let (m, n, k) = super::gemm_dims(geo, super::gemm::WGRAD);
    let pm = planes_m(m) as usize;
    let (bm, bn) = (pm * 32, (PLANES as usize / pm) * 32);
    let tiles = m.div_ceil(bm) * n.div_ceil(bn) * geo.groups;
    let splits = TARGET_CUBES.div_ceil(tiles).clamp(1, k.div_ceil(512).max(1));
    let chunk = k.div_ceil(splits).div_ceil(BK as usize) * BK as usize;
    (k.div_ceil(chunk), chunk)
}

/// Whether the tensor-core weight gradient runs for `dtype` on `t`'s device: f16/bf16, 32-unit planes, and the
/// device's `cmma` configurations include `16×16×16` with f32 accumulation for that dtype.
pub fn supported<R: CubeRuntime>(t: &CubeTensor<R>) -> bool {
    use burn::tensor::DType;
    use cubecl::ir::{features::MmaConfig, ElemType, FloatKind};
    let kind = match t.dtype {
        DType::F16 => FloatKind::F16,
        DType::BF16 => FloatKind::BF16,
        _ => return false,
    };
    let props = t.client.properties();
    if props.hardware.plane_size_min != PLANE || props.hardware.plane_size_max != PLANE {
        return false;
    }
    let config = MmaConfig {
        a_type: ElemType::Float(kind).into(),
        b_type: ElemType::Float(kind).into(),
        cd_type: ElemType::Float(FloatKind::F32).into(),
        m: T,
        n: T,
        k: T,
    };
    props.features.matmul.cmma.contains(&config)
}

/// Launches [`wgrad_cmma_kernel`]: `dy`, `x` (tight, f16/bf16) → f32 partials `part [splits, Co, KH·KW·Cig]`
/// (`splits` from [`splits`]). The caller checks [`supported`].
pub fn launch<R: CubeRuntime>(geo: &Conv2dGeometry, dy: &CubeTensor<R>, x: &CubeTensor<R>, part: &CubeTensor<R>) {
    crate::cube_util::assert_tight("conv wgrad cmma", &[dy, x, part]);
    let (m, n, _) = super::gemm_dims(geo, super::gemm::WGRAD);
    let pm = planes_m(m);
    let (bm, bn) = (pm as usize * 32, (PLANES / pm) as usize * 32);
    let (m_tiles, n_tiles) = (m.div_ceil(bm), n.div_ceil(bn));
    let (splits, chunk) = splits(geo);
    let (gx, gy) = grid_2d(m_tiles * n_tiles);
    // SAFETY: reads bounded by the geometry (the tight tensors' shapes); writes only for `m < Cog`, `n < N`,
    // `split < splits` inside `part`'s shape.
    unsafe {
        wgrad_cmma_kernel::launch_unchecked::<R>(
            &dy.client,
            CubeCount::Static(gx, gy, (splits * geo.groups) as u32),
            CubeDim::new_2d(PLANE, PLANES),
            dy.clone().into_tensor_arg(),
            x.clone().into_tensor_arg(),
            part.clone().into_tensor_arg(),
            geo_arg(geo),
            m_tiles as u32,
            n_tiles as u32,
            chunk as u32,
            pm,
            dy.dtype.into(),
        )
    }
}
