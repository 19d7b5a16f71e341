//! The per-channel reductions: the batch statistics (forward) and the sums `Σ dz·x̂`, `Σ dz` of the backward, each
//! as one pass over the activation that writes per-chunk partial sums ([`stats_partials_kernel`],
//! [`grad_partials_kernel`]) and one small pass that adds them up ([`finish_kernel`]).
//!
//! Work split of the partial passes: cube `(CUBE_POS_X, CUBE_POS_Y = p)` covers `tx` channels (`tx` a power of
//! two ≤ [`UNITS`], neighbouring units on neighbouring channels: each row's channels are read coalesced) and
//! rows `[p·rows_per_cube, (p+1)·rows_per_cube)`; its `UNITS / tx` lanes take every `(UNITS / tx)`-th row of
//! that range, then add their sums in shared memory (a tree over the lanes). The finishing passes run one cube
//! per channel, each unit adding every `UNITS`-th partial, then a tree.
//!
//! Statistics: the sums are of `d = x − x[0, c]` (the channel's first value as a shift, so that `Σd²/N −
//! (Σd/N)²` does not cancel the way `Σx²/N − μ²` does when `|μ| ≫ σ`): `μ = x[0, c] + Σd/N`, `σ² = max(Σd²/N −
//! (Σd/N)², 0)` (biased, as the op returns it). PyTorch computes the same two quantities with Welford's update.
use cubecl::prelude::*;

use super::{act_grad, UNITS};

/// Adds `a[UNIT_POS_X]` and `b[UNIT_POS_X]` over the lanes (`UNIT_POS_X / tx`) of the cube into lane 0
/// (`a[lx]`, `b[lx]` for the cube's `tx` channels). `a`, `b` hold `UNITS` values; `UNITS / tx` is a power of two.
#[cube]
fn lane_tree(a: &mut SharedMemory<f32>, b: &mut SharedMemory<f32>, tx: u32) {
    let u = UNIT_POS_X;
    let lane = u / tx;
    let mut half = CUBE_DIM_X / tx / 2;
    while half > 0 {
        if lane < half {
            let o = (u + half * tx) as usize;
            a[u as usize] += a[o];
            b[u as usize] += b[o];
        }
        sync_cube();
        half /= 2;
    }
}

/// The end of a partial pass: adds each unit's two sums `(s0, s1)` over the cube's lanes and writes the cube's
/// `part[0, p, ch]`, `part[1, p, ch]` (`p = CUBE_POS_Y`, channel `CUBE_POS_X·tx + UNIT_POS_X mod tx`).
#[cube]
fn store_partials(s0: f32, s1: f32, part: &mut Tensor<f32>, c: u32, tx: u32) {
    let lx = UNIT_POS_X % tx;
    let ch = CUBE_POS_X * tx + lx;
    let p = CUBE_POS_Y;
    let mut a = SharedMemory::<f32>::new(UNITS as usize);
    let mut b = SharedMemory::<f32>::new(UNITS as usize);
    a[UNIT_POS_X as usize] = s0;
    b[UNIT_POS_X as usize] = s1;
    sync_cube();
    lane_tree(&mut a, &mut b, tx);
    if UNIT_POS_X / tx == 0 && ch < c {
        let parts = CUBE_COUNT_Y;
        part[(p * c + ch) as usize] = a[lx as usize];
        part[((parts + p) * c + ch) as usize] = b[lx as usize];
    }
}

/// Forward partials: `part[0, p, c] = Σ d`, `part[1, p, c] = Σ d²` over the cube's rows, `d = x − x[0, c]`.
#[cube(launch_unchecked)]
pub fn stats_partials_kernel<F: Float>(
    x: &Tensor<F>,
    part: &mut Tensor<f32>,
    n: u32,
    c: u32,
    rows_per_cube: u32,
    tx: u32,
    #[define(F)] _dtype: StorageType,
) {
    let lx = UNIT_POS_X % tx;
    let lane = UNIT_POS_X / tx;
    let lanes = CUBE_DIM_X / tx;
    let ch = CUBE_POS_X * tx + lx;
    let p = CUBE_POS_Y;
    let begin = p * rows_per_cube;
    let end = min(n, begin + rows_per_cube);
    let mut s1 = f32::new(0.0);
    let mut s2 = f32::new(0.0);
    if ch < c {
        let shift = f32::cast_from(x[ch as usize]);
        let mut r = begin + lane;
        while r < end {
            let d = f32::cast_from(x[(r * c + ch) as usize]) - shift;
            s1 += d;
            s2 += d * d;
            r += lanes;
        }
    }
    store_partials(s1, s2, part, c, tx);
}

/// Backward partials: `part[0, p, c] = Σ dz·x̂`, `part[1, p, c] = Σ dz` over the cube's rows, with `x̂ = (x − μ)/σ`,
/// `σ = √(σ² + eps)`, `z = γ·x̂ + β` and `dz` = `dy` through the activation's derivative at `z`.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn grad_partials_kernel<F: Float>(
    x: &Tensor<F>,
    dy: &Tensor<F>,
    mean: &Tensor<f32>,
    var: &Tensor<f32>,
    gamma: &Tensor<f32>,
    beta: &Tensor<f32>,
    part: &mut Tensor<f32>,
    n: u32,
    c: u32,
    rows_per_cube: u32,
    tx: u32,
    eps: f32,
    #[comptime] act: u32,
    #[define(F)] _dtype: StorageType,
) {
    let lx = UNIT_POS_X % tx;
    let lane = UNIT_POS_X / tx;
    let lanes = CUBE_DIM_X / tx;
    let ch = CUBE_POS_X * tx + lx;
    let p = CUBE_POS_Y;
    let begin = p * rows_per_cube;
    let end = min(n, begin + rows_per_cube);
    let mut sg = f32::new(0.0);
    let mut sb = f32::new(0.0);
    if ch < c {
        let m = mean[ch as usize];
        let sd = (var[ch as usize] + eps).sqrt();
        let g = gamma[ch as usize];
        let bt = beta[ch as usize];
        let mut r = begin + lane;
        while r < end {
            let i = (r * c + ch) as usize;
            let xh = (f32::cast_from(x[i]) - m) / sd;
            let dz = act_grad(f32::cast_from(dy[i]), xh * g + bt, act);
            sg += dz * xh;
            sb += dz;
            r += lanes;
        }
    }
    store_partials(sg, sb, part, c, tx);
}

/// Finishing pass, cube `c` = channel: adds the `P` partials of both sums; with `stats`, turns them into
/// `out0 = μ`, `out1 = σ²` (see the module doc; `x` read for the shift), else `out0 = Σ₀`, `out1 = Σ₁`.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn finish_kernel<F: Float>(
    x: &Tensor<F>,
    part: &Tensor<f32>,
    out0: &mut Tensor<f32>,
    out1: &mut Tensor<f32>,
    n: u32,
    c: u32,
    parts: u32,
    #[comptime] stats: bool,
    #[define(F)] _dtype: StorageType,
) {
    let ch = CUBE_POS_X;
    let mut s0 = f32::new(0.0);
    let mut s1 = f32::new(0.0);
    let mut q = UNIT_POS_X;
    while q < parts {
        s0 += part[(q * c + ch) as usize];
        s1 += part[((parts + q) * c + ch) as usize];
        q += CUBE_DIM_X;
    }
    let mut a = SharedMemory::<f32>::new(UNITS as usize);
    let mut b = SharedMemory::<f32>::new(UNITS as usize);
    a[UNIT_POS_X as usize] = s0;
    b[UNIT_POS_X as usize] = s1;
    sync_cube();
    lane_tree(&mut a, &mut b, 1u32);
    if UNIT_POS_X == 0 {
        if stats {
            let nf = f32::cast_from(n);
            let m1 = a[0] / nf;
            out0[ch as usize] = f32::cast_from(x[ch as usize]) + m1;
            let v = b[0] / nf - m1 * m1;
            out1[ch as usize] = select(v > f32::new(0.0), v, f32::new(0.0));
        } else {
            out0[ch as usize] = a[0];
            out1[ch as usize] = b[0];
        }
    }
}
