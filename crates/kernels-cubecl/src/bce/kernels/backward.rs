//! BCE-with-logits backward kernel (gradient w.r.t. the logits only).
//!
//! # Math
//!
//! `∂ℓ/∂x = σ(x) − t` (from `ℓ = max(x, 0) − x·t + ln(1 + e^{−|x|})`: `∂/∂x ln(1 + e^{−|x|}) = −sign(x)·σ(−|x|)`),
//! so `d x = g · (σ(x) − t)`, with the stable `σ(x) = 1/(1 + e^{−x})` for `x ≥ 0` and
//! `e^{x}/(1 + e^{x})` for `x < 0` (`e^{−|x|}` never overflows). The targets are constants: no gradient.
//!
//! # Work split
//!
//! 1-D grid, one unit per element.
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::UNITS;

/// `σ(x)` without overflow: `1/(1 + u)` for `x ≥ 0`, `u/(1 + u)` otherwise, `u = e^{−|x|}` (shared with the
/// one-hot BCE backward).
#[cube]
pub fn stable_sigmoid(x: f32) -> f32 {
    let u = (-x.abs()).exp();
    let mut sig = u / (f32::new(1.0) + u);
    if x >= f32::new(0.0) {
        sig = f32::new(1.0) / (f32::new(1.0) + u);
    }
    sig
}

/// `logits`, `targets`, `d_loss` `[N]` → `d_logits [N]`.
#[cube(launch_unchecked)]
pub fn bce_bwd_kernel<F: Float>(
    logits: &Tensor<F>,
    targets: &Tensor<F>,
    d_loss: &Tensor<F>,
    d_logits: &mut Tensor<F>,
    n: u32,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i < n as usize {
        let x = f32::cast_from(logits[i]);
        let t = f32::cast_from(targets[i]);
        let g = f32::cast_from(d_loss[i]);
        d_logits[i] = F::cast_from(g * (stable_sigmoid(x) - t));
    }
}

/// Launches [`bce_bwd_kernel`]: all four tensors contiguous with the same element count and dtype (every
/// element of `d_logits` written). No launch when `N = 0`.
pub fn launch_bce_backward<R: CubeRuntime>(
    logits: &CubeTensor<R>,
    targets: &CubeTensor<R>,
    d_loss: &CubeTensor<R>,
    d_logits: &CubeTensor<R>,
) {
    crate::cube_util::assert_tight("launch_bce_backward", &[logits, targets, d_loss, d_logits]);
    let n = logits.meta.num_elements();
    assert!(
        targets.meta.num_elements() == n && d_loss.meta.num_elements() == n && d_logits.meta.num_elements() == n,
        "launch_bce_backward: sizes differ"
    );
    if n == 0 {
        return;
    }
    let client = logits.client.clone();
    let cube_dim = CubeDim::new_1d(UNITS);
    let cube_count = cubecl::calculate_cube_count_elemwise(&client, n, cube_dim);
    // SAFETY: every access is guarded by `i < N`, the element count of all four tensors.
    unsafe {
        bce_bwd_kernel::launch_unchecked::<R>(
            &client,
            cube_count,
            cube_dim,
            logits.clone().into_tensor_arg(),
            targets.clone().into_tensor_arg(),
            d_loss.clone().into_tensor_arg(),
            d_logits.clone().into_tensor_arg(),
            n as u32,
            logits.dtype.into(),
        )
    }
}
