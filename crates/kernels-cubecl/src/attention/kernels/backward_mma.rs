//! Flash Attention 2 backward with register-level tensor cores (`mma.sync.m16n8k16`; building blocks
//! and register layouts in [`super::mma`]). Used where [`super::mma::mma_supported`] holds; the scalar
//! kernels ([`super::backward_dkdv`], [`super::backward_dq`]) serve everything else.
//!
//! # Math
//!
//! With `P_ij = exp(s·Q_i·K_j − LSE_i)` recomputed from the forward's LSE, `Δ_i = dO_i·O_i`
//! ([`super::backward_delta`]):
//!
//! ```text
//! dPᵀ = V dOᵀ      dSᵀ = Pᵀ ∘ (dPᵀ − Δ)      dV = Pᵀ dO      dK = s · dSᵀ Q      (dK/dV kernel)
//! dP  = dO Vᵀ      dS  = P ∘ (dP − Δ)                          dQ = s · dS K       (dQ kernel)
//! ```
//!
//! `P` and `dS` are rounded to the storage dtype before they enter a product (as FA2 does).
//!
//! # Work split
//!
//! * dK/dV: grid `(⌈Nk/BN⌉, BH)`, `BN = 16·P` keys per cube, plane `p` owns keys `16p .. 16p+16` and
//!   keeps their dK and dV accumulators in registers. The cube walks over query tiles of `BM` rows
//!   (Q, dO, LSE, Δ staged in shared memory). Per tile and plane: `Sᵀ = K Qᵀ` (16 × BM accumulator),
//!   `Pᵀ` in place, `dV += Pᵀ dO` (the Pᵀ accumulator is the A fragment), `dPᵀ = V dOᵀ`, `dSᵀ` in place,
//!   `dK += dSᵀ Q`. Rows of keys past `Nk` compute on zero K/V rows and are never written; query rows past
//!   `Nq` get LSE = +10³⁰ (so P = 0) and zero dO, Δ.
//! * dQ: grid `(⌈Nq/BM⌉, BH)`, `BM = 16·P` queries per cube, plane `p` owns 16 query rows with their Q
//!   and dO rows as A fragments and the dQ accumulator in registers; the cube walks over key tiles of `BN`
//!   keys (K, V in shared memory). Keys past `Nk` get P = 0.
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::mma::{acc_as_a, ldsm_x4, load_tile, mma_into, plane_a_frags, store_acc_rows, take4, zero_acc};
use super::mma::{A2, PLANE, R2, V8};
use cubecl::ir::FastMath;

/// LSE of query rows past `Nq` in the dK/dV kernel: `exp(S − BIG) = 0`.
const BIG: f32 = 1.0e30;

/// FA2 dK/dV. `q: [BH, nq, dk]`, `k: [BH, nk, dk]`, `v: [BH, nk, dv]`, `d_o: [BH, nq, dv]` (f16/bf16),
/// `lse`, `delta`: f32 `[BH, nq]` → `dk_out: [BH, nk, dk]`, `dv_out: [BH, nk, dv]`. All contiguous.
#[cube(launch_unchecked, fast_math = FastMath::ReducedPrecision | FastMath::NotNaN | FastMath::NotInf)]
pub fn flash_bwd_dkdv_mma_kernel<F: Float>(
    q: &Tensor<V8<F>>,
    k: &Tensor<V8<F>>,
    v: &Tensor<V8<F>>,
    d_o: &Tensor<V8<F>>,
    lse: &Tensor<f32>,
    delta: &Tensor<f32>,
    dk_out: &mut Tensor<R2<F>>,
    dv_out: &mut Tensor<R2<F>>,
    nq: u32,
    nk: u32,
    scale: f32,
    #[comptime] dk: usize,
    #[comptime] dv: usize,
    #[comptime] planes: usize,
    #[comptime] block_m: usize,
    #[define(F)] _dtype: StorageType,
) {
    let block_n = comptime!(planes * 16);
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
    let col0 = CUBE_POS_X as usize * block_n;

    let mut k_s = SharedMemory::<V8<F>>::new(block_n * ks);
    let mut v_s = SharedMemory::<V8<F>>::new(block_n * vs);
    let mut q_s = SharedMemory::<V8<F>>::new(block_m * ks);
    let mut do_s = SharedMemory::<V8<F>>::new(block_m * vs);
    let mut lse_s = SharedMemory::<f32>::new(block_m);
    let mut dl_s = SharedMemory::<f32>::new(block_m);

    load_tile::<F>(k, &mut k_s, (bh * nk + col0) * (dk / 8usize), nk - col0, block_n, dk / 8usize, units);
    load_tile::<F>(v, &mut v_s, (bh * nk + col0) * (dv / 8usize), nk - col0, block_n, dv / 8usize, units);

    let mut dk_acc = zero_acc(dk / 4usize);
    let mut dv_acc = zero_acc(dv / 4usize);

    let num_tiles = nq.div_ceil(block_m);
    for it in 0..num_tiles {
        let i0 = it * block_m;
        load_tile::<F>(q, &mut q_s, (bh * nq + i0) * (dk / 8usize), nq - i0, block_m, dk / 8usize, units);
        load_tile::<F>(d_o, &mut do_s, (bh * nq + i0) * (dv / 8usize), nq - i0, block_m, dv / 8usize, units);
        let u = UNIT_POS as usize;
        if u < block_m {
            let mut l = f32::new(BIG);
            let mut d = f32::new(0.0);
            if i0 + u < nq {
                l = lse[bh * nq + i0 + u];
                d = delta[bh * nq + i0 + u];
            }
            lse_s[u] = l;
            dl_s[u] = d;
        }
        sync_cube();

        // Sᵀ = K Qᵀ: 16 keys × block_m queries.
        let mut s = zero_acc(block_m / 4usize);
        #[unroll]
        for kf in 0..dk / 16 {
            let a = ldsm_x4::<F>(&k_s, plane * 16usize, 2usize * kf, ks, true, false);
            #[unroll]
            for np in 0..block_m / 16 {
                let b = ldsm_x4::<F>(&q_s, np * 16usize, 2usize * kf, ks, false, false);
                mma_into::<F>(&a, &b, 0usize, &mut s, 4usize * np);
                mma_into::<F>(&a, &b, 2usize, &mut s, 4usize * np + 2usize);
            }
        }
        // Pᵀ = exp(s·Sᵀ − LSE[query]) in place.
        #[unroll]
        for nt in 0..block_m / 8 {
            let c = nt * 8 + 2 * t;
            let l0 = lse_s[c];
            let l1 = lse_s[c + 1];
            #[unroll]
            for h in 0..2usize {
                let reg = s[2 * nt + h];
                let mut w = A2::empty();
                w[0usize] = (reg[0usize] * scale - l0).exp();
                w[1usize] = (reg[1usize] * scale - l1).exp();
                s[2 * nt + h] = w;
            }
        }
        // dV += Pᵀ dO.
        #[unroll]
        for kc in 0..block_m / 16 {
            let pa = acc_as_a::<F>(&s, kc);
            #[unroll]
            for dp in 0..dv / 16 {
                let b = ldsm_x4::<F>(&do_s, kc * 16usize, 2usize * dp, vs, true, true);
                mma_into::<F>(&pa, &b, 0usize, &mut dv_acc, 4usize * dp);
                mma_into::<F>(&pa, &b, 2usize, &mut dv_acc, 4usize * dp + 2usize);
            }
        }
        // dPᵀ = V dOᵀ.
        let mut dpt = zero_acc(block_m / 4usize);
        #[unroll]
        for kf in 0..dv / 16 {
            let a = ldsm_x4::<F>(&v_s, plane * 16usize, 2usize * kf, vs, true, false);
            #[unroll]
            for np in 0..block_m / 16 {
                let b = ldsm_x4::<F>(&do_s, np * 16usize, 2usize * kf, vs, false, false);
                mma_into::<F>(&a, &b, 0usize, &mut dpt, 4usize * np);
                mma_into::<F>(&a, &b, 2usize, &mut dpt, 4usize * np + 2usize);
            }
        }
        // dSᵀ = Pᵀ ∘ (dPᵀ − Δ[query]) in place of dPᵀ.
        #[unroll]
        for nt in 0..block_m / 8 {
            let c = nt * 8 + 2 * t;
            let d0 = dl_s[c];
            let d1 = dl_s[c + 1];
            #[unroll]
            for h in 0..2usize {
                let p = s[2 * nt + h];
                let dp = dpt[2 * nt + h];
                let mut w = A2::empty();
                w[0usize] = p[0usize] * (dp[0usize] - d0);
                w[1usize] = p[1usize] * (dp[1usize] - d1);
                dpt[2 * nt + h] = w;
            }
        }
        // dK += dSᵀ Q (scaled at the end).
        #[unroll]
        for kc in 0..block_m / 16 {
            let da = acc_as_a::<F>(&dpt, kc);
            #[unroll]
            for dp in 0..dk / 16 {
                let b = ldsm_x4::<F>(&q_s, kc * 16usize, 2usize * dp, ks, true, true);
                mma_into::<F>(&da, &b, 0usize, &mut dk_acc, 4usize * dp);
                mma_into::<F>(&da, &b, 2usize, &mut dk_acc, 4usize * dp + 2usize);
            }
        }
        sync_cube();
    }

    let r0 = col0 + plane * 16 + g;
    let r1 = r0 + 8;
    let sc = A2::new(scale);
    store_acc_rows::<F>(dk_out, &dk_acc, bh, nk, r0, r1, t, sc, sc, true, dk);
    store_acc_rows::<F>(dv_out, &dv_acc, bh, nk, r0, r1, t, sc, sc, false, dv);
}

/// FA2 dQ. Inputs as [`flash_bwd_dkdv_mma_kernel`] → `dq_out: [BH, nq, dk]`.
#[cube(launch_unchecked, fast_math = FastMath::ReducedPrecision | FastMath::NotNaN | FastMath::NotInf)]
pub fn flash_bwd_dq_mma_kernel<F: Float>(
    q: &Tensor<V8<F>>,
    k: &Tensor<V8<F>>,
    v: &Tensor<V8<F>>,
    d_o: &Tensor<V8<F>>,
    lse: &Tensor<f32>,
    delta: &Tensor<f32>,
    dq_out: &mut Tensor<R2<F>>,
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
    let mut do_s = SharedMemory::<V8<F>>::new(block_m * vs);
    let mut k_s = SharedMemory::<V8<F>>::new(block_n * ks);
    let mut v_s = SharedMemory::<V8<F>>::new(block_n * vs);

    load_tile::<F>(q, &mut q_s, (bh * nq + row0) * (dk / 8usize), nq - row0, block_m, dk / 8usize, units);
    load_tile::<F>(d_o, &mut do_s, (bh * nq + row0) * (dv / 8usize), nq - row0, block_m, dv / 8usize, units);
    sync_cube();
    let qa = plane_a_frags::<F>(&q_s, plane, dk);
    let oa = plane_a_frags::<F>(&do_s, plane, dv);
    let r0 = row0 + plane * 16 + g;
    let r1 = r0 + 8;
    let mut lse0 = f32::new(BIG);
    let mut lse1 = f32::new(BIG);
    let mut dl0 = f32::new(0.0);
    let mut dl1 = f32::new(0.0);
    if r0 < nq {
        lse0 = lse[bh * nq + r0];
        dl0 = delta[bh * nq + r0];
    }
    if r1 < nq {
        lse1 = lse[bh * nq + r1];
        dl1 = delta[bh * nq + r1];
    }

    let mut dq_acc = zero_acc(dk / 4usize);
    let num_tiles = nk.div_ceil(block_n);
    for kt in 0..num_tiles {
        let j0 = kt * block_n;
        load_tile::<F>(k, &mut k_s, (bh * nk + j0) * (dk / 8usize), nk - j0, block_n, dk / 8usize, units);
        load_tile::<F>(v, &mut v_s, (bh * nk + j0) * (dv / 8usize), nk - j0, block_n, dv / 8usize, units);
        sync_cube();

        // S = Q Kᵀ, then P = exp(s·S − LSE) (0 past nk).
        let mut s = zero_acc(block_n / 4usize);
        #[unroll]
        for kf in 0..dk / 16 {
            let a = take4::<F>(&qa, 4usize * kf);
            #[unroll]
            for np in 0..block_n / 16 {
                let b = ldsm_x4::<F>(&k_s, np * 16usize, 2usize * kf, ks, false, false);
                mma_into::<F>(&a, &b, 0usize, &mut s, 4usize * np);
                mma_into::<F>(&a, &b, 2usize, &mut s, 4usize * np + 2usize);
            }
        }
        #[unroll]
        for nt in 0..block_n / 8 {
            #[unroll]
            for h in 0..2usize {
                let reg = s[2 * nt + h];
                let mut lrow = lse0;
                if comptime!(h == 1) {
                    lrow = lse1;
                }
                let mut w = A2::empty();
                #[unroll]
                for e in 0..2usize {
                    let mut p = (reg[e] * scale - lrow).exp();
                    if j0 + nt * 8 + 2 * t + e >= nk {
                        p = f32::new(0.0);
                    }
                    w[e] = p;
                }
                s[2 * nt + h] = w;
            }
        }
        // dP = dO Vᵀ, then dS = P ∘ (dP − Δ) in place.
        let mut dp = zero_acc(block_n / 4usize);
        #[unroll]
        for kf in 0..dv / 16 {
            let a = take4::<F>(&oa, 4usize * kf);
            #[unroll]
            for np in 0..block_n / 16 {
                let b = ldsm_x4::<F>(&v_s, np * 16usize, 2usize * kf, vs, false, false);
                mma_into::<F>(&a, &b, 0usize, &mut dp, 4usize * np);
                mma_into::<F>(&a, &b, 2usize, &mut dp, 4usize * np + 2usize);
            }
        }
        #[unroll]
        for nt in 0..block_n / 8 {
            #[unroll]
            for h in 0..2usize {
                let p = s[2 * nt + h];
                let x = dp[2 * nt + h];
                let mut drow = dl0;
                if comptime!(h == 1) {
                    drow = dl1;
                }
                let mut w = A2::empty();
                w[0usize] = p[0usize] * (x[0usize] - drow);
                w[1usize] = p[1usize] * (x[1usize] - drow);
                dp[2 * nt + h] = w;
            }
        }
        // dQ += dS K (scaled at the end).
        #[unroll]
        for kc in 0..block_n / 16 {
            let da = acc_as_a::<F>(&dp, kc);
            #[unroll]
            for dd in 0..dk / 16 {
                let b = ldsm_x4::<F>(&k_s, kc * 16usize, 2usize * dd, ks, true, true);
                mma_into::<F>(&da, &b, 0usize, &mut dq_acc, 4usize * dd);
                mma_into::<F>(&da, &b, 2usize, &mut dq_acc, 4usize * dd + 2usize);
            }
        }
        sync_cube();
    }

    let sc = A2::new(scale);
    store_acc_rows::<F>(dq_out, &dq_acc, bh, nq, r0, r1, t, sc, sc, true, dk);
}

/// `(planes, query rows per tile)` of the dK/dV kernel and `(planes, keys per tile)` of the dQ kernel for
/// head dims `dk`, `dv` (smaller tiles at 128 keep the accumulators in registers).
pub fn backward_config(dk: usize, dv: usize) -> (usize, usize) {
    if dk.max(dv) > 64 {
        (4, 32)
    } else {
        (4, 64)
    }
}

/// Launches [`flash_bwd_dkdv_mma_kernel`] (check [`super::mma::mma_supported`] first).
#[allow(clippy::too_many_arguments)]
pub fn launch_dkdv_mma<R: CubeRuntime>(
    q: &CubeTensor<R>,
    k: &CubeTensor<R>,
    v: &CubeTensor<R>,
    d_o: &CubeTensor<R>,
    lse: &CubeTensor<R>,
    delta: &CubeTensor<R>,
    dk_out: &CubeTensor<R>,
    dv_out: &CubeTensor<R>,
    scale: f32,
) {
    crate::cube_util::assert_tight("launch_dkdv_mma", &[q, k, v, d_o, lse, delta, dk_out, dv_out]);
    let [bh, nq, dk] = q.meta.shape().dims::<3>();
    let [_, nk, _] = k.meta.shape().dims::<3>();
    let [_, _, dv] = v.meta.shape().dims::<3>();
    let (planes, block_m) = backward_config(dk, dv);
    let cube_dim = CubeDim::new_2d(PLANE as u32, planes as u32);
    let cube_count = CubeCount::Static(nk.div_ceil(planes * 16) as u32, bh as u32, 1);
    // SAFETY: global reads bounded by nq / nk (zero-filled tiles), writes by `key < nk`; shared offsets
    // inside the tiles by construction.
    unsafe {
        flash_bwd_dkdv_mma_kernel::launch_unchecked::<R>(
            &q.client,
            cube_count,
            cube_dim,
            q.clone().into_tensor_arg(),
            k.clone().into_tensor_arg(),
            v.clone().into_tensor_arg(),
            d_o.clone().into_tensor_arg(),
            lse.clone().into_tensor_arg(),
            delta.clone().into_tensor_arg(),
            dk_out.clone().into_tensor_arg(),
            dv_out.clone().into_tensor_arg(),
            nq as u32,
            nk as u32,
            scale,
            dk,
            dv,
            planes,
            block_m,
            q.dtype.into(),
        )
    }
}

/// Launches [`flash_bwd_dq_mma_kernel`] (check [`super::mma::mma_supported`] first).
#[allow(clippy::too_many_arguments)]
pub fn launch_dq_mma<R: CubeRuntime>(
    q: &CubeTensor<R>,
    k: &CubeTensor<R>,
    v: &CubeTensor<R>,
    d_o: &CubeTensor<R>,
    lse: &CubeTensor<R>,
    delta: &CubeTensor<R>,
    dq_out: &CubeTensor<R>,
    scale: f32,
) {
    crate::cube_util::assert_tight("launch_dq_mma", &[q, k, v, d_o, lse, delta, dq_out]);
    let [bh, nq, dk] = q.meta.shape().dims::<3>();
    let [_, nk, _] = k.meta.shape().dims::<3>();
    let [_, _, dv] = v.meta.shape().dims::<3>();
    let (planes, block_n) = backward_config(dk, dv);
    let cube_dim = CubeDim::new_2d(PLANE as u32, planes as u32);
    let cube_count = CubeCount::Static(nq.div_ceil(planes * 16) as u32, bh as u32, 1);
    // SAFETY: as in `launch_dkdv_mma`.
    unsafe {
        flash_bwd_dq_mma_kernel::launch_unchecked::<R>(
            &q.client,
            cube_count,
            cube_dim,
            q.clone().into_tensor_arg(),
            k.clone().into_tensor_arg(),
            v.clone().into_tensor_arg(),
            d_o.clone().into_tensor_arg(),
            lse.clone().into_tensor_arg(),
            delta.clone().into_tensor_arg(),
            dq_out.clone().into_tensor_arg(),
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
