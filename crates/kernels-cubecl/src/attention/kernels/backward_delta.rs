//! Flash Attention 2 backward, step 1: `Δ = rowsum(dO ∘ O)`.
//!
//! # Math
//!
//! With `P = softmax(S)` and `O = P V`, the softmax Jacobian gives
//! `dS_ij = P_ij (dP_ij − Σ_k P_ik dP_ik)` with `dP = dO Vᵀ`, and
//! `Σ_k P_ik dP_ik = Σ_k P_ik (dO_i · V_k) = dO_i · O_i =: Δ_i`.
//! So the per-row correction term is a plain dot product of two `[Nq, Dv]` rows, computed once here
//! (f32) instead of once per key block in the dK/dV kernel.
//!
//! # Work split
//!
//! One unit per row of `BH·Nq`; 1-D grid.
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

/// Units per cube of the Δ kernel.
pub(crate) const UNITS: usize = 256;

/// `delta[r] = Σ_d dO[r, d] · O[r, d]` for the `rows` rows of the contiguous `[rows, dv]` tensors.
#[cube(launch_unchecked)]
pub fn flash_bwd_delta_kernel<F: Float>(
    o: &Tensor<F>,
    d_o: &Tensor<F>,
    delta: &mut Tensor<f32>,
    rows: u32,
    #[comptime] dv: usize,
    #[define(F)] _dtype: StorageType,
) {
    let r = ABSOLUTE_POS;
    if r < rows as usize {
        let base = r * dv;
        let mut acc = f32::new(0.0);
        for d in 0..dv {
            acc += f32::cast_from(o[base + d]) * f32::cast_from(d_o[base + d]);
        }
        delta[r] = acc;
    }
}

/// Launches [`flash_bwd_delta_kernel`]: `o`, `d_o` contiguous `[BH, Nq, Dv]`, `delta` contiguous f32
/// `[BH, Nq]` (every element written).
pub fn launch_delta<R: CubeRuntime>(o: &CubeTensor<R>, d_o: &CubeTensor<R>, delta: &CubeTensor<R>) {
    crate::cube_util::assert_tight("launch_delta", &[o, d_o, delta]);
    let [bh, nq, dv] = o.meta.shape().dims::<3>();
    let rows = bh * nq;
    let client = o.client.clone();
    let cube_dim = CubeDim::new_1d(UNITS as u32);
    let cube_count = cubecl::calculate_cube_count_elemwise(&client, rows, cube_dim);

    // SAFETY: every access is guarded by `r < rows` and `rows × dv` is the tensors' element count.
    unsafe {
        flash_bwd_delta_kernel::launch_unchecked::<R>(
            &client,
            cube_count,
            cube_dim,
            o.clone().into_tensor_arg(),
            d_o.clone().into_tensor_arg(),
            delta.clone().into_tensor_arg(),
            rows as u32,
            dv,
            o.dtype.into(),
        )
    }
}
