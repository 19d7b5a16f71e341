//! Flash Attention 2 forward kernel (plain CubeCL, no tensor cores).
//!
//! # Math
//!
//! For one head (`Q: [Nq, Dk]`, `K: [Nk, Dk]`, `V: [Nk, Dv]`, softmax scale `s`):
//!
//! ```text
//! S = s · Q Kᵀ            P = softmax_rows(S)            O = P V            LSE_i = log Σ_j exp(S_ij)
//! ```
//!
//! FA2 never materialises `S`/`P`: the keys are visited tile by tile (`BN` keys) and each query row `i`
//! keeps a running max `m`, a running sum `l` and an unnormalised accumulator `acc`:
//!
//! ```text
//! m' = max(m, max_j S_ij)          α = exp(m − m')
//! l' = α·l + Σ_j exp(S_ij − m')    acc' = α·acc + Σ_j exp(S_ij − m') · V_j
//! ```
//!
//! and finally `O_i = acc / l`, `LSE_i = m + ln(l)` (the backward recomputes `P_ij = exp(S_ij − LSE_i)`).
//!
//! # Work split
//!
//! Grid `(⌈Nq/BM⌉, BH)`, `BM` units per cube; unit `t` owns query row `CUBE_POS_X·BM + t` of head
//! `CUBE_POS_Y`. Its (pre-scaled) Q row, its accumulator and the tile's scores live in unit-local arrays.
//! Each K tile is loaded cooperatively (coalesced) into shared memory, scores are computed against it,
//! then the V tile is loaded into the same buffer (halves the shared memory so `BN` stays large for
//! `D = 128`). Out-of-range keys of the last tile are skipped by bounding the loops by the tile's valid
//! length; out-of-range query units compute on zeros and never write. All accumulation is `f32`.
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::{shared_budget, tile_rows, NEG_BIG, ROWS_PER_CUBE};

/// FA2 forward. `q: [BH, nq, dk]`, `k: [BH, nk, dk]`, `v: [BH, nk, dv]` → `o: [BH, nq, dv]`,
/// `lse: [BH, nq]` (f32). All contiguous. `block_m` must equal the cube's unit count;
/// `tile_width = max(dk, dv)`.
#[cube(launch_unchecked)]
pub fn flash_fwd_kernel<F: Float>(
    q: &Tensor<F>,
    k: &Tensor<F>,
    v: &Tensor<F>,
    o: &mut Tensor<F>,
    lse: &mut Tensor<f32>,
    nq: u32,
    nk: u32,
    scale: f32,
    #[comptime] dk: usize,
    #[comptime] dv: usize,
    #[comptime] block_m: usize,
    #[comptime] block_n: usize,
    #[comptime] tile_width: usize,
    #[define(F)] _dtype: StorageType,
) {
    let tid = UNIT_POS_X as usize;
    let bh = CUBE_POS_Y as usize;
    let nq = nq as usize;
    let nk = nk as usize;
    let row = CUBE_POS_X as usize * block_m + tid;
    let row_valid = row < nq;

    // The unit's query row, pre-multiplied by the softmax scale.
    let mut q_row = Array::<f32>::new(dk);
    let q_base = (bh * nq + row) * dk;
    for d in 0..dk {
        let mut x = f32::new(0.0);
        if row_valid {
            x = f32::cast_from(q[q_base + d]) * scale;
        }
        q_row[d] = x;
    }

    let mut acc = Array::<f32>::new(dv);
    for d in 0..dv {
        acc[d] = f32::new(0.0);
    }
    let mut scores = Array::<f32>::new(block_n);

    // One buffer for the K tile and then the V tile: `block_n × tile_width` f32, `tile_width = max(dk, dv)`.
    let mut tile = SharedMemory::<f32>::new(block_n * tile_width);

    let mut m = f32::new(NEG_BIG);
    let mut l = f32::new(0.0);

    let num_tiles = nk.div_ceil(block_n);
    for kt in 0..num_tiles {
        let j0 = kt * block_n;
        let mut jn = nk - j0;
        if jn > block_n {
            jn = block_n;
        }

        // ---- K tile -> shared (zero-filled tail) ----
        let k_base = (bh * nk + j0) * dk;
        let mut idx = tid;
        while idx < block_n * dk {
            let mut x = f32::new(0.0);
            if idx < jn * dk {
                x = f32::cast_from(k[k_base + idx]);
            }
            tile[idx] = x;
            idx += block_m;
        }
        sync_cube();

        // ---- scores of this tile + online softmax update ----
        let mut m_tile = f32::new(NEG_BIG);
        for j in 0..jn {
            let mut s = f32::new(0.0);
            for d in 0..dk {
                s += q_row[d] * tile[j * dk + d];
            }
            scores[j] = s;
            m_tile = max(m_tile, s);
        }
        let m_new = max(m, m_tile);
        let alpha = (m - m_new).exp();
        l *= alpha;
        for d in 0..dv {
            acc[d] = acc[d] * alpha;
        }
        for j in 0..jn {
            let p = (scores[j] - m_new).exp();
            scores[j] = p;
            l += p;
        }
        m = m_new;
        sync_cube();

        // ---- V tile -> shared, acc += P V ----
        let v_base = (bh * nk + j0) * dv;
        let mut idx = tid;
        while idx < block_n * dv {
            let mut x = f32::new(0.0);
            if idx < jn * dv {
                x = f32::cast_from(v[v_base + idx]);
            }
            tile[idx] = x;
            idx += block_m;
        }
        sync_cube();

        for j in 0..jn {
            let p = scores[j];
            for d in 0..dv {
                acc[d] += p * tile[j * dv + d];
            }
        }
        sync_cube();
    }

    if row_valid {
        let inv_l = f32::new(1.0) / l;
        let o_base = (bh * nq + row) * dv;
        for d in 0..dv {
            o[o_base + d] = F::cast_from(acc[d] * inv_l);
        }
        lse[bh * nq + row] = m + l.ln();
    }
}

/// Tile sizes of the forward kernel: `(BM, BN)`.
pub fn forward_tiles<R: CubeRuntime>(q: &CubeTensor<R>, dk: usize, dv: usize) -> (usize, usize) {
    let budget = shared_budget(q);
    (ROWS_PER_CUBE, tile_rows(dk.max(dv), budget))
}

/// Launches [`flash_fwd_kernel`] writing into `o` (`[BH, Nq, Dv]`, dtype of `q`) and `lse`
/// (`[BH, Nq]`, f32). Inputs must be contiguous and on one device; outputs contiguous.
/// Every element of `o` and `lse` is written (the tests poison them with NaN first).
pub fn launch_forward<R: CubeRuntime>(
    q: &CubeTensor<R>,
    k: &CubeTensor<R>,
    v: &CubeTensor<R>,
    o: &CubeTensor<R>,
    lse: &CubeTensor<R>,
    scale: f32,
) {
    crate::cube_util::assert_tight("launch_forward", &[q, k, v, o, lse]);
    let [bh, nq, dk] = q.meta.shape().dims::<3>();
    let [_, nk, _] = k.meta.shape().dims::<3>();
    let [_, _, dv] = v.meta.shape().dims::<3>();
    let (block_m, block_n) = forward_tiles(q, dk, dv);

    let client = q.client.clone();
    let cube_dim = CubeDim::new_1d(block_m as u32);
    let cube_count = CubeCount::Static(nq.div_ceil(block_m) as u32, bh as u32, 1);

    // SAFETY: all index arithmetic is bounded by the shapes passed as scalars, which are the real shapes
    // of the contiguous tensors (checked by the caller, `super::super::cube`).
    unsafe {
        flash_fwd_kernel::launch_unchecked::<R>(
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
            block_m,
            block_n,
            dk.max(dv),
            q.dtype.into(),
        )
    }
}
