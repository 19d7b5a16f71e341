//! The elementwise passes, one unit per element of `[N, C]`, after the reductions: the forward output
//! `y = act(γ·(x − μ)/σ + β)` ([`apply_kernel`]) and the input gradient `dx = (γ/σ)·(dz − dβ/N − x̂·dγ/N)`
//! ([`dx_kernel`], `dz` recomputed from `x` and `dy`), `σ = √(σ² + eps)`; per element the reference's operations
//! in its order (`super::super::reference`).
use cubecl::prelude::*;

use super::{act_grad, ACT_SILU};

/// `y[i] = act(γ·(x − μ)/σ + β)`, channel `i mod C`; the `[C]` vectors f32.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn apply_kernel<F: Float>(
    x: &Tensor<F>,
    mean: &Tensor<f32>,
    var: &Tensor<f32>,
    gamma: &Tensor<f32>,
    beta: &Tensor<f32>,
    y: &mut Tensor<F>,
    total: u32,
    c: u32,
    eps: f32,
    #[comptime] act: u32,
    #[define(F)] _dtype: StorageType,
) {
    let i = (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) * CUBE_DIM_X + UNIT_POS_X;
    if i >= total {
        terminate!();
    }
    let ch = (i % c) as usize;
    let sd = (var[ch] + eps).sqrt();
    let mut v = (f32::cast_from(x[i as usize]) - mean[ch]) / sd * gamma[ch] + beta[ch];
    if act == ACT_SILU {
        v = v / (f32::new(1.0) + (-v).exp());
    }
    y[i as usize] = F::cast_from(v);
}

/// `dx[i] = (γ/σ)·(dz − dβ/N − x̂·dγ/N)`, channel `i mod C`; `dγ`, `dβ` from the reductions, the `[C]` vectors f32.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn dx_kernel<F: Float>(
    x: &Tensor<F>,
    dy: &Tensor<F>,
    mean: &Tensor<f32>,
    var: &Tensor<f32>,
    gamma: &Tensor<f32>,
    beta: &Tensor<f32>,
    dgamma: &Tensor<f32>,
    dbeta: &Tensor<f32>,
    dx: &mut Tensor<F>,
    total: u32,
    c: u32,
    rows: f32,
    eps: f32,
    #[comptime] act: u32,
    #[define(F)] _dtype: StorageType,
) {
    let i = (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) * CUBE_DIM_X + UNIT_POS_X;
    if i >= total {
        terminate!();
    }
    let ch = (i % c) as usize;
    let sd = (var[ch] + eps).sqrt();
    let g = gamma[ch];
    let xh = (f32::cast_from(x[i as usize]) - mean[ch]) / sd;
    let dz = act_grad(f32::cast_from(dy[i as usize]), xh * g + beta[ch], act);
    let v = (dz - dbeta[ch] / rows - xh * (dgamma[ch] / rows)) * (g / sd);
    dx[i as usize] = F::cast_from(v);
}
