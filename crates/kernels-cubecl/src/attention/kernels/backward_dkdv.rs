//! Flash Attention 2 backward, step 2: `dK` and `dV`, parallel over key blocks.
//!
//! # Math
//!
//! With `S = s·Q Kᵀ`, `P_ij = exp(S_ij − LSE_i)` (recomputed from the forward's LSE, never stored),
//! `dP = dO Vᵀ` and `Δ_i = dO_i · O_i` (see [`super::backward_delta`]):
//!
//! ```text
//! dS_ij = P_ij (dP_ij − Δ_i)
//! dV_j  = Σ_i P_ij dO_i                dK_j = s · Σ_i dS_ij Q_i
//! ```
//!
//! # Work split
//!
//! Grid `(⌈Nk/BN⌉, BH)`, `BN` units per cube; unit `t` owns key row `j = CUBE_POS_X·BN + t`: its K and V
//! rows and its dK/dV accumulators live in unit-local arrays (f32). The cube walks over all query blocks
//! of `BM` rows; each block's Q and dO rows plus their LSE and Δ are staged through shared memory
//! (coalesced loads, broadcast reads: all units read the same query row at a time). `N×N` is never
//! materialised: `P_ij`/`dS_ij` are scalars of the inner loop. Query tails are skipped by bounding the
//! loop by the tile's valid length; out-of-range key units compute on zeros and never write.
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::{shared_budget, tile_rows, ROWS_PER_CUBE};

/// FA2 dK/dV. `q: [BH, nq, dk]`, `k: [BH, nk, dk]`, `v: [BH, nk, dv]`, `d_o: [BH, nq, dv]`,
/// `lse`, `delta`: f32 `[BH, nq]` → `dk_out: [BH, nk, dk]`, `dv_out: [BH, nk, dv]`. All contiguous.
/// `block_n` must equal the cube's unit count.
#[cube(launch_unchecked)]
pub fn flash_bwd_dkdv_kernel<F: Float>(
    q: &Tensor<F>,
    k: &Tensor<F>,
    v: &Tensor<F>,
    d_o: &Tensor<F>,
    lse: &Tensor<f32>,
    delta: &Tensor<f32>,
    dk_out: &mut Tensor<F>,
    dv_out: &mut Tensor<F>,
    nq: u32,
    nk: u32,
    scale: f32,
    #[comptime] dk: usize,
    #[comptime] dv: usize,
    #[comptime] block_m: usize,
    #[comptime] block_n: usize,
    #[define(F)] _dtype: StorageType,
) {
    let tid = UNIT_POS_X as usize;
    let bh = CUBE_POS_Y as usize;
    let nq = nq as usize;
    let nk = nk as usize;
    let col = CUBE_POS_X as usize * block_n + tid;
    let col_valid = col < nk;

    // The unit's K row (pre-scaled by `scale`, so `q·k_row = S_ij`) and V row.
    let mut k_row = Array::<f32>::new(dk);
    let mut v_row = Array::<f32>::new(dv);
    let mut dk_acc = Array::<f32>::new(dk);
    let mut dv_acc = Array::<f32>::new(dv);
    let k_base = (bh * nk + col) * dk;
    let v_base = (bh * nk + col) * dv;
    for d in 0..dk {
        let mut x = f32::new(0.0);
        if col_valid {
            x = f32::cast_from(k[k_base + d]) * scale;
        }
        k_row[d] = x;
        dk_acc[d] = f32::new(0.0);
    }
    for d in 0..dv {
        let mut x = f32::new(0.0);
        if col_valid {
            x = f32::cast_from(v[v_base + d]);
        }
        v_row[d] = x;
        dv_acc[d] = f32::new(0.0);
    }

    let mut q_tile = SharedMemory::<f32>::new(block_m * dk);
    let mut do_tile = SharedMemory::<f32>::new(block_m * dv);
    let mut lse_tile = SharedMemory::<f32>::new(block_m);
    let mut delta_tile = SharedMemory::<f32>::new(block_m);

    let num_tiles = nq.div_ceil(block_m);
    for qt in 0..num_tiles {
        let i0 = qt * block_m;
        let mut iw = nq - i0;
        if iw > block_m {
            iw = block_m;
        }

        // ---- stage Q, dO, LSE, Δ of this query block (zero-filled tail) ----
        let q_base = (bh * nq + i0) * dk;
        let mut idx = tid;
        while idx < block_m * dk {
            let mut x = f32::new(0.0);
            if idx < iw * dk {
                x = f32::cast_from(q[q_base + idx]);
            }
            q_tile[idx] = x;
            idx += block_n;
        }
        let do_base = (bh * nq + i0) * dv;
        let mut idx = tid;
        while idx < block_m * dv {
            let mut x = f32::new(0.0);
            if idx < iw * dv {
                x = f32::cast_from(d_o[do_base + idx]);
            }
            do_tile[idx] = x;
            idx += block_n;
        }
        let mut idx = tid;
        while idx < block_m {
            let mut a = f32::new(0.0);
            let mut b = f32::new(0.0);
            if idx < iw {
                a = lse[bh * nq + i0 + idx];
                b = delta[bh * nq + i0 + idx];
            }
            lse_tile[idx] = a;
            delta_tile[idx] = b;
            idx += block_n;
        }
        sync_cube();

        // ---- accumulate over the block's valid query rows ----
        for i in 0..iw {
            let mut s = f32::new(0.0);
            for d in 0..dk {
                s += q_tile[i * dk + d] * k_row[d];
            }
            let p = (s - lse_tile[i]).exp();
            let mut dp = f32::new(0.0);
            for d in 0..dv {
                let g = do_tile[i * dv + d];
                dp += g * v_row[d];
                dv_acc[d] += p * g;
            }
            let ds = p * (dp - delta_tile[i]);
            for d in 0..dk {
                dk_acc[d] += ds * q_tile[i * dk + d];
            }
        }
        sync_cube();
    }

    if col_valid {
        for d in 0..dk {
            dk_out[k_base + d] = F::cast_from(dk_acc[d] * scale);
        }
        for d in 0..dv {
            dv_out[v_base + d] = F::cast_from(dv_acc[d]);
        }
    }
}

/// Tile sizes of the dK/dV kernel: `(BM, BN)` (BN = units per cube).
pub fn dkdv_tiles<R: CubeRuntime>(q: &CubeTensor<R>, dk: usize, dv: usize) -> (usize, usize) {
    let budget = shared_budget(q);
    (tile_rows(dk + dv + 2, budget), ROWS_PER_CUBE)
}

/// Launches [`flash_bwd_dkdv_kernel`]. Inputs contiguous; `dk_out`/`dv_out` contiguous with the shapes of
/// `k`/`v` and the dtype of `q` (every element written).
#[allow(clippy::too_many_arguments)]
pub fn launch_dkdv<R: CubeRuntime>(
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
    crate::cube_util::assert_tight("launch_dkdv", &[q, k, v, d_o, lse, delta, dk_out, dv_out]);
    let [bh, nq, dk] = q.meta.shape().dims::<3>();
    let [_, nk, _] = k.meta.shape().dims::<3>();
    let [_, _, dv] = v.meta.shape().dims::<3>();
    let (block_m, block_n) = dkdv_tiles(q, dk, dv);

    let client = q.client.clone();
    let cube_dim = CubeDim::new_1d(block_n as u32);
    let cube_count = CubeCount::Static(nk.div_ceil(block_n) as u32, bh as u32, 1);

    // SAFETY: index arithmetic is bounded by the shapes passed as scalars (the real, contiguous shapes).
    unsafe {
        flash_bwd_dkdv_kernel::launch_unchecked::<R>(
            &client,
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
            block_m,
            block_n,
            q.dtype.into(),
        )
    }
}
