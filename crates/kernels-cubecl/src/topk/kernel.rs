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

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

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
    crate::attention::kernels::assert_tight("topk pass", &[values, indices, out_values, out_indices]);
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
