//! SiLU in place on a tight tensor: `v ← v · σ(v)` in f32 (the epilogue of cubek's tensor-core GEMM, which adds
//! the bias but applies no activation).
use burn_cubecl::{tensor::CubeTensor, CubeRuntime};
use cubecl::prelude::*;

/// `t[i] ← t[i] / (1 + e^{−t[i]})`, one unit per element (surplus units return).
#[cube(launch_unchecked)]
pub fn silu_inplace_kernel<F: Float>(t: &mut Tensor<F>, n: u32, #[define(F)] _dtype: StorageType) {
    let i = (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) * CUBE_DIM_X + UNIT_POS_X;
    if i >= n {
        terminate!();
    }
    let v = f32::cast_from(t[i as usize]);
    t[i as usize] = F::cast_from(v / (f32::new(1.0) + (-v).exp()));
}

/// Launches [`silu_inplace_kernel`] over every element of the tight tensor `t`.
pub fn launch_silu_inplace<R: CubeRuntime>(t: &CubeTensor<R>) {
    crate::cube_util::assert_tight("silu in place", &[t]);
    let n = t.meta.shape().num_elements();
    if n == 0 {
        return;
    }
    let (gx, gy) = super::grid_2d(n.div_ceil(256));
    // SAFETY: one unit per element, bounded by `n`.
    unsafe {
        silu_inplace_kernel::launch_unchecked::<R>(
            &t.client,
            CubeCount::Static(gx, gy, 1),
            CubeDim::new_1d(256),
            t.clone().into_tensor_arg(),
            n as u32,
            t.dtype.into(),
        )
    }
}
