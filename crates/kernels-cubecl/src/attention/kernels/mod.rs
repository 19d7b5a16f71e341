//! CubeCL kernels of the Flash Attention 2 op and the host code that sizes and launches them.
//!
//! All kernels work on contiguous `[BH, N, D]` tensors (`BH` = batch × heads) and accumulate in `f32`
//! whatever the storage dtype (`F` is a runtime dtype through `#[define(F)]`: f32, f16 or bf16).
//! LSE and the backward's `Δ = rowsum(dO ∘ O)` are always `f32` tensors `[BH, Nq]`.
//!
//! Layout of the work (one *unit* = one thread, one *cube* = one workgroup / thread block):
//!
//! | kernel | grid | one unit owns | staged in shared memory |
//! |---|---|---|---|
//! | [`forward`] | `(⌈Nq/BM⌉, BH)` | one query row | a K tile, then a V tile (same buffer) |
//! | [`forward_mma`] (f16/bf16, `mma.sync`, CUDA sm_80+) | `(⌈Nq/BM⌉, BH)` | a plane: 16 query rows (S, O in registers) | Q block, K and V tiles |
//! | [`forward_cmma`] (f16/bf16, `wmma`) | `(⌈Nq/BM⌉, BH)` | a plane: 16 query rows | Q block, K and V tiles, S, P, O |
//! | [`backward_delta`] | `⌈BH·Nq / 256⌉` | one query row | — |
//! | [`backward_dkdv`] | `(⌈Nk/BN⌉, BH)` | one key row | Q, dO tiles + LSE, Δ of `BM` query rows |
//! | [`backward_dq`] | `(⌈Nq/BM⌉, BH)` | one query row | K and V tiles |
//! | [`backward_mma`] dK/dV (f16/bf16, `mma.sync`) | `(⌈Nk/BN⌉, BH)` | a plane: 16 keys (dK, dV in registers) | K, V block; Q, dO tiles |
//! | [`backward_mma`] dQ (f16/bf16, `mma.sync`) | `(⌈Nq/BM⌉, BH)` | a plane: 16 query rows (dQ in registers) | Q, dO block; K, V tiles |
//!
//! Tails (`N` not a multiple of the block) are handled by bounds (loops run to the number of valid rows of
//! the tile; units whose row is out of range compute on zeros and never write), so no `-inf` is needed
//! (WGSL cannot spell `-inf`; the running max starts at `-1e30`).

pub mod backward_delta;
pub mod backward_dkdv;
pub mod backward_dq;
pub mod backward_mma;
pub mod forward;
#[allow(missing_docs)] // the launcher items `#[cube]` generates (reached by the benches)
pub mod forward_cmma;
#[allow(missing_docs)]
pub mod forward_mma;
pub mod mma;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

/// Units (threads) per cube for the kernels where one unit owns one row of the "outer" sequence.
pub(crate) const ROWS_PER_CUBE: usize = 64;

/// Running-max start value of the online softmax (finite: WGSL has no `-inf` literal).
pub(crate) const NEG_BIG: f32 = -1.0e30;

/// Largest shared-memory budget the kernels plan for, in bytes (also capped by the device's limit).
/// 32 KiB keeps two cubes resident per SM on small GPUs and fits every wgpu adapter we target.
const SHARED_BUDGET: usize = 32 * 1024;

/// Shared-memory budget on the tensor's device.
pub(crate) fn shared_budget<R: CubeRuntime>(t: &CubeTensor<R>) -> usize {
    let max = t.client.properties().hardware.max_shared_memory_size;
    max.min(SHARED_BUDGET)
}

/// Largest tile length in `{64, 32, 16, 8}` whose `tile × floats_per_row` f32 values fit the budget.
pub(crate) fn tile_rows(floats_per_row: usize, budget_bytes: usize) -> usize {
    for t in [64usize, 32, 16, 8] {
        if t * floats_per_row * 4 <= budget_bytes {
            return t;
        }
    }
    panic!(
        "flash attention: a tile of 8 rows × {floats_per_row} f32 values does not fit in {budget_bytes} bytes of shared memory"
    );
}

/// Head dims the CubeCL kernels are built for (`D` is a comptime value, so every dim is its own kernel).
/// Anything up to this bound works; 16, 32, 64 and 128 are the tested ones.
pub const MAX_HEAD_DIM: usize = 256;

/// One representative specialisation of each kernel (f32 storage) for the source snapshots of
/// [`crate::snapshot`] (defined, never launched).
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, R, S, T};
    // Dk = Dv = 32 and the tiles the launchers pick for it (64 × 64 within 32 KiB).
    let (dk, dv, bm, bn) = (32usize, 32usize, 64usize, 64usize);
    vec![
        kernel_def!(
            "fa2_forward_f32_d32",
            forward::flash_fwd_kernel::FlashFwdKernel<R>,
            units = bm,
            [T, T, T, T, T, S, S, S, dk, dv, bm, bn, dk.max(dv), F32]
        ),
        kernel_def!(
            "fa2_backward_delta_f32_d32",
            backward_delta::flash_bwd_delta_kernel::FlashBwdDeltaKernel<R>,
            units = backward_delta::UNITS,
            [T, T, T, S, dv, F32]
        ),
        kernel_def!(
            "fa2_backward_dkdv_f32_d32",
            backward_dkdv::flash_bwd_dkdv_kernel::FlashBwdDkdvKernel<R>,
            units = bn,
            [T, T, T, T, T, T, T, T, S, S, S, dk, dv, bm, bn, F32]
        ),
        kernel_def!(
            "fa2_backward_dq_f32_d32",
            backward_dq::flash_bwd_dq_kernel::FlashBwdDqKernel<R>,
            units = bm,
            [T, T, T, T, T, T, T, S, S, S, dk, dv, bm, bn, F32]
        ),
    ]
}
