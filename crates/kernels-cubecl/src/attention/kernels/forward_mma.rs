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
//! Grid `(⌈Nq/BM⌉, BH)`; a cube is `P` planes (`BM = 16·P` query rows), plane `p` owns rows
//! `16p .. 16p+16`. Each plane keeps its Q rows as A fragments, its `S` tile and its output accumulator
//! in registers for the whole key loop: lane `(g, t)` holds rows `g` and `g+8`, so the row max and sum
//! are a quad reduction (two shuffles), `α`-rescaling of `O` happens in registers, and the `S`
//! accumulator *is* the A fragment of `P·V`. Per key tile (`BN` keys, comptime) the cube stages K and V
//! in shared memory (rows past `Nk` repeat row `Nk − 1`, masked in `S`; two buffers: the next tile's
//! global loads are issued into registers before the current tile's products and stored after them, one
//! cube sync per tile);
//! `ldmatrix` feeds the B fragments (V transposed on the fly).
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
/// 16; cube = `(32, planes)` units; `block_n` a multiple of 16.
#[cube(launch_unchecked, fast_math = FastMath::ReducedPrecision | FastMath::NotNaN | FastMath::NotInf)]
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
    #[comptime] block_n: usize,
    #[define(F)] _dtype: StorageType,
) {
    let block_m = comptime!(planes * 16);
    let units = comptime!(planes * PLANE);
    let ks = comptime!(dk / 8 + 1);
    let vs = comptime!(dv / 8 + 1);
    let lane = UNIT_POS_X as usize;
    let plane = UNIT_POS_Y as usize;
    let t = lane % 4;
    let g = lane / 4;
    let bh = CUBE_POS_Y as usize;
    let nq = nq as usize;
    let nk = nk as usize;
    let row0 = CUBE_POS_X as usize * block_m;

    let mut q_s = SharedMemory::<V8<F>>::new(block_m * ks);
    // Two K and two V tiles: tile `kt` lives at rows `(kt % 2)·block_n ..`; the next one is fetched into
    // registers during the current one's products and stored into the other half (one sync per tile).
    let mut k_s = SharedMemory::<V8<F>>::new(2 * block_n * ks);
    let mut v_s = SharedMemory::<V8<F>>::new(2 * block_n * vs);

    load_tile::<F>(q, &mut q_s, (bh * nq + row0) * (dk / 8usize), nq - row0, block_m, dk / 8usize, units);
    sync_cube();
    let qa = plane_a_frags::<F>(&q_s, plane, dk);

    let mut o_acc = zero_acc(dv / 4usize);
    // Running max and lane-partial sum of rows g (…0) and g+8 (…1).
    let mut m0 = f32::new(NEG_BIG);
    let mut m1 = f32::new(NEG_BIG);
    let mut l0 = f32::new(0.0);
    let mut l1 = f32::new(0.0);

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

        // S = Q Kᵀ (16 rows × block_n keys per plane).
        let mut s = zero_acc(block_n / 4usize);
        #[unroll]
        for kf in 0..dk / 16 {
            let a = take4::<F>(&qa, 4usize * kf);
            #[unroll]
            for np in 0..block_n / 16 {
                let b = ldsm_x4::<F>(&k_s, cur + np * 16usize, 2usize * kf, ks, false, false);
                mma_into::<F>(&a, &b, 0usize, &mut s, 4usize * np);
                mma_into::<F>(&a, &b, 2usize, &mut s, 4usize * np + 2usize);
            }
        }

        // Mask keys past nk (last tile only), tile max per row of the raw scores (scale > 0).
        if j0 + block_n > nk {
            #[unroll]
            for nt in 0..block_n / 8 {
                #[unroll]
                for h in 0..2usize {
                    let mut w = s[2 * nt + h];
                    #[unroll]
                    for e in 0..2usize {
                        if j0 + nt * 8 + 2 * t + e >= nk {
                            w[e] = f32::new(NEG_BIG);
                        }
                    }
                    s[2 * nt + h] = w;
                }
            }
        }
        let mut x0 = f32::new(NEG_BIG);
        let mut x1 = f32::new(NEG_BIG);
        #[unroll]
        for nt in 0..block_n / 8 {
            let w0 = s[2 * nt];
            let w1 = s[2 * nt + 1];
            x0 = max(x0, max(w0[0usize], w0[1usize]));
            x1 = max(x1, max(w1[0usize], w1[1usize]));
        }
        let mn0 = max(m0, quad_max(x0));
        let mn1 = max(m1, quad_max(x1));
        let alpha0 = ((m0 - mn0) * scale).exp();
        let alpha1 = ((m1 - mn1) * scale).exp();
        m0 = mn0;
        m1 = mn1;
        let ms0 = mn0 * scale;
        let ms1 = mn1 * scale;

        // P = exp(s·S − s·m) in place (one fused multiply-add before the exp); lane-partial row sums.
        let mut p0 = f32::new(0.0);
        let mut p1 = f32::new(0.0);
        #[unroll]
        for nt in 0..block_n / 8 {
            #[unroll]
            for h in 0..2usize {
                let reg = s[2 * nt + h];
                let mut w = A2::empty();
                let mut mrow = ms0;
                if comptime!(h == 1) {
                    mrow = ms1;
                }
                #[unroll]
                for e in 0..2usize {
                    w[e] = (reg[e] * scale - mrow).exp();
                }
                s[2 * nt + h] = w;
                if comptime!(h == 0) {
                    p0 += w[0usize] + w[1usize];
                } else {
                    p1 += w[0usize] + w[1usize];
                }
            }
        }
        l0 = l0 * alpha0 + p0;
        l1 = l1 * alpha1 + p1;
        #[unroll]
        for nd in 0..dv / 8 {
            o_acc[2 * nd] = o_acc[2 * nd] * A2::new(alpha0);
            o_acc[2 * nd + 1] = o_acc[2 * nd + 1] * A2::new(alpha1);
        }

        // O += P V: the S accumulator is P's A fragment; V's B fragments via ldmatrix.trans.
        #[unroll]
        for kc in 0..block_n / 16 {
            let pa = acc_as_a::<F>(&s, kc);
            #[unroll]
            for dp in 0..dv / 16 {
                let b = ldsm_x4::<F>(&v_s, cur + kc * 16usize, 2usize * dp, vs, true, true);
                mma_into::<F>(&pa, &b, 0usize, &mut o_acc, 4usize * dp);
                mma_into::<F>(&pa, &b, 2usize, &mut o_acc, 4usize * dp + 2usize);
            }
        }
        // The other half was last read in iteration kt − 1, before its closing sync.
        store_tile::<F>(&kr, &mut k_s, next, block_n, dk / 8usize, units);
        store_tile::<F>(&vr, &mut v_s, next, block_n, dv / 8usize, units);
        sync_cube();
    }

    // O / l, LSE = m + ln l (l summed over the quad).
    let l0 = quad_sum(l0);
    let l1 = quad_sum(l1);
    let inv0 = A2::new(f32::new(1.0) / l0);
    let inv1 = A2::new(f32::new(1.0) / l1);
    let r0 = row0 + plane * 16 + g;
    let r1 = r0 + 8;
    store_acc_rows::<F>(o, &o_acc, bh, nq, r0, r1, t, inv0, inv1, true, dv);
    if t == 0 {
        if r0 < nq {
            lse[bh * nq + r0] = m0 * scale + l0.ln();
        }
        if r1 < nq {
            lse[bh * nq + r1] = m1 * scale + l1.ln();
        }
    }
}

/// Keys per tile and planes per cube of the forward (default; see [`set_config_override`]).
pub const FORWARD_CONFIG: (usize, usize) = (64, 4);

/// Benchmark override of `(block_n, planes)`, packed `block_n << 8 | planes`; 0 = [`FORWARD_CONFIG`].
static CONFIG_OVERRIDE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Forces the forward's `(block_n, planes)` (`block_n` 32, 64 or 128; `planes` 1, 2, 4 or 8) for later
/// launches (`None`: back to [`FORWARD_CONFIG`]). For tuning benchmarks (`bench-attention --cmma-sweep`);
/// results do not depend on it beyond rounding order.
pub fn set_config_override(config: Option<(usize, usize)>) {
    let packed = config.map_or(0, |(bn, p)| {
        assert!(matches!(bn, 32 | 64 | 128) && matches!(p, 1 | 2 | 4 | 8), "mma config ({bn}, {p}) not supported");
        bn << 8 | p
    });
    CONFIG_OVERRIDE.store(packed, std::sync::atomic::Ordering::Relaxed);
}

/// The `(block_n, planes)` the next launch uses.
pub fn forward_config() -> (usize, usize) {
    match CONFIG_OVERRIDE.load(std::sync::atomic::Ordering::Relaxed) {
        0 => FORWARD_CONFIG,
        c => (c >> 8, c & 0xff),
    }
}

/// Shared memory the forward declares, in bytes.
pub fn forward_shared_bytes(dk: usize, dv: usize, planes: usize, block_n: usize) -> usize {
    tile_bytes(planes * 16, dk) + 2 * (tile_bytes(block_n, dk) + tile_bytes(block_n, dv))
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
    super::assert_tight("launch_forward_mma", &[q, k, v, o, lse]);
    assert!(scale > 0.0 && scale.is_finite(), "launch_forward_mma: the softmax scale must be positive, got {scale}");
    let [bh, nq, dk] = q.meta.shape().dims::<3>();
    let [_, nk, _] = k.meta.shape().dims::<3>();
    let [_, _, dv] = v.meta.shape().dims::<3>();
    let (block_n, planes) = forward_config();
    let client = q.client.clone();
    let cube_dim = CubeDim::new_2d(PLANE as u32, planes as u32);
    let cube_count = CubeCount::Static(nq.div_ceil(planes * 16) as u32, bh as u32, 1);
    // SAFETY: global reads are bounded by nq / nk (zero-filled tiles), writes by `row < nq`; shared-memory
    // offsets stay inside the tiles by construction (rows < tile rows, chunks < D/8).
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
            planes,
            block_n,
            q.dtype.into(),
        )
    }
}
