//! Flash Attention 2 forward on tensor cores (CubeCL `cmma`, 16×16×16 tiles, f16/bf16 inputs, f32
//! accumulation). Used on runtimes whose device reports the matching `cmma` configuration (CUDA); the plain
//! kernel ([`super::forward`]) serves everything else (f32, wgpu, head dims that are not multiples of 16).
//!
//! # Math
//!
//! As in [`super::forward`]: `S = s·QKᵀ`, online softmax over key tiles with a running max `m` and sum `l`,
//! `O = acc / l`, `LSE = m + ln l`. The two products run on tensor cores:
//!
//! ```text
//! S_tile = Q_blk · K_tileᵀ   (f16/bf16 × f16/bf16 → f32)        then  S ← s·S  (f32)
//! P_tile = exp(S_tile − m')  rounded to the storage dtype        l  ← α·l + Σ_j P_ij (unrounded)
//! O_blk  = α·O_blk + P_tile · V_tile   (→ f32)
//! ```
//!
//! The only rounding beyond the plain kernel is `P` to the storage dtype before `P·V` (what FA2 does).
//!
//! # Work split
//!
//! Grid `(⌈Nq/BM⌉, BH)`; a cube is `P` planes of 32 units (`BM = 16·P` query rows); plane `p` owns rows
//! `16p … 16p+15` of the block. Shared memory holds the Q block, one K and one V tile (`BN ∈ {32, 64}`
//! keys, comptime, zero-filled past `Nk`), the f32 scores and the storage-dtype probabilities of the tile, and the f32
//! output accumulator `O_blk` (tensor-core accumulators cannot be rescaled in place, so `O_blk` lives in
//! shared memory and is loaded into / stored from an accumulator fragment around each `P·V`), and the
//! rows' running max and sum. The softmax and the final write walk the plane's 16 rows one at a time with
//! all 32 lanes: lane `j` takes keys `j`, `j + 32`, … of the tile, `plane_max`/`plane_sum` give the row
//! max and sum, and the O row is rescaled / written with consecutive lanes on consecutive elements (no
//! shared-memory bank conflicts, coalesced global writes).
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::NEG_BIG;

/// Tensor-core tile edge (m = n = k = 16).
const T: usize = 16;
/// Units per plane the kernel is written for (CUDA warps).
pub const PLANE: usize = 32;

/// Key-tile widths and plane counts tried in this order ([`config_for`]). Measured on an H200 (f16,
/// `bench-attention --cmma-sweep`, docs/BENCHMARKS.md): 32-key tiles with 4 planes are the fastest or within
/// 2 % on every benchmark shape; 64-key tiles and 8 planes did not help (N = 4096: 39.0 ms at 32×4, 39.7 ms
/// at 64×4 and 64×8; B64 H4 N400 D64: 1.27 ms at 32×4, 1.48 ms at 64×4).
pub const CONFIGS: [(usize, usize); 7] = [(32, 4), (64, 4), (32, 8), (64, 8), (64, 2), (32, 2), (32, 1)];

/// Benchmark override of the `(block_n, planes)` choice, packed `block_n << 8 | planes`; 0 = heuristic.
static CONFIG_OVERRIDE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Forces the tensor-core forward's `(block_n, planes)` (`block_n` 32 or 64, `planes` 1–8) for later
/// launches where it fits the shared-memory budget (`None`: back to the built-in order). For tuning
/// benchmarks (`bench-attention --cmma-configs`); results do not depend on it beyond rounding order.
pub fn set_config_override(config: Option<(usize, usize)>) {
    let packed = config.map_or(0, |(bn, p)| {
        assert!((bn == 32 || bn == 64) && (1..=8).contains(&p), "cmma config ({bn}, {p}) not supported");
        bn << 8 | p
    });
    CONFIG_OVERRIDE.store(packed, std::sync::atomic::Ordering::Relaxed);
}

/// `q: [BH, nq, dk]`, `k: [BH, nk, dk]`, `v: [BH, nk, dv]` (f16 or bf16) → `o: [BH, nq, dv]` (same dtype),
/// `lse: [BH, nq]` f32. All contiguous; `dk`, `dv` multiples of 16; cube = `(32, planes)` units.
#[cube(launch_unchecked)]
pub fn flash_fwd_cmma_kernel<F: Float>(
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
    #[comptime] planes: usize,
    #[comptime] block_n: usize,
    #[define(F)] _dtype: StorageType,
) {
    let block_m = comptime!(planes * T);
    let keys_per_lane = comptime!(block_n / PLANE);
    let units = comptime!(planes * PLANE);
    let lane = UNIT_POS_X as usize;
    let plane = UNIT_POS_Y as usize;
    let tid = plane * PLANE + lane;
    let bh = CUBE_POS_Y as usize;
    let nq = nq as usize;
    let nk = nk as usize;
    let row0 = CUBE_POS_X as usize * block_m;

    let mut q_s = SharedMemory::<F>::new(block_m * dk);
    let mut k_s = SharedMemory::<F>::new(block_n * dk);
    let mut v_s = SharedMemory::<F>::new(block_n * dv);
    let mut s_s = SharedMemory::<f32>::new(block_m * block_n);
    let mut p_s = SharedMemory::<F>::new(block_m * block_n);
    let mut o_s = SharedMemory::<f32>::new(block_m * dv);

    // Q block (zero rows past nq) and a zero accumulator.
    let q_base = (bh * nq + row0) * dk;
    let mut idx = tid;
    while idx < block_m * dk {
        let mut x = F::new(0.0);
        if row0 + idx / dk < nq {
            x = q[q_base + idx];
        }
        q_s[idx] = x;
        idx += units;
    }
    let mut idx = tid;
    while idx < block_m * dv {
        o_s[idx] = f32::new(0.0);
        idx += units;
    }

    // Row statistics (running max `m`, sum `l`) of the block's rows, in shared memory: the plane owning a
    // row updates them together (one key per lane, plane reductions).
    let mut m_s = SharedMemory::<f32>::new(block_m);
    let mut l_s = SharedMemory::<f32>::new(block_m);
    let mut idx = tid;
    while idx < block_m {
        m_s[idx] = f32::new(NEG_BIG);
        l_s[idx] = f32::new(0.0);
        idx += units;
    }

    let a_frag =
        unsafe { cmma::Matrix::<F>::uninitialized(cmma::MatrixIdent::A, T, T, T, cmma::MatrixLayout::RowMajor) };
    let bk_frag =
        unsafe { cmma::Matrix::<F>::uninitialized(cmma::MatrixIdent::B, T, T, T, cmma::MatrixLayout::ColMajor) };
    let bv_frag =
        unsafe { cmma::Matrix::<F>::uninitialized(cmma::MatrixIdent::B, T, T, T, cmma::MatrixLayout::RowMajor) };
    let acc = unsafe {
        cmma::Matrix::<f32>::uninitialized(cmma::MatrixIdent::Accumulator, T, T, T, cmma::MatrixLayout::Undefined)
    };
    sync_cube();

    let plane_q = plane * T * dk;
    let plane_s = plane * T * block_n;
    let plane_o = plane * T * dv;
    let num_tiles = nk.div_ceil(block_n);
    for kt in 0..num_tiles {
        let j0 = kt * block_n;
        let mut jn = nk - j0;
        if jn > block_n {
            jn = block_n;
        }
        // ---- K and V tiles -> shared (zero rows past nk) ----
        let k_base = (bh * nk + j0) * dk;
        let mut idx = tid;
        while idx < block_n * dk {
            let mut x = F::new(0.0);
            if idx < jn * dk {
                x = k[k_base + idx];
            }
            k_s[idx] = x;
            idx += units;
        }
        let v_base = (bh * nk + j0) * dv;
        let mut idx = tid;
        while idx < block_n * dv {
            let mut x = F::new(0.0);
            if idx < jn * dv {
                x = v[v_base + idx];
            }
            v_s[idx] = x;
            idx += units;
        }
        sync_cube();

        // ---- S = Q Kᵀ for the plane's 16 rows (tensor cores) ----
        #[unroll]
        for jf in 0..block_n / T {
            cmma::fill(&acc, f32::new(0.0));
            #[unroll]
            for kf in 0..dk / T {
                let qa = plane_q + kf * T;
                cmma::load(&a_frag, &q_s.slice(qa, qa + (T - 1) * dk + T), dk as u32);
                // Kᵀ as a column-major B: element (d, j) at j·dk + d.
                let kb = jf * T * dk + kf * T;
                cmma::load(&bk_frag, &k_s.slice(kb, kb + (T - 1) * dk + T), dk as u32);
                cmma::execute::<F, F, f32, f32>(&a_frag, &bk_frag, &acc, &acc);
            }
            let so = plane_s + jf * T;
            cmma::store(
                &mut s_s.slice_mut(so, so + (T - 1) * block_n + T),
                &acc,
                block_n as u32,
                cmma::MatrixLayout::RowMajor,
            );
        }
        sync_cube();

        // ---- online softmax: the plane walks its 16 rows, lane j takes keys j, j + 32, …;
        //      consecutive lanes touch consecutive words (no bank conflicts); rescale the row of O ----
        for r in 0..T {
            let row = plane * T + r;
            let sr = row * block_n;
            let m_old = m_s[row];
            let mut xs = Array::<f32>::new(keys_per_lane);
            let mut x_max = f32::new(NEG_BIG);
            #[unroll]
            for c in 0..keys_per_lane {
                let j = c * PLANE + lane;
                let mut x = f32::new(NEG_BIG);
                if j < jn {
                    x = s_s[sr + j] * scale;
                }
                xs[c] = x;
                x_max = max(x_max, x);
            }
            let m_new = max(m_old, plane_max(x_max));
            let alpha = (m_old - m_new).exp();
            let mut p_sum = f32::new(0.0);
            #[unroll]
            for c in 0..keys_per_lane {
                let j = c * PLANE + lane;
                let mut p = f32::new(0.0);
                if j < jn {
                    p = (xs[c] - m_new).exp();
                }
                p_s[sr + j] = F::cast_from(p);
                p_sum += p;
            }
            let row_sum = plane_sum(p_sum);
            let orow = row * dv;
            let mut d = lane;
            while d < dv {
                o_s[orow + d] = o_s[orow + d] * alpha;
                d += PLANE;
            }
            if lane == 0 {
                l_s[row] = l_s[row] * alpha + row_sum;
                m_s[row] = m_new;
            }
        }
        sync_cube();

        // ---- O += P V (tensor cores; O round-trips through shared memory) ----
        #[unroll]
        for df in 0..dv / T {
            let oo = plane_o + df * T;
            cmma::load_with_layout(
                &acc,
                &o_s.slice(oo, oo + (T - 1) * dv + T),
                dv as u32,
                cmma::MatrixLayout::RowMajor,
            );
            #[unroll]
            for kf in 0..block_n / T {
                let pa = plane_s + kf * T;
                cmma::load(&a_frag, &p_s.slice(pa, pa + (T - 1) * block_n + T), block_n as u32);
                let vb = kf * T * dv + df * T;
                cmma::load(&bv_frag, &v_s.slice(vb, vb + (T - 1) * dv + T), dv as u32);
                cmma::execute::<F, F, f32, f32>(&a_frag, &bv_frag, &acc, &acc);
            }
            cmma::store(&mut o_s.slice_mut(oo, oo + (T - 1) * dv + T), &acc, dv as u32, cmma::MatrixLayout::RowMajor);
        }
        sync_cube();
    }

    // ---- O / l and LSE, one row at a time per plane (coalesced over the head dim) ----
    for r in 0..T {
        let row = plane * T + r;
        if row0 + row < nq {
            let l = l_s[row];
            let inv_l = f32::new(1.0) / l;
            let o_base = (bh * nq + row0 + row) * dv;
            let orow = row * dv;
            let mut d = lane;
            while d < dv {
                o[o_base + d] = F::cast_from(o_s[orow + d] * inv_l);
                d += PLANE;
            }
            if lane == 0 {
                lse[bh * nq + row0 + row] = m_s[row] + l.ln();
            }
        }
    }
}

/// Shared memory the kernel declares for `planes` planes and `block_n`-key tiles, in bytes (`elem` =
/// storage dtype size).
pub fn shared_bytes(dk: usize, dv: usize, planes: usize, block_n: usize, elem: usize) -> usize {
    let bm = planes * T;
    (bm * dk + block_n * dk + block_n * dv + bm * block_n) * elem + (bm * block_n + bm * dv + 2 * bm) * 4
}

/// `(block_n, planes)` for a problem: the override if set and fitting, else the first of [`CONFIGS`] whose
/// shared memory fits `budget` bytes (none: the tensor-core kernel cannot run).
pub fn config_for(dk: usize, dv: usize, elem: usize, budget: usize) -> Option<(usize, usize)> {
    let fits = |&(bn, p): &(usize, usize)| shared_bytes(dk, dv, p, bn, elem) <= budget;
    let forced = CONFIG_OVERRIDE.load(std::sync::atomic::Ordering::Relaxed);
    let forced = (forced != 0).then_some((forced >> 8, forced & 0xff)).filter(fits);
    forced.or_else(|| CONFIGS.into_iter().find(fits))
}

/// Shared-memory budget of the tensor-core kernel: the device's per-block limit (CubeCL opts the kernel in
/// beyond 48 KiB on CUDA), capped at 100 KiB so that at least two cubes share an SM.
const CMMA_SHARED_BUDGET: usize = 100 * 1024;

/// Whether [`launch_forward_cmma`] handles this problem on `q`'s device: f16/bf16 storage, head dims
/// multiples of 16, 32-unit planes, a `16×16×16` `cmma` configuration for the dtype with f32 accumulation,
/// and a shared-memory fit.
pub fn cmma_supported<R: CubeRuntime>(q: &CubeTensor<R>, dk: usize, dv: usize) -> bool {
    use burn::tensor::DType;
    use cubecl::ir::{features::MmaConfig, ElemType, FloatKind};
    let kind = match q.dtype {
        DType::F16 => FloatKind::F16,
        DType::BF16 => FloatKind::BF16,
        _ => return false,
    };
    if !dk.is_multiple_of(T) || !dv.is_multiple_of(T) || dk == 0 || dv == 0 {
        return false;
    }
    let props = q.client.properties();
    if props.hardware.plane_size_min != PLANE as u32 || props.hardware.plane_size_max != PLANE as u32 {
        return false;
    }
    let config = MmaConfig {
        a_type: ElemType::Float(kind).into(),
        b_type: ElemType::Float(kind).into(),
        cd_type: ElemType::Float(FloatKind::F32).into(),
        m: T as u32,
        n: T as u32,
        k: T as u32,
    };
    let budget = props.hardware.max_shared_memory_size.min(CMMA_SHARED_BUDGET);
    props.features.matmul.cmma.contains(&config) && config_for(dk, dv, 2, budget).is_some()
}

/// Launches [`flash_fwd_cmma_kernel`] (check [`cmma_supported`] first) writing `o` and `lse`; every
/// element of both is written.
pub fn launch_forward_cmma<R: CubeRuntime>(
    q: &CubeTensor<R>,
    k: &CubeTensor<R>,
    v: &CubeTensor<R>,
    o: &CubeTensor<R>,
    lse: &CubeTensor<R>,
    scale: f32,
) {
    crate::cube_util::assert_tight("launch_forward_cmma", &[q, k, v, o, lse]);
    let [bh, nq, dk] = q.meta.shape().dims::<3>();
    let [_, nk, _] = k.meta.shape().dims::<3>();
    let [_, _, dv] = v.meta.shape().dims::<3>();
    let budget = q.client.properties().hardware.max_shared_memory_size.min(CMMA_SHARED_BUDGET);
    let (block_n, planes) =
        config_for(dk, dv, q.dtype.size(), budget).expect("launch_forward_cmma: shared memory does not fit");
    let client = q.client.clone();
    let cube_dim = CubeDim::new_2d(PLANE as u32, planes as u32);
    let cube_count = CubeCount::Static(nq.div_ceil(planes * T) as u32, bh as u32, 1);
    // SAFETY: global reads are bounded by nq / nk (zero-filled tiles), writes by `row < nq`; shared-memory
    // slices stay inside their buffers by construction of the offsets.
    unsafe {
        flash_fwd_cmma_kernel::launch_unchecked::<R>(
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
