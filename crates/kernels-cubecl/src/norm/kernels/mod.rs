//! CubeCL kernels of the training BatchNorm op (+ activation), f32 arithmetic whatever the storage dtype of `x`
//! and `dy`: per pass, the per-channel sums in two launches ([`reduce`]) and the elementwise output in one
//! ([`elementwise`]).
//!
//! Layout: `x`, `y`, `dy`, `dx`: `[N, C]` contiguous (the `N = B·H·W` rows of an NHWC activation); per-channel
//! vectors `[C]` f32; partials `[2, P, C]` f32 (the two sums of each of `P` row chunks, [`split`]).
pub mod elementwise;
pub mod reduce;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};
use cubecl::prelude::*;

/// Units per cube of every kernel here.
pub(crate) const UNITS: u32 = 256;

/// No activation / SiLU after the normalisation.
pub(crate) const ACT_NONE: u32 = 0;
pub(crate) const ACT_SILU: u32 = 1;

/// `dz` = `dy` through the activation's derivative at the pre-activation `z` (SiLU: `dy·s·(1 + z·(1 − s))`,
/// `s = sigmoid(z)`).
#[cube]
pub fn act_grad(dy: f32, z: f32, #[comptime] act: u32) -> f32 {
    let mut dz = dy;
    if act == ACT_SILU {
        let s = f32::new(1.0) / (f32::new(1.0) + (-z).exp());
        dz = dy * s * (f32::new(1.0) + z * (f32::new(1.0) - s));
    }
    dz
}

/// The split of a partial pass over `[n, c]`: `(tx, rows per cube, P)`. `tx` = channels per cube (`c` rounded
/// up to a power of two, at most 64); `P` cubes along the rows, each unit taking ≥ 16 rows, at most 1024 cubes.
pub fn split(n: usize, c: usize) -> (u32, u32, u32) {
    let tx = c.next_power_of_two().clamp(1, 64) as u32;
    let lanes = (UNITS / tx) as usize;
    let parts = n.div_ceil(lanes * 16).clamp(1, 1024);
    let rows = n.div_ceil(parts).max(1);
    (tx, rows as u32, n.div_ceil(rows).max(1) as u32)
}

/// A 2-D grid of `UNITS`-unit cubes covering `total` elements (the elementwise kernels index
/// `(CUBE_POS_Y·CUBE_COUNT_X + CUBE_POS_X)·UNITS + UNIT_POS_X`).
fn elementwise_count(total: usize) -> CubeCount {
    let cubes = total.div_ceil(UNITS as usize) as u32;
    let x = cubes.min(65_535);
    CubeCount::Static(x, cubes.div_ceil(x), 1)
}

/// Launches [`reduce::finish_kernel`] over `parts` partials of `x [n, c]` into `out0`, `out1` `[c]`.
///
/// # Safety
/// The caller has checked the shapes (`part` is `[2, parts, c]`, the outputs `[c]`, all tight), as the launchers do.
unsafe fn launch_finish<R: CubeRuntime>(
    x: &CubeTensor<R>,
    part: &CubeTensor<R>,
    out0: &CubeTensor<R>,
    out1: &CubeTensor<R>,
    parts: u32,
    stats: bool,
) {
    let [n, c] = x.meta.shape().dims::<2>();
    // SAFETY: see the function's contract; cube `ch < c` reads `part[·, q, ch]`, `q < parts`, writes `out[ch]`.
    unsafe {
        reduce::finish_kernel::launch_unchecked::<R>(
            &x.client,
            CubeCount::Static(c as u32, 1, 1),
            CubeDim::new_1d(UNITS),
            x.clone().into_tensor_arg(),
            part.clone().into_tensor_arg(),
            out0.clone().into_tensor_arg(),
            out1.clone().into_tensor_arg(),
            n as u32,
            c as u32,
            parts,
            stats,
            x.dtype.into(),
        )
    }
}

/// Forward: `x [n, c]` → `y` (x's dtype, same shape), `mean`, `var` `[c]` f32; `part` (`[2, P, c]` f32, P from
/// [`split`]) is scratch. All tight; `0 < n·c < 2³¹`.
#[allow(clippy::too_many_arguments)]
pub fn launch_forward<R: CubeRuntime>(
    x: &CubeTensor<R>,
    gamma: &CubeTensor<R>,
    beta: &CubeTensor<R>,
    part: &CubeTensor<R>,
    y: &CubeTensor<R>,
    mean: &CubeTensor<R>,
    var: &CubeTensor<R>,
    eps: f32,
    act: u32,
) {
    crate::cube_util::assert_tight("batch_norm forward", &[x, gamma, beta, part, y, mean, var]);
    let [n, c] = x.meta.shape().dims::<2>();
    let (tx, rows, parts) = split(n, c);
    assert!(
        n > 0 && c > 0 && n * c <= i32::MAX as usize && y.meta.shape() == x.meta.shape(),
        "batch_norm forward: shapes"
    );
    assert!(part.meta.num_elements() == 2 * parts as usize * c, "batch_norm forward: partials");
    for t in [gamma, beta, mean, var] {
        assert!(t.meta.num_elements() == c, "batch_norm forward: a [C] vector of another size");
    }
    let client = x.client.clone();
    let dt: StorageType = x.dtype.into();
    // SAFETY: rows `< n` and channels `< c` are read; partials `[2, parts, c]`, the `[c]` outputs and `y` are
    // written at indices inside those shapes (asserted above; the elementwise kernel returns past `n·c`).
    unsafe {
        reduce::stats_partials_kernel::launch_unchecked::<R>(
            &client,
            CubeCount::Static((c as u32).div_ceil(tx), parts, 1),
            CubeDim::new_1d(UNITS),
            x.clone().into_tensor_arg(),
            part.clone().into_tensor_arg(),
            n as u32,
            c as u32,
            rows,
            tx,
            dt,
        );
        launch_finish(x, part, mean, var, parts, true);
        elementwise::apply_kernel::launch_unchecked::<R>(
            &client,
            elementwise_count(n * c),
            CubeDim::new_1d(UNITS),
            x.clone().into_tensor_arg(),
            mean.clone().into_tensor_arg(),
            var.clone().into_tensor_arg(),
            gamma.clone().into_tensor_arg(),
            beta.clone().into_tensor_arg(),
            y.clone().into_tensor_arg(),
            (n * c) as u32,
            c as u32,
            eps,
            act,
            dt,
        );
    }
}

/// Backward: `x`, `dy` `[n, c]` and the f32 `[c]` vectors `[μ, σ², γ, β]` → `dx` (x's dtype), `dγ`, `dβ` `[c]`
/// f32; `part` as in [`launch_forward`].
#[allow(clippy::too_many_arguments)]
pub fn launch_backward<R: CubeRuntime>(
    x: &CubeTensor<R>,
    dy: &CubeTensor<R>,
    vectors: [&CubeTensor<R>; 4],
    part: &CubeTensor<R>,
    dx: &CubeTensor<R>,
    dgamma: &CubeTensor<R>,
    dbeta: &CubeTensor<R>,
    eps: f32,
    act: u32,
) {
    let [mean, var, gamma, beta] = vectors;
    crate::cube_util::assert_tight("batch_norm backward", &[x, dy, mean, var, gamma, beta, part, dx, dgamma, dbeta]);
    let [n, c] = x.meta.shape().dims::<2>();
    let (tx, rows, parts) = split(n, c);
    assert!(
        n > 0 && c > 0 && n * c <= i32::MAX as usize && dy.meta.shape() == x.meta.shape(),
        "batch_norm backward: shapes"
    );
    assert!(dx.meta.shape() == x.meta.shape(), "batch_norm backward: dx shape");
    assert!(part.meta.num_elements() == 2 * parts as usize * c, "batch_norm backward: partials");
    for t in [mean, var, gamma, beta, dgamma, dbeta] {
        assert!(t.meta.num_elements() == c, "batch_norm backward: a [C] vector of another size");
    }
    let client = x.client.clone();
    let dt: StorageType = x.dtype.into();
    // SAFETY: as in `launch_forward`.
    unsafe {
        reduce::grad_partials_kernel::launch_unchecked::<R>(
            &client,
            CubeCount::Static((c as u32).div_ceil(tx), parts, 1),
            CubeDim::new_1d(UNITS),
            x.clone().into_tensor_arg(),
            dy.clone().into_tensor_arg(),
            mean.clone().into_tensor_arg(),
            var.clone().into_tensor_arg(),
            gamma.clone().into_tensor_arg(),
            beta.clone().into_tensor_arg(),
            part.clone().into_tensor_arg(),
            n as u32,
            c as u32,
            rows,
            tx,
            eps,
            act,
            dt,
        );
        launch_finish(x, part, dgamma, dbeta, parts, false);
        elementwise::dx_kernel::launch_unchecked::<R>(
            &client,
            elementwise_count(n * c),
            CubeDim::new_1d(UNITS),
            x.clone().into_tensor_arg(),
            dy.clone().into_tensor_arg(),
            mean.clone().into_tensor_arg(),
            var.clone().into_tensor_arg(),
            gamma.clone().into_tensor_arg(),
            beta.clone().into_tensor_arg(),
            dgamma.clone().into_tensor_arg(),
            dbeta.clone().into_tensor_arg(),
            dx.clone().into_tensor_arg(),
            (n * c) as u32,
            c as u32,
            n as f32,
            eps,
            act,
            dt,
        );
    }
}

/// One representative specialisation of each kernel (f32 storage) for the source snapshots of
/// [`crate::snapshot`] (defined, never launched).
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, R, S, T};
    vec![
        kernel_def!(
            "norm_stats_partials_f32",
            reduce::stats_partials_kernel::StatsPartialsKernel<R>,
            units = UNITS,
            [T, T, S, S, S, S, F32]
        ),
        kernel_def!(
            "norm_grad_partials_f32_silu",
            reduce::grad_partials_kernel::GradPartialsKernel<R>,
            units = UNITS,
            [T, T, T, T, T, T, T, S, S, S, S, S, ACT_SILU, F32]
        ),
        kernel_def!(
            "norm_finish_stats_f32",
            reduce::finish_kernel::FinishKernel<R>,
            units = UNITS,
            [T, T, T, T, S, S, S, true, F32]
        ),
        kernel_def!(
            "norm_apply_f32_silu",
            elementwise::apply_kernel::ApplyKernel<R>,
            units = UNITS,
            [T, T, T, T, T, T, S, S, S, ACT_SILU, F32]
        ),
        kernel_def!(
            "norm_dx_f32_silu",
            elementwise::dx_kernel::DxKernel<R>,
            units = UNITS,
            [T, T, T, T, T, T, T, T, T, S, S, S, S, ACT_SILU, F32]
        ),
    ]
}
