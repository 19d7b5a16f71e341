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
use crate::flex_buf::dense;

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
        let (x, gamma, beta) = (dense(x), dense(gamma), dense(beta));
        let xs: &[f32] = x.as_slice().expect("contiguous f32");
        let (g, b): (&[f32], &[f32]) = (gamma.as_slice().expect("f32"), beta.as_slice().expect("f32"));
        let n = xs.len().checked_div(c).unwrap_or(0);
        let zero = vec![0f32; c];
        let mean: Vec<f32> = column_sums(xs, c, &zero, false).iter().map(|s| (s / n as f64) as f32).collect();
        let var: Vec<f32> = column_sums(xs, c, &mean, true).iter().map(|s| (s / n as f64) as f32).collect();
        // γ/σ per channel: z = (x − μ)·k + β
        let k: Vec<f32> = var.iter().zip(g).map(|(v, g)| g / (v + spec.epsilon as f32).sqrt()).collect();
        let mut y = vec![0f32; xs.len()];
        if c > 0 {
            y.par_chunks_mut(ROWS * c).zip(xs.par_chunks(ROWS * c)).for_each(|(yr, xr)| {
                for (yrow, xrow) in yr.chunks_exact_mut(c).zip(xr.chunks_exact(c)) {
                    for ((((y, &v), &m), &k), &b) in yrow.iter_mut().zip(xrow).zip(&mean).zip(&k).zip(b) {
                        *y = activate((v - m) * k + b, spec.activation);
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
        let [x, gamma, beta, mean, var, dy] = [x, gamma, beta, mean, var, dy].map(dense);
        let f = |t: &FlexTensor| -> Vec<f32> { t.as_slice::<f32>().expect("contiguous f32").to_vec() };
        let (g, b, mu, var) = (f(&gamma), f(&beta), f(&mean), f(&var));
        let (xs, dys): (&[f32], &[f32]) = (x.as_slice().expect("f32"), dy.as_slice().expect("f32"));
        let n = xs.len().checked_div(c).unwrap_or(0);
        let inv: Vec<f32> = var.iter().map(|v| 1.0 / (v + spec.epsilon as f32).sqrt()).collect();
        // pass 1: dz (into the output buffer) and, per block, Σdz and Σdz·x̂
        let mut dx = vec![0f32; xs.len()];
        let partials: Vec<Vec<f64>> = if c == 0 {
            Vec::new()
        } else {
            dx.par_chunks_mut(ROWS * c)
                .zip(xs.par_chunks(ROWS * c).zip(dys.par_chunks(ROWS * c)))
                .map(|(dzr, (xr, dyr))| {
                    let (mut sb, mut sg) = (vec![0f64; c], vec![0f64; c]);
                    for ((dzrow, xrow), dyrow) in
                        dzr.chunks_exact_mut(c).zip(xr.chunks_exact(c)).zip(dyr.chunks_exact(c))
                    {
                        let per_channel = mu.iter().zip(&inv).zip(&g).zip(&b);
                        let acc = sb.iter_mut().zip(sg.iter_mut());
                        for (((dz, (&v, &dy)), (((&m, &i), &g), &b)), (sb, sg)) in
                            dzrow.iter_mut().zip(xrow.iter().zip(dyrow)).zip(per_channel).zip(acc)
                        {
                            let h = (v - m) * i;
                            *dz = dy * activate_grad(h * g + b, spec.activation);
                            *sb += *dz as f64;
                            *sg += (*dz * h) as f64;
                        }
                    }
                    sb.extend(sg);
                    sb
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
            let (db_n, dg_n): (Vec<f32>, Vec<f32>) = dbeta.iter().zip(&dgamma).map(|(b, g)| (b / nf, g / nf)).unzip();
            let k: Vec<f32> = g.iter().zip(&inv).map(|(g, i)| g * i).collect();
            dx.par_chunks_mut(ROWS * c).zip(xs.par_chunks(ROWS * c)).for_each(|(dr, xr)| {
                for (drow, xrow) in dr.chunks_exact_mut(c).zip(xr.chunks_exact(c)) {
                    let per_channel = mu.iter().zip(&inv).zip(&db_n).zip(&dg_n).zip(&k);
                    for ((d, &v), ((((&m, &i), &db), &dg), &k)) in drow.iter_mut().zip(xrow).zip(per_channel) {
                        *d = (*d - db - (v - m) * i * dg) * k;
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

/// `Σ_rows (x[row, j] − m[j])` per channel `j` of the row-major `[n, c]` `xs` (its square with `square`), in
/// f64: blocks of [`ROWS`] rows in parallel, then the blocks' sums in order.
fn column_sums(xs: &[f32], c: usize, m: &[f32], square: bool) -> Vec<f64> {
    if c == 0 {
        return Vec::new();
    }
    let partials: Vec<Vec<f64>> = xs
        .par_chunks(ROWS * c)
        .map(|block| {
            let mut s = vec![0f64; c];
            for row in block.chunks_exact(c) {
                for ((acc, &v), &m) in s.iter_mut().zip(row).zip(m) {
                    let d = (v - m) as f64;
                    *acc += if square { d * d } else { d };
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
