//! Flash Attention 2 backward, step 3: `dQ`, parallel over query blocks.
//!
//! # Math
//!
//! With `S = s·Q Kᵀ`, `P_ij = exp(S_ij − LSE_i)`, `dP_ij = dO_i · V_j`, `Δ_i = dO_i · O_i`:
//!
//! ```text
//! dS_ij = P_ij (dP_ij − Δ_i)            dQ_i = s · Σ_j dS_ij K_j
//! ```
//!
//! (FA2 computes dQ in its own pass so that no atomics are needed: the dK/dV pass owns key rows, this
//! pass owns query rows.)
//!
//! # Work split
//!
//! Grid `(⌈Nq/BM⌉, BH)`, `BM` units per cube; unit `t` owns query row `i = CUBE_POS_X·BM + t`: its
//! (pre-scaled) Q row, its dO row, its LSE/Δ and its dQ accumulator are unit-local (f32). The cube walks
//! over all key blocks of `BN` rows, staging the K and V tiles through shared memory (coalesced loads,
//! broadcast reads). Key tails are skipped by bounding the loop by the tile's valid length;
//! out-of-range query units compute on zeros and never write.
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::{shared_budget, tile_rows, ROWS_PER_CUBE};

/// FA2 dQ. Shapes as in [`super::backward_dkdv::flash_bwd_dkdv_kernel`]; writes `dq_out: [BH, nq, dk]`.
/// `block_m` must equal the cube's unit count.
#[cube(launch_unchecked)]
pub fn flash_bwd_dq_kernel<F: Float>(
    q: &Tensor<F>,
    k: &Tensor<F>,
    v: &Tensor<F>,
    d_o: &Tensor<F>,
    lse: &Tensor<f32>,
    delta: &Tensor<f32>,
    dq_out: &mut Tensor<F>,
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
    let row = CUBE_POS_X as usize * block_m + tid;
    let row_valid = row < nq;

    let mut q_row = Array::<f32>::new(dk);
    let mut do_row = Array::<f32>::new(dv);
    let mut dq_acc = Array::<f32>::new(dk);
    let q_base = (bh * nq + row) * dk;
    let do_base = (bh * nq + row) * dv;
    let mut lse_i = f32::new(0.0);
    let mut delta_i = f32::new(0.0);
    if row_valid {
        lse_i = lse[bh * nq + row];
        delta_i = delta[bh * nq + row];
    }
    for d in 0..dk {
        let mut x = f32::new(0.0);
        if row_valid {
            x = f32::cast_from(q[q_base + d]) * scale;
        }
        q_row[d] = x;
        dq_acc[d] = f32::new(0.0);
    }
    for d in 0..dv {
        let mut x = f32::new(0.0);
        if row_valid {
            x = f32::cast_from(d_o[do_base + d]);
        }
        do_row[d] = x;
    }

    let mut k_tile = SharedMemory::<f32>::new(block_n * dk);
    let mut v_tile = SharedMemory::<f32>::new(block_n * dv);

    let num_tiles = nk.div_ceil(block_n);
    for kt in 0..num_tiles {
        let j0 = kt * block_n;
        let mut jn = nk - j0;
        if jn > block_n {
            jn = block_n;
        }

        // ---- stage K and V tiles (zero-filled tail) ----
        let k_base = (bh * nk + j0) * dk;
        let mut idx = tid;
        while idx < block_n * dk {
            let mut x = f32::new(0.0);
            if idx < jn * dk {
                x = f32::cast_from(k[k_base + idx]);
            }
            k_tile[idx] = x;
            idx += block_m;
        }
        let v_base = (bh * nk + j0) * dv;
        let mut idx = tid;
        while idx < block_n * dv {
            let mut x = f32::new(0.0);
            if idx < jn * dv {
                x = f32::cast_from(v[v_base + idx]);
            }
            v_tile[idx] = x;
            idx += block_m;
        }
        sync_cube();

        for j in 0..jn {
            let mut s = f32::new(0.0);
            for d in 0..dk {
                s += q_row[d] * k_tile[j * dk + d];
            }
            let p = (s - lse_i).exp();
            let mut dp = f32::new(0.0);
            for d in 0..dv {
                dp += do_row[d] * v_tile[j * dv + d];
            }
            let ds = p * (dp - delta_i);
            for d in 0..dk {
                dq_acc[d] += ds * k_tile[j * dk + d];
            }
        }
        sync_cube();
    }

    if row_valid {
        for d in 0..dk {
            dq_out[q_base + d] = F::cast_from(dq_acc[d] * scale);
        }
    }
}

/// Tile sizes of the dQ kernel: `(BM, BN)` (BM = units per cube).
pub fn dq_tiles<R: CubeRuntime>(q: &CubeTensor<R>, dk: usize, dv: usize) -> (usize, usize) {
    let budget = shared_budget(q);
    (ROWS_PER_CUBE, tile_rows(dk + dv, budget))
}

/// Launches [`flash_bwd_dq_kernel`]. Inputs contiguous; `dq_out` contiguous with the shape and dtype of
/// `q` (every element written).
#[allow(clippy::too_many_arguments)]
pub fn launch_dq<R: CubeRuntime>(
    q: &CubeTensor<R>,
    k: &CubeTensor<R>,
    v: &CubeTensor<R>,
    d_o: &CubeTensor<R>,
    lse: &CubeTensor<R>,
    delta: &CubeTensor<R>,
    dq_out: &CubeTensor<R>,
    scale: f32,
) {
    crate::cube_util::assert_tight("launch_dq", &[q, k, v, d_o, lse, delta, dq_out]);
    let [bh, nq, dk] = q.meta.shape().dims::<3>();
    let [_, nk, _] = k.meta.shape().dims::<3>();
    let [_, _, dv] = v.meta.shape().dims::<3>();
    let (block_m, block_n) = dq_tiles(q, dk, dv);

    let client = q.client.clone();
    let cube_dim = CubeDim::new_1d(block_m as u32);
    let cube_count = CubeCount::Static(nq.div_ceil(block_m) as u32, bh as u32, 1);

    // SAFETY: index arithmetic is bounded by the shapes passed as scalars (the real, contiguous shapes).
    unsafe {
        flash_bwd_dq_kernel::launch_unchecked::<R>(
            &client,
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
            block_m,
            block_n,
            q.dtype.into(),
        )
    }
}
