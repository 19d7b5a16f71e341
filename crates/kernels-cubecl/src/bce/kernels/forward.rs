//! BCE-with-logits forward kernel.
//!
//! # Math
//!
//! `ℓ(x, t) = −t·ln σ(x) − (1 − t)·ln(1 − σ(x))`, written in PyTorch's stable form
//!
//! ```text
//! ℓ = max(x, 0) − x·t + ln(1 + e^{−|x|})
//! ```
//!
//! (no overflow for any `x`: `e^{−|x|} ∈ (0, 1]`). `ln(1 + u)` is evaluated as `ln(w)·u/(w − 1)` with
//! `w = 1 + u` (`u` itself when `w` rounds to 1), accurate to a few ulps for small `u` (large `|x|`)
//! where `ln(1 + u)` alone would lose all digits (WGSL has no `log1p`).
//!
//! # Work split
//!
//! 1-D grid, one unit per element.
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::UNITS;

/// `ln(1 + u)` for `u ∈ [0, 1]`, accurate for small `u`.
#[cube]
pub fn log1p_small(u: f32) -> f32 {
    let w = f32::new(1.0) + u;
    let mut r = u;
    if w != f32::new(1.0) {
        r = w.ln() * u / (w - f32::new(1.0));
    }
    r
}

/// `logits`, `targets` `[N]` → `loss [N]`.
#[cube(launch_unchecked)]
pub fn bce_fwd_kernel<F: Float>(
    logits: &Tensor<F>,
    targets: &Tensor<F>,
    loss: &mut Tensor<F>,
    n: u32,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i < n as usize {
        let x = f32::cast_from(logits[i]);
        let t = f32::cast_from(targets[i]);
        let u = (-x.abs()).exp();
        loss[i] = F::cast_from(max(x, f32::new(0.0)) - x * t + log1p_small(u));
    }
}

/// Launches [`bce_fwd_kernel`]: `logits`, `targets`, `loss` contiguous, same element count and dtype
/// (every element of `loss` written). No launch when `N = 0`.
pub fn launch_bce_forward<R: CubeRuntime>(logits: &CubeTensor<R>, targets: &CubeTensor<R>, loss: &CubeTensor<R>) {
    crate::attention::kernels::assert_tight("launch_bce_forward", &[logits, targets, loss]);
    let n = logits.meta.num_elements();
    assert!(targets.meta.num_elements() == n && loss.meta.num_elements() == n, "launch_bce_forward: sizes differ");
    if n == 0 {
        return;
    }
    let client = logits.client.clone();
    let cube_dim = CubeDim::new_1d(UNITS);
    let cube_count = cubecl::calculate_cube_count_elemwise(&client, n, cube_dim);
    // SAFETY: every access is guarded by `i < N`, the element count of all three tensors.
    unsafe {
        bce_fwd_kernel::launch_unchecked::<R>(
            &client,
            cube_count,
            cube_dim,
            logits.clone().into_tensor_arg(),
            targets.clone().into_tensor_arg(),
            loss.clone().into_tensor_arg(),
            n as u32,
            logits.dtype.into(),
        )
    }
}
