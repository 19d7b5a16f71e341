//! Flash Attention 2 forward with register-level tensor cores (`mma.sync.m16n8k16`, f16/bf16 operands,
//! f32 accumulation; building blocks and register layouts in [`super::mma`]). Preferred over
//! [`super::forward_cmma`] where the device has manual MMA (CUDA sm_80+).
//!
//! # Math
//!
//! As in [`super::forward`]: `S = s·QKᵀ`, online softmax over key tiles with a running max `m` and sum
//! `l`, `O = acc / l`, `LSE = m + ln l`; `P` is rounded to the storage dtype before `P·V` (as FA2 does).
//! The running max is kept on the unscaled scores `QKᵀ` (valid for `s > 0`, which the launcher
//! requires), so each probability is one fused multiply-add and an exp: `p = exp(s·x − s·m)`. Only the
//! last key tile, the one that can reach past `Nk`, is masked.
//!
//! # Work split (the FA2 layout)
//!
//! Grid `(⌈Nq/BM⌉, BH)`; a cube is `P` planes of `M` blocks of 16 query rows (`BM = 16·P·M`), plane `p`
//! owns rows `16·M·p .. 16·M·(p+1)`. Each plane keeps its Q rows as A fragments, its `S` tile and its
//! output accumulator in registers for the whole key loop: lane `(g, t)` holds rows `g` and `g+8` of each
//! 16-row block, so the row max and sum are a quad reduction (two shuffles), `α`-rescaling of `O` happens
//! in registers, and the `S` accumulator *is* the A fragment of `P·V`. With `M = 2` each K/V fragment
//! read from shared memory (`ldmatrix`) feeds two products. Per key tile (`BN` keys, comptime) the cube
//! stages K and V in shared memory (rows past `Nk` repeat row `Nk − 1`, masked in `S`; two buffers: the
//! next tile's global loads are issued into registers before the current tile's products and stored after
//! them, one cube sync per tile); `ldmatrix` feeds the B fragments (V transposed on the fly). The
//! configuration (`BN`, `P`, `M`) is [`MmaConfig`], chosen by query length ([`forward_config`]).
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::mma::{
    acc_as_a, fetch_tile_clamped, ldsm_x4, load_tile, mma_into, plane_a_frags, quad_max, quad_sum, store_acc_rows,
    store_tile, take4, tile_bytes, zero_acc,
};
use super::mma::{A2, PLANE, R2, V8};
use super::NEG_BIG;
use cubecl::ir::FastMath;

/// `q: [BH, nq, dk]`, `k: [BH, nk, dk]`, `v: [BH, nk, dv]` (f16/bf16, read in 8-element chunks) →
/// `o: [BH, nq, dv]` (written in pairs), `lse: [BH, nq]` f32. All contiguous; `dk`, `dv` multiples of
/// 16; cube = `(32, planes)` units, each plane `mtiles` blocks of 16 query rows; `block_n` a multiple of
/// 16 with `2·block_n ≥ 16·planes·mtiles` (the Q tile is staged in the K buffers).
#[cube(launch_unchecked, fast_math = FastMath::ReducedPrecision | FastMath::NotNaN | FastMath::NotInf)]
#[allow(clippy::too_many_arguments)]
pub fn flash_fwd_mma_kernel<F: Float>(
    q: &Tensor<V8<F>>,
    k: &Tensor<V8<F>>,
    v: &Tensor<V8<F>>,
    o: &mut Tensor<R2<F>>,
    lse: &mut Tensor<f32>,
    nq: u32,
    nk: u32,
    scale: f32,
    #[comptime] dk: usize,
    #[comptime] dv: usize,
    #[comptime] planes: usize,
    #[comptime] mtiles: usize,
    #[comptime] block_n: usize,
    #[define(F)] _dtype: StorageType,
) {
    let block_m = comptime!(planes * mtiles * 16);
    let units = comptime!(planes * PLANE);
    let ks = comptime!(dk / 8 + 1);
    let vs = comptime!(dv / 8 + 1);
    // Registers per m-tile of the Q fragments, the S accumulator and the O accumulator.
    let qn = comptime!(dk / 4);
    let sn = comptime!(block_n / 4);
    let on = comptime!(dv / 4);
    let lane = UNIT_POS_X as usize;
    let plane = UNIT_POS_Y as usize;
    let t = lane % 4;
    let g = lane / 4;
    let bh = CUBE_POS_Y as usize;
    let nq = nq as usize;
    let nk = nk as usize;
    let row0 = CUBE_POS_X as usize * block_m;

    // Two K and two V tiles: tile `kt` lives at rows `(kt % 2)·block_n ..`; the next one is fetched into
    // registers during the current one's products and stored into the other half (one sync per tile).
    // Before the key loop the K buffers hold the Q tile (`block_m ≤ 2·block_n` rows).
    let mut k_s = SharedMemory::<V8<F>>::new(2 * block_n * ks);
    let mut v_s = SharedMemory::<V8<F>>::new(2 * block_n * vs);

    load_tile::<F>(q, &mut k_s, (bh * nq + row0) * (dk / 8usize), nq - row0, block_m, dk / 8usize, units);
    sync_cube();
    let mut qa = Array::<R2<F>>::new(mtiles * qn);
    #[unroll]
    for mt in 0..mtiles {
        let f = plane_a_frags::<F>(&k_s, plane * mtiles + mt, dk);
        #[unroll]
        for i in 0..qn {
            qa[mt * qn + i] = f[i];
        }
    }
    sync_cube();

    let mut o_acc = zero_acc(mtiles * on);
    // Running max (unscaled) and lane-partial sum of rows g (index 2·mt) and g+8 (2·mt + 1) of m-tile mt.
    let mut m_run = Array::<f32>::new(2 * mtiles);
    let mut l_run = Array::<f32>::new(2 * mtiles);
    #[unroll]
    for i in 0..2 * mtiles {
        m_run[i] = f32::new(NEG_BIG);
        l_run[i] = f32::new(0.0);
    }

    let num_tiles = nk.div_ceil(block_n);
    let kr = fetch_tile_clamped::<F>(k, (bh * nk) * (dk / 8usize), nk, block_n, dk / 8usize, units);
    let vr = fetch_tile_clamped::<F>(v, (bh * nk) * (dv / 8usize), nk, block_n, dv / 8usize, units);
    store_tile::<F>(&kr, &mut k_s, 0usize, block_n, dk / 8usize, units);
    store_tile::<F>(&vr, &mut v_s, 0usize, block_n, dv / 8usize, units);
    sync_cube();
    for kt in 0..num_tiles {
        let j0 = kt * block_n;
        let cur = (kt % 2) * block_n;
        let next = block_n - cur;
        // Prefetch tile kt + 1 (after the last tile: the current one again, stored but never read).
        let mut jn = j0 + block_n;
        if jn >= nk {
            jn = j0;
        }
        let valid_next = nk - jn;
        let kr = fetch_tile_clamped::<F>(k, (bh * nk + jn) * (dk / 8usize), valid_next, block_n, dk / 8usize, units);
        let vr = fetch_tile_clamped::<F>(v, (bh * nk + jn) * (dv / 8usize), valid_next, block_n, dv / 8usize, units);

        // S = Q Kᵀ (16·mtiles rows × block_n keys per plane); each K fragment feeds every m-tile.
        let mut s = zero_acc(mtiles * sn);
        #[unroll]
        for kf in 0..dk / 16 {
            #[unroll]
            for np in 0..block_n / 16 {
                let b = ldsm_x4::<F>(&k_s, cur + np * 16usize, 2usize * kf, ks, false, false);
                #[unroll]
                for mt in 0..mtiles {
                    let a = take4::<F>(&qa, mt * qn + 4usize * kf);
                    mma_into::<F>(&a, &b, 0usize, &mut s, mt * sn + 4usize * np);
                    mma_into::<F>(&a, &b, 2usize, &mut s, mt * sn + 4usize * np + 2usize);
                }
            }
        }

        // Mask keys past nk (last tile only).
        if j0 + block_n > nk {
            #[unroll]
            for mt in 0..mtiles {
                #[unroll]
                for nt in 0..block_n / 8 {
                    #[unroll]
                    for h in 0..2usize {
                        let mut w = s[mt * sn + 2 * nt + h];
                        #[unroll]
                        for e in 0..2usize {
                            if j0 + nt * 8 + 2 * t + e >= nk {
                                w[e] = f32::new(NEG_BIG);
                            }
                        }
                        s[mt * sn + 2 * nt + h] = w;
                    }
                }
            }
        }

        #[unroll]
        for mt in 0..mtiles {
            // Tile max per row of the raw scores (scale > 0), new running max, rescale factors.
            let mut x0 = f32::new(NEG_BIG);
            let mut x1 = f32::new(NEG_BIG);
            #[unroll]
            for nt in 0..block_n / 8 {
                let w0 = s[mt * sn + 2 * nt];
                let w1 = s[mt * sn + 2 * nt + 1];
                x0 = max(x0, max(w0[0usize], w0[1usize]));
                x1 = max(x1, max(w1[0usize], w1[1usize]));
            }
            let mo0 = m_run[2 * mt];
            let mo1 = m_run[2 * mt + 1];
            let mn0 = max(mo0, quad_max(x0));
            let mn1 = max(mo1, quad_max(x1));
            let alpha0 = ((mo0 - mn0) * scale).exp();
            let alpha1 = ((mo1 - mn1) * scale).exp();
            m_run[2 * mt] = mn0;
            m_run[2 * mt + 1] = mn1;
            let ms0 = mn0 * scale;
            let ms1 = mn1 * scale;

            // P = exp(s·S − s·m) in place (one fused multiply-add before the exp); lane-partial row sums.
            let mut p0 = f32::new(0.0);
            let mut p1 = f32::new(0.0);
            #[unroll]
            for nt in 0..block_n / 8 {
                #[unroll]
                for h in 0..2usize {
                    let reg = s[mt * sn + 2 * nt + h];
                    let mut w = A2::empty();
                    let mut mrow = ms0;
                    if comptime!(h == 1) {
                        mrow = ms1;
                    }
                    #[unroll]
                    for e in 0..2usize {
                        w[e] = (reg[e] * scale - mrow).exp();
                    }
                    s[mt * sn + 2 * nt + h] = w;
                    if comptime!(h == 0) {
                        p0 += w[0usize] + w[1usize];
                    } else {
                        p1 += w[0usize] + w[1usize];
                    }
                }
            }
            l_run[2 * mt] = l_run[2 * mt] * alpha0 + p0;
            l_run[2 * mt + 1] = l_run[2 * mt + 1] * alpha1 + p1;
            #[unroll]
            for nd in 0..dv / 8 {
                o_acc[mt * on + 2 * nd] = o_acc[mt * on + 2 * nd] * A2::new(alpha0);
                o_acc[mt * on + 2 * nd + 1] = o_acc[mt * on + 2 * nd + 1] * A2::new(alpha1);
            }
        }

        // O += P V: the S accumulator is P's A fragment; V's B fragments via ldmatrix.trans, each feeding
        // every m-tile.
        #[unroll]
        for kc in 0..block_n / 16 {
            #[unroll]
            for dp in 0..dv / 16 {
                let b = ldsm_x4::<F>(&v_s, cur + kc * 16usize, 2usize * dp, vs, true, true);
                #[unroll]
                for mt in 0..mtiles {
                    let pa = acc_as_a::<F>(&s, comptime!(mt * block_n / 16) + kc);
                    mma_into::<F>(&pa, &b, 0usize, &mut o_acc, mt * on + 4usize * dp);
                    mma_into::<F>(&pa, &b, 2usize, &mut o_acc, mt * on + 4usize * dp + 2usize);
                }
            }
        }
        // The other half was last read in iteration kt − 1, before its closing sync.
        store_tile::<F>(&kr, &mut k_s, next, block_n, dk / 8usize, units);
        store_tile::<F>(&vr, &mut v_s, next, block_n, dv / 8usize, units);
        sync_cube();
    }

    // O / l, LSE = m + ln l (l summed over the quad).
    #[unroll]
    for mt in 0..mtiles {
        let l0 = quad_sum(l_run[2 * mt]);
        let l1 = quad_sum(l_run[2 * mt + 1]);
        let inv0 = A2::new(f32::new(1.0) / l0);
        let inv1 = A2::new(f32::new(1.0) / l1);
        let r0 = row0 + (plane * mtiles + mt) * 16 + g;
        let r1 = r0 + 8;
        let mut acc = Array::<A2>::new(on);
        #[unroll]
        for i in 0..on {
            acc[i] = o_acc[mt * on + i];
        }
        store_acc_rows::<F>(o, &acc, bh, nq, r0, r1, t, inv0, inv1, true, dv);
        if t == 0 {
            if r0 < nq {
                lse[bh * nq + r0] = m_run[2 * mt] * scale + l0.ln();
            }
            if r1 < nq {
                lse[bh * nq + r1] = m_run[2 * mt + 1] * scale + l1.ln();
            }
        }
    }
}

/// A forward tile configuration: keys per K/V tile, planes per cube, 16-row query blocks per plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaConfig {
    /// Keys per K/V tile (32, 64 or 128).
    pub block_n: usize,
    /// Planes (warps) per cube (1, 2, 4 or 8).
    pub planes: usize,
    /// 16-row query blocks per plane (1 or 2): with 2, every K/V fragment loaded from shared memory feeds
    /// two tensor-core products.
    pub mtiles: usize,
}

impl MmaConfig {
    /// Query rows per cube.
    pub fn block_m(&self) -> usize {
        16 * self.planes * self.mtiles
    }

    /// Whether the kernel supports it (the Q tile is staged in the two K buffers: `block_m ≤ 2·block_n`).
    pub fn is_valid(&self) -> bool {
        matches!(self.block_n, 32 | 64 | 128)
            && matches!(self.planes, 1 | 2 | 4 | 8)
            && matches!(self.mtiles, 1 | 2)
            && self.block_m() <= 2 * self.block_n
    }
}

/// The forward's configuration for short query sequences (`Nq ≤` [`LONG_NQ`], e.g. PSA's 400 tokens: 64-row
/// cubes waste fewer padded rows). See [`set_config_override`].
pub const FORWARD_CONFIG: MmaConfig = MmaConfig { block_n: 64, planes: 4, mtiles: 1 };

/// The configuration for `Nq >` [`LONG_NQ`]: two 16-row blocks per plane (H200, B16 H8 N4096 D64 f16:
/// 227 TFLOP/s vs 206 with one; `docs/BENCHMARKS.md`, FA2 run 7).
pub const LONG_CONFIG: MmaConfig = MmaConfig { block_n: 64, planes: 4, mtiles: 2 };

/// Query length above which [`LONG_CONFIG`] is used.
pub const LONG_NQ: usize = 512;

/// The configurations the kernel tests run (the default first; both m-tile counts).
pub const TEST_CONFIGS: [MmaConfig; 4] = [
    FORWARD_CONFIG,
    LONG_CONFIG,
    MmaConfig { block_n: 32, planes: 2, mtiles: 2 },
    MmaConfig { block_n: 64, planes: 2, mtiles: 1 },
];

/// Benchmark override, packed `mtiles << 16 | block_n << 8 | planes`; 0 = the built-in choice.
static CONFIG_OVERRIDE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Forces the forward's configuration for later launches (`None`: back to the built-in choice,
/// [`FORWARD_CONFIG`] or [`LONG_CONFIG`] by query length). For tuning
/// benchmarks (`bench-attention --cmma-sweep`) and tests; results do not depend on it beyond rounding
/// order. Panics on a configuration the kernel does not support ([`MmaConfig::is_valid`]).
pub fn set_config_override(config: Option<MmaConfig>) {
    let packed = config.map_or(0, |c| {
        assert!(c.is_valid(), "mma forward configuration {c:?} not supported");
        c.mtiles << 16 | c.block_n << 8 | c.planes
    });
    CONFIG_OVERRIDE.store(packed, std::sync::atomic::Ordering::Relaxed);
}

/// The configuration the next launch with `nq` query rows uses.
pub fn forward_config(nq: usize) -> MmaConfig {
    match CONFIG_OVERRIDE.load(std::sync::atomic::Ordering::Relaxed) {
        0 if nq > LONG_NQ => LONG_CONFIG,
        0 => FORWARD_CONFIG,
        c => MmaConfig { block_n: (c >> 8) & 0xff, planes: c & 0xff, mtiles: c >> 16 },
    }
}

/// Shared memory the forward declares, in bytes (two K and two V tiles; Q is staged in the K tiles).
pub fn forward_shared_bytes(dk: usize, dv: usize, config: MmaConfig) -> usize {
    2 * (tile_bytes(config.block_n, dk) + tile_bytes(config.block_n, dv))
}

/// Launches [`flash_fwd_mma_kernel`] (check [`super::mma::mma_supported`] first) writing every element
/// of `o` and `lse`.
pub fn launch_forward_mma<R: CubeRuntime>(
    q: &CubeTensor<R>,
    k: &CubeTensor<R>,
    v: &CubeTensor<R>,
    o: &CubeTensor<R>,
    lse: &CubeTensor<R>,
    scale: f32,
) {
    crate::cube_util::assert_tight("launch_forward_mma", &[q, k, v, o, lse]);
    assert!(scale > 0.0 && scale.is_finite(), "launch_forward_mma: the softmax scale must be positive, got {scale}");
    let [bh, nq, dk] = q.meta.shape().dims::<3>();
    let [_, nk, _] = k.meta.shape().dims::<3>();
    let [_, _, dv] = v.meta.shape().dims::<3>();
    if bh * nq == 0 {
        return;
    }
    assert!(nk > 0, "launch_forward_mma: attention needs at least one key (k has Nk = 0)");
    let config = forward_config(nq);
    let client = q.client.clone();
    let cube_dim = CubeDim::new_2d(PLANE as u32, config.planes as u32);
    let cube_count = CubeCount::Static(nq.div_ceil(config.block_m()) as u32, bh as u32, 1);
    // SAFETY: Q reads are bounded by nq (zero-filled rows), K/V reads clamped to row nk − 1 (nk ≥ 1), writes
    // by `row < nq`; shared-memory offsets stay inside the tiles by construction (rows < tile rows, chunks
    // < D/8; the Q tile's block_m ≤ 2·block_n rows fit the two K buffers, `MmaConfig::is_valid`).
    unsafe {
        flash_fwd_mma_kernel::launch_unchecked::<R>(
            &client,
            cube_count,
            cube_dim,
            q.clone().into_tensor_arg(),
            k.clone().into_tensor_arg(),
            v.clone().into_tensor_arg(),
            o.clone().into_tensor_arg(),
            lse.clone().into_tensor_arg(),
            nq as u32,
            nk as u32,
            scale,
            dk,
            dv,
            config.planes,
            config.mtiles,
            config.block_n,
            q.dtype.into(),
        )
    }
}
