//! [`NormBackend`] for `Flex` (CPU): the training BatchNorm + SiLU as loops over the `[n, C]` rows (f32; other dtypes
//! take the reference). The reference's tensor ops cost a CPU training step a quarter of its time here: SiLU's
//! `exp` one scalar libm call per element through Flex's generic unary op (forward, and again in the backward) and
//! the broadcasts of `[1, 1, 1, C]` statistics walked element by element (`perf`, 2026-12-07: 25 % of a yolo26n
//! step at batch 16, 160 px).
//!
//! Same formulas as [`super::reference`] (see the module doc); the per-channel sums are accumulated in f64, per
//! block of rows in parallel and then over the blocks in order (so a run is reproducible), SiLU's `exp` is the conv
//! epilogue's vectorisable one. Agrees with the f64 reference to f32 rounding (tests).

use burn::backend::flex::FlexTensor;
use burn::backend::Flex;
use burn::tensor::{DType, TensorData};
use rayon::prelude::*;

use super::{reference, BatchNormSpec, NormBackend};
use crate::conv::flex::exp;
use crate::conv::Activation;

/// Rows per parallel task (and per block of partial sums).
const ROWS: usize = 256;

impl NormBackend for Flex {
    fn batch_norm_train(
        x: FlexTensor,
        gamma: FlexTensor,
        beta: FlexTensor,
        spec: BatchNormSpec,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        if [&x, &gamma, &beta].iter().any(|t| t.dtype() != DType::F32) {
            return reference::forward::<Self>(x, gamma, beta, spec);
        }
        let shape = x.layout().shape().clone();
        let c = shape[shape.num_dims() - 1];
        let (x, gamma, beta) = (x.to_contiguous(), gamma.to_contiguous(), beta.to_contiguous());
        let xs: &[f32] = x.as_slice().expect("contiguous f32");
        let (g, b): (&[f32], &[f32]) = (gamma.as_slice().expect("f32"), beta.as_slice().expect("f32"));
        let n = if c == 0 { 0 } else { xs.len() / c };
        let mean: Vec<f32> = column_sums(xs, c, |_, v| v as f64).iter().map(|s| (s / n as f64) as f32).collect();
        let var: Vec<f32> =
            column_sums(xs, c, |j, v| ((v - mean[j]) as f64).powi(2)).iter().map(|s| (s / n as f64) as f32).collect();
        let inv: Vec<f32> = var.iter().map(|v| 1.0 / (v + spec.epsilon as f32).sqrt()).collect();
        let mut y = vec![0f32; xs.len()];
        if c > 0 {
            y.par_chunks_mut(ROWS * c).zip(xs.par_chunks(ROWS * c)).for_each(|(yr, xr)| {
                for (yrow, xrow) in yr.chunks_exact_mut(c).zip(xr.chunks_exact(c)) {
                    for j in 0..c {
                        let z = (xrow[j] - mean[j]) * inv[j] * g[j] + b[j];
                        yrow[j] = activate(z, spec.activation);
                    }
                }
            });
        }
        (
            FlexTensor::from_data(TensorData::new(y, shape)),
            FlexTensor::from_data(TensorData::new(mean, [c])),
            FlexTensor::from_data(TensorData::new(var, [c])),
        )
    }

    fn batch_norm_train_backward(
        x: FlexTensor,
        gamma: FlexTensor,
        beta: FlexTensor,
        mean: FlexTensor,
        var: FlexTensor,
        dy: FlexTensor,
        spec: BatchNormSpec,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        if [&x, &gamma, &beta, &mean, &var, &dy].iter().any(|t| t.dtype() != DType::F32) {
            return reference::backward::<Self>(x, gamma, beta, mean, var, dy, spec);
        }
        let shape = x.layout().shape().clone();
        let c = shape[shape.num_dims() - 1];
        let [x, gamma, beta, mean, var, dy] = [x, gamma, beta, mean, var, dy].map(|t| t.to_contiguous());
        let f = |t: &FlexTensor| -> Vec<f32> { t.as_slice::<f32>().expect("contiguous f32").to_vec() };
        let (g, b, mu, var) = (f(&gamma), f(&beta), f(&mean), f(&var));
        let (xs, dys): (&[f32], &[f32]) = (x.as_slice().expect("f32"), dy.as_slice().expect("f32"));
        let n = if c == 0 { 0 } else { xs.len() / c };
        let inv: Vec<f32> = var.iter().map(|v| 1.0 / (v + spec.epsilon as f32).sqrt()).collect();
        let xhat = |j: usize, v: f32| (v - mu[j]) * inv[j];
        // pass 1: dz (into the output buffer) and, per block, Σdz and Σdz·x̂
        let mut dx = vec![0f32; xs.len()];
        let partials: Vec<Vec<f64>> = if c == 0 {
            Vec::new()
        } else {
            dx.par_chunks_mut(ROWS * c)
                .zip(xs.par_chunks(ROWS * c).zip(dys.par_chunks(ROWS * c)))
                .map(|(dzr, (xr, dyr))| {
                    let mut s = vec![0f64; 2 * c];
                    for ((dzrow, xrow), dyrow) in
                        dzr.chunks_exact_mut(c).zip(xr.chunks_exact(c)).zip(dyr.chunks_exact(c))
                    {
                        for j in 0..c {
                            let h = xhat(j, xrow[j]);
                            let dz = dyrow[j] * activate_grad(h * g[j] + b[j], spec.activation);
                            dzrow[j] = dz;
                            s[j] += dz as f64;
                            s[c + j] += (dz * h) as f64;
                        }
                    }
                    s
                })
                .collect()
        };
        let mut sums = vec![0f64; 2 * c];
        for p in &partials {
            for (s, v) in sums.iter_mut().zip(p) {
                *s += v;
            }
        }
        let dbeta: Vec<f32> = sums[..c].iter().map(|&v| v as f32).collect();
        let dgamma: Vec<f32> = sums[c..].iter().map(|&v| v as f32).collect();
        // pass 2: dx = (γ/σ)·(dz − dβ/n − x̂·dγ/n), in place
        if c > 0 {
            let nf = n as f32;
            dx.par_chunks_mut(ROWS * c).zip(xs.par_chunks(ROWS * c)).for_each(|(dr, xr)| {
                for (drow, xrow) in dr.chunks_exact_mut(c).zip(xr.chunks_exact(c)) {
                    for j in 0..c {
                        let h = xhat(j, xrow[j]);
                        drow[j] = (drow[j] - dbeta[j] / nf - h * (dgamma[j] / nf)) * (g[j] * inv[j]);
                    }
                }
            });
        }
        (
            FlexTensor::from_data(TensorData::new(dx, shape)),
            FlexTensor::from_data(TensorData::new(dgamma, [c])),
            FlexTensor::from_data(TensorData::new(dbeta, [c])),
        )
    }
}

/// The activation of the normalised value `z`.
#[inline(always)]
fn activate(z: f32, act: Activation) -> f32 {
    match act {
        Activation::None => z,
        Activation::Silu => z / (1.0 + exp(-z)),
    }
}

/// `d act(z) / dz`: SiLU's `s·(1 + z·(1 − s))`, `s = sigmoid(z)`.
#[inline(always)]
fn activate_grad(z: f32, act: Activation) -> f32 {
    match act {
        Activation::None => 1.0,
        Activation::Silu => {
            let s = 1.0 / (1.0 + exp(-z));
            s * (1.0 + z * (1.0 - s))
        }
    }
}

/// `Σ_rows f(j, x[row, j])` per channel `j` of the row-major `[n, c]` `xs`, in f64: blocks of [`ROWS`] rows in
/// parallel, then the blocks' sums in order.
fn column_sums(xs: &[f32], c: usize, f: impl Fn(usize, f32) -> f64 + Sync) -> Vec<f64> {
    if c == 0 {
        return Vec::new();
    }
    let partials: Vec<Vec<f64>> = xs
        .par_chunks(ROWS * c)
        .map(|block| {
            let mut s = vec![0f64; c];
            for row in block.chunks_exact(c) {
                for (j, (acc, &v)) in s.iter_mut().zip(row).enumerate() {
                    *acc += f(j, v);
                }
            }
            s
        })
        .collect();
    let mut sums = vec![0f64; c];
    for p in &partials {
        for (s, v) in sums.iter_mut().zip(p) {
            *s += v;
        }
    }
    sums
}
