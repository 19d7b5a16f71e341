//! Row-wise top-k kernel: chunked bitonic sort in shared memory.
//!
//! # Math
//!
//! For each row `x ∈ ℝⁿ` the op returns the `k` largest values in descending order and their column
//! indices (ties: the smaller index first, so the result is deterministic). The *before* relation of two
//! entries `(v_a, i_a)`, `(v_b, i_b)` is `v_a > v_b ∨ (v_a = v_b ∧ i_a < i_b)`.
//!
//! # Work split
//!
//! One pass: grid `(⌈n / C⌉, rows)`; one cube sorts one chunk of `C` entries (`C` a power of two, comptime)
//! in shared memory with a bitonic network (`log₂C·(log₂C+1)/2` compare-exchange phases, each unit owning
//! `C / (2·units)` pairs per phase) and writes the chunk's first `k` entries. Entries past the row's end
//! are sentinels `(−3·10³⁸, u32::MAX)` that sort after every real entry. The host runs passes until one
//! chunk is left: with `C ≥ 2k` each pass shrinks the row by at least half (`n → ⌈n/C⌉·k`), and every pass
//! keeps every entry of the global top-k (each one is in its chunk's top-k). The last pass writes exactly
//! `k` sorted entries.
//!
//! Small `k` (≤ [`SMALL_K`], the assigner's 10 and 7): [`topk_small_kernel`] instead. Each unit streams
//! `per_unit` entries of its cube's chunk (`chunk = units·per_unit`, coalesced) through a sorted list of
//! `k` entries held in registers (one compare-exchange per list slot, constant indices); then `k` rounds
//! pick the chunk's next entry: every unit offers the head of its list, groups of 16 heads are reduced in
//! shared memory, every unit reduces the 16 group winners, the winning unit pops its head. No sort of the
//! whole chunk, two barriers per round.
//!
//! Values are compared in f32 (exact for f16/bf16/f32 storage); NaN values are not supported.
use cubecl::prelude::*;

/// Sentinel value of padding entries (finite: WGSL has no `-inf` literal).
pub const SENTINEL: f32 = -3.0e38;

/// One pass of the chunked top-k. `values: [rows, n]` (any float dtype `F`), `indices: [rows, n]`
/// (int dtype `I`, the original column of each entry; read only when `has_indices`, else the column is
/// the position) → `out_values`, `out_indices: [rows, ⌈n/chunk⌉·k]`. All tensors contiguous.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn topk_chunk_kernel<F: Float, I: Int>(
    values: &Tensor<F>,
    indices: &Tensor<I>,
    out_values: &mut Tensor<F>,
    out_indices: &mut Tensor<I>,
    n: u32,
    #[comptime] chunk: usize,
    #[comptime] k: usize,
    #[comptime] units: usize,
    #[comptime] has_indices: bool,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let tid = UNIT_POS_X as usize;
    let chunk_id = CUBE_POS_X as usize;
    let row = CUBE_POS_Y as usize;
    let num_chunks = CUBE_COUNT_X as usize;
    let n = n as usize;

    let mut keys = SharedMemory::<f32>::new(chunk);
    let mut ids = SharedMemory::<u32>::new(chunk);

    // ---- load the chunk (sentinels past the row's end) ----
    let base = row * n;
    let mut e = tid;
    while e < chunk {
        let col = chunk_id * chunk + e;
        let mut v = f32::new(SENTINEL);
        let mut id = u32::MAX.runtime();
        if col < n {
            v = f32::cast_from(values[base + col]);
            if has_indices {
                id = u32::cast_from(indices[base + col]);
            } else {
                id = col as u32;
            }
        }
        keys[e] = v;
        ids[e] = id;
        e += units;
    }
    sync_cube();

    // ---- bitonic sort into "before" order (descending value, ascending index) ----
    let half = chunk / 2;
    let mut size = 2usize;
    while size <= chunk {
        let mut stride = size / 2;
        while stride > 0 {
            let mut t = tid;
            while t < half {
                let i = 2 * stride * (t / stride) + t % stride;
                let j = i + stride;
                let vi = keys[i];
                let vj = keys[j];
                let ii = ids[i];
                let ij = ids[j];
                let j_before_i = vj > vi || (vj == vi && ij < ii);
                let i_before_j = vi > vj || (vi == vj && ii < ij);
                let ascending_block = (i & size) == 0;
                let swap = (ascending_block && j_before_i) || (!ascending_block && i_before_j);
                if swap {
                    keys[i] = vj;
                    keys[j] = vi;
                    ids[i] = ij;
                    ids[j] = ii;
                }
                t += units;
            }
            sync_cube();
            stride /= 2;
        }
        size *= 2;
    }

    // ---- the chunk's first k entries ----
    let out_base = row * num_chunks * k + chunk_id * k;
    let mut e = tid;
    while e < k {
        out_values[out_base + e] = F::cast_from(keys[e]);
        out_indices[out_base + e] = I::cast_from(ids[e]);
        e += units;
    }
}

/// Largest `k` of [`topk_small_kernel`] (its per-unit list lives in registers).
pub const SMALL_K: usize = 16;

/// Units per cube of [`topk_small_kernel`].
pub const SMALL_UNITS: usize = 256;

/// Heads reduced per group in a round of [`topk_small_kernel`].
const GROUP: usize = 16;

/// `(v_a, i_a)` comes before `(v_b, i_b)`: larger value, then smaller index.
#[cube]
fn before(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
    va > vb || (va == vb && ia < ib)
}

/// One pass of the small-`k` top-k: chunks of `units·per_unit` entries; same tensors and output layout as
/// [`topk_chunk_kernel`] (`chunk = units·per_unit`). `units` must be a multiple of 16.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn topk_small_kernel<F: Float, I: Int>(
    values: &Tensor<F>,
    indices: &Tensor<I>,
    out_values: &mut Tensor<F>,
    out_indices: &mut Tensor<I>,
    n: u32,
    per_unit: u32,
    #[comptime] k: usize,
    #[comptime] units: usize,
    #[comptime] has_indices: bool,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let tid = UNIT_POS_X as usize;
    let chunk_id = CUBE_POS_X as usize;
    let row = CUBE_POS_Y as usize;
    let num_chunks = CUBE_COUNT_X as usize;
    let n = n as usize;
    let per_unit = per_unit as usize;

    // ---- stream the unit's entries through a sorted register list ----
    let mut lv = Array::<f32>::new(k);
    let mut li = Array::<u32>::new(k);
    #[unroll]
    for j in 0..k {
        lv[j] = f32::new(SENTINEL);
        li[j] = u32::MAX;
    }
    let base = row * n;
    let first = chunk_id * units * per_unit;
    for e in 0..per_unit {
        let col = first + e * units + tid;
        if col < n {
            let mut cv = f32::cast_from(values[base + col]);
            let mut ci = col as u32;
            if has_indices {
                ci = u32::cast_from(indices[base + col]);
            }
            if before(cv, ci, lv[k - 1], li[k - 1]) {
                #[unroll]
                for j in 0..k {
                    let bv = lv[j];
                    let bi = li[j];
                    if before(cv, ci, bv, bi) {
                        lv[j] = cv;
                        li[j] = ci;
                        cv = bv;
                        ci = bi;
                    }
                }
            }
        }
    }

    // ---- k rounds: the chunk's next entry is the best head ----
    let groups = units / GROUP;
    let mut head_v = SharedMemory::<f32>::new(units);
    let mut head_i = SharedMemory::<u32>::new(units);
    let mut group_v = SharedMemory::<f32>::new(groups);
    let mut group_i = SharedMemory::<u32>::new(groups);
    let out_base = row * num_chunks * k + chunk_id * k;
    for r in 0..k {
        head_v[tid] = lv[0];
        head_i[tid] = li[0];
        sync_cube();
        if tid < groups {
            let mut bv = head_v[tid * GROUP];
            let mut bi = head_i[tid * GROUP];
            for j in 1..GROUP {
                let v = head_v[tid * GROUP + j];
                let i = head_i[tid * GROUP + j];
                if before(v, i, bv, bi) {
                    bv = v;
                    bi = i;
                }
            }
            group_v[tid] = bv;
            group_i[tid] = bi;
        }
        sync_cube();
        let mut bv = group_v[0];
        let mut bi = group_i[0];
        for j in 1..groups {
            let v = group_v[j];
            let i = group_i[j];
            if before(v, i, bv, bi) {
                bv = v;
                bi = i;
            }
        }
        if lv[0] == bv && li[0] == bi {
            #[unroll]
            for j in 0..k - 1 {
                lv[j] = lv[j + 1];
                li[j] = li[j + 1];
            }
            lv[k - 1] = f32::new(SENTINEL);
            li[k - 1] = u32::MAX;
        }
        if tid == 0 {
            out_values[out_base + r] = F::cast_from(bv);
            out_indices[out_base + r] = I::cast_from(bi);
        }
    }
}

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

/// Entries per unit of a [`topk_small_kernel`] pass over `rows` rows of `n` entries: one chunk per row
/// when that leaves enough cubes (≥ 128 rows, ≤ 64 entries per unit), else chunks of 2048 entries.
pub fn small_per_unit(rows: usize, n: usize) -> usize {
    let per_unit = n.div_ceil(SMALL_UNITS).max(1);
    if rows >= 128 {
        per_unit.min(64)
    } else {
        per_unit.min(8)
    }
}

/// Launches one [`topk_small_kernel`] pass (`k ≤ SMALL_K`) with `per_unit` entries per unit: outputs
/// `[rows, ⌈n / (SMALL_UNITS·per_unit)⌉·k]`; tensors as in [`launch_pass`].
#[allow(clippy::too_many_arguments)]
pub fn launch_small_pass<R: CubeRuntime>(
    values: &CubeTensor<R>,
    indices: &CubeTensor<R>,
    has_indices: bool,
    out_values: &CubeTensor<R>,
    out_indices: &CubeTensor<R>,
    k: usize,
    per_unit: usize,
) {
    let [rows, n] = values.meta.shape().dims::<2>();
    let [rows_o, n_out] = out_values.meta.shape().dims::<2>();
    let chunks = n.div_ceil(SMALL_UNITS * per_unit);
    assert!(
        rows == rows_o && n_out == chunks * k,
        "topk small pass: output [{rows_o}, {n_out}] for input [{rows}, {n}]"
    );
    assert!((1..=SMALL_K).contains(&k) && per_unit >= 1, "topk small pass: k {k}, per_unit {per_unit}");
    crate::cube_util::assert_tight("topk small pass", &[values, indices, out_values, out_indices]);
    let client = values.client.clone();
    // SAFETY: entries are read at `row·n + col` with `col < n`; each cube writes its `k` outputs at
    // `row·chunks·k + chunk·k + r`, inside the asserted output shape.
    unsafe {
        topk_small_kernel::launch_unchecked::<R>(
            &client,
            CubeCount::Static(chunks as u32, rows as u32, 1),
            CubeDim::new_1d(SMALL_UNITS as u32),
            values.clone().into_tensor_arg(),
            indices.clone().into_tensor_arg(),
            out_values.clone().into_tensor_arg(),
            out_indices.clone().into_tensor_arg(),
            n as u32,
            per_unit as u32,
            k,
            SMALL_UNITS,
            has_indices,
            [values.dtype.into(), out_indices.dtype.into()],
        )
    }
}

/// Largest chunk (entries sorted by one cube): 2048 × 8 bytes = 16 KiB of shared memory.
pub const MAX_CHUNK: usize = 2048;

/// Chunk length for a given `k`: a power of two ≥ 4k (≥ 2k when `k > MAX_CHUNK/4`), at least 256,
/// at most [`MAX_CHUNK`]. `None` when `k > MAX_CHUNK / 2` (no chunk is large enough to make progress).
pub fn chunk_for(k: usize) -> Option<usize> {
    if k == 0 || k > MAX_CHUNK / 2 {
        return None;
    }
    Some((4 * k).next_power_of_two().clamp(256, MAX_CHUNK))
}

/// Launches one pass of [`topk_chunk_kernel`] over `values: [rows, n]` (and `indices`, same shape, when
/// `has_indices`; otherwise `indices` is any int tensor of the output's dtype, bound but never read — a
/// separate buffer, since wgpu forbids aliasing a written binding) into `out_values`,
/// `out_indices: [rows, ⌈n/chunk⌉·k]`. All tensors must be contiguous; every output element is written.
pub fn launch_pass<R: CubeRuntime>(
    values: &CubeTensor<R>,
    indices: &CubeTensor<R>,
    has_indices: bool,
    out_values: &CubeTensor<R>,
    out_indices: &CubeTensor<R>,
    k: usize,
    chunk: usize,
) {
    let [rows, n] = values.meta.shape().dims::<2>();
    let [rows_o, n_out] = out_values.meta.shape().dims::<2>();
    let chunks = n.div_ceil(chunk);
    assert!(rows == rows_o && n_out == chunks * k, "topk pass: output [{rows_o}, {n_out}] for input [{rows}, {n}]");
    assert!(chunk.is_power_of_two() && 2 * k <= chunk && chunk <= MAX_CHUNK, "topk pass: chunk {chunk} for k {k}");
    crate::cube_util::assert_tight("topk pass", &[values, indices, out_values, out_indices]);
    let units = (chunk / 2).min(256);
    let client = values.client.clone();
    // SAFETY: every index is bounded by `n`, `chunk` and `k`, which are the real extents of the
    // contiguous tensors (asserted above).
    unsafe {
        topk_chunk_kernel::launch_unchecked::<R>(
            &client,
            CubeCount::Static(chunks as u32, rows as u32, 1),
            CubeDim::new_1d(units as u32),
            values.clone().into_tensor_arg(),
            indices.clone().into_tensor_arg(),
            out_values.clone().into_tensor_arg(),
            out_indices.clone().into_tensor_arg(),
            n as u32,
            chunk,
            k,
            units,
            has_indices,
            [values.dtype.into(), out_indices.dtype.into()],
        )
    }
}

/// One representative specialisation of each kernel (f32 storage) for the source snapshots of
/// [`crate::snapshot`] (defined, never launched).
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, I32, R, S, T};
    vec![kernel_def!(
        "topk_small_k10_f32",
        topk_small_kernel::TopkSmallKernel<R>,
        units = SMALL_UNITS,
        [T, T, T, T, S, S, 10, SMALL_UNITS, true, [F32, I32]]
    )]
}
