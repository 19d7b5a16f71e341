//! The training BatchNorm op against float64 loops (`naive`): forward (output and statistics) and the gradients of
//! `Σ y·r` for `x`, `γ`, `β`, with and without SiLU, on `Flex` (f64, f32) and on wgpu (`Autodiff<Fusion>` and
//! `Autodiff<CubeBackend>`, rows staged as the model stages them; f16 through `Fusion`), the CubeCL kernels launched
//! directly into NaN-poisoned outputs (`check_kernels_poisoned`, wgpu and CUDA). Flex's forward is also checked against the
//! tensor-op formula the model used before this op (`old_formula`).
use burn::backend::{Autodiff, Flex};
use burn::tensor::{backend::AutodiffBackend, backend::Backend, DType, Tensor};

use super::{batch_norm_train, BatchNormSpec, NormBackend};
use crate::conv::{reduce_rows, Activation};
use crate::test_util::*;

/// One case: `x` as `[A1, A2, A3, C]`, `γ`, `β` and the upstream gradient `r`.
struct Case {
    shape: [usize; 4],
    x: Vec<f32>,
    gamma: Vec<f32>,
    beta: Vec<f32>,
    r: Vec<f32>,
}

fn case(shape: [usize; 4], seed: u64) -> Case {
    let mut rng = Rng::new(seed);
    let n: usize = shape.iter().product();
    let c = shape[3];
    // a per-channel offset and scale so the statistics are not trivial
    let x = (0..n).map(|i| rng.range(-1.0, 1.0) * (1.0 + (i % c) as f32 * 0.3) + (i % c) as f32 * 0.5 - 1.0).collect();
    let gamma = (0..c).map(|_| rng.range(0.5, 1.5)).collect();
    let beta = (0..c).map(|_| rng.range(-0.5, 0.5)).collect();
    Case { shape, x, gamma, beta, r: rng.uniform(n, 1.0) }
}

/// f64 loops: `(y, mean, var, dx, dγ, dβ)` for `L = Σ y·r`.
#[allow(clippy::type_complexity)]
fn naive(k: &Case, spec: BatchNormSpec) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let c = k.shape[3];
    let n = k.x.len() / c;
    let (mut mean, mut var) = (vec![0.0f64; c], vec![0.0f64; c]);
    for (i, &v) in k.x.iter().enumerate() {
        mean[i % c] += v as f64 / n as f64;
    }
    for (i, &v) in k.x.iter().enumerate() {
        var[i % c] += (v as f64 - mean[i % c]).powi(2) / n as f64;
    }
    let std: Vec<f64> = var.iter().map(|v| (v + spec.epsilon).sqrt()).collect();
    let xhat: Vec<f64> = k.x.iter().enumerate().map(|(i, &v)| (v as f64 - mean[i % c]) / std[i % c]).collect();
    let z: Vec<f64> = xhat.iter().enumerate().map(|(i, h)| h * k.gamma[i % c] as f64 + k.beta[i % c] as f64).collect();
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let (y, dz): (Vec<f64>, Vec<f64>) = z
        .iter()
        .zip(&k.r)
        .map(|(&v, &r)| match spec.activation {
            Activation::None => (v, r as f64),
            Activation::Silu => (v * sig(v), r as f64 * (sig(v) + v * sig(v) * (1.0 - sig(v)))),
        })
        .unzip();
    let (mut dg, mut db) = (vec![0.0f64; c], vec![0.0f64; c]);
    for i in 0..k.x.len() {
        db[i % c] += dz[i];
        dg[i % c] += dz[i] * xhat[i];
    }
    let dx = (0..k.x.len())
        .map(|i| {
            let ch = i % c;
            k.gamma[ch] as f64 / std[ch] * (dz[i] - db[ch] / n as f64 - xhat[i] * dg[ch] / n as f64)
        })
        .collect();
    (y, mean, var, dx, dg, db)
}

/// (the fourth: more rows than one of Flex's parallel blocks, two row chunks of the CubeCL kernels; the last: 80
/// channels = two channel blocks of 64, 10 row chunks)
const SHAPES: [[usize; 4]; 5] =
    [[2 * 5 * 7, 1, 1, 6], [6, 4, 3, 5], [3, 8, 4, 16], [2 * 20 * 20, 1, 1, 6], [2, 16, 20, 80]];

fn specs() -> [BatchNormSpec; 2] {
    [
        BatchNormSpec { epsilon: 1e-3, activation: Activation::Silu },
        BatchNormSpec { epsilon: 1e-5, activation: Activation::None },
    ]
}

/// Forward and gradients of the op on `AB` against [`naive`] (relative to each output's largest value).
fn check<AB: AutodiffBackend<InnerBackend: NormBackend> + NormBackend>(
    device: &AB::Device,
    dtype: DType,
    seed: u64,
    tol: f64,
) {
    for (s, shape) in SHAPES.into_iter().enumerate() {
        for spec in specs() {
            let k = case(shape, seed + s as u64);
            let c = shape[3];
            let (y, mean, var, dx, dg, db) = naive(&k, spec);
            let x = tensor::<AB, 4>(&k.x, shape, dtype, device).require_grad();
            let g = tensor::<AB, 1>(&k.gamma, [c], dtype, device).require_grad();
            let b = tensor::<AB, 1>(&k.beta, [c], dtype, device).require_grad();
            let r = tensor::<AB, 4>(&k.r, shape, dtype, device);
            let (out, m, v) = batch_norm_train(x.clone(), g.clone(), b.clone(), spec);
            let what = format!("{shape:?} {:?}", spec.activation);
            assert_close(&format!("{what} y"), &to_vec(out.clone()), &y, tol);
            assert_close(&format!("{what} mean"), &to_vec(m), &mean, tol);
            assert_close(&format!("{what} var"), &to_vec(v), &var, tol);
            let grads = (out * r).sum().backward();
            assert_close(&format!("{what} dx"), &to_vec(x.grad(&grads).unwrap()), &dx, tol);
            assert_close(&format!("{what} dgamma"), &to_vec(g.grad(&grads).unwrap()), &dg, tol);
            assert_close(&format!("{what} dbeta"), &to_vec(b.grad(&grads).unwrap()), &db, tol);
        }
    }
}

/// The formula `yolo26-model` computed with tensor ops before this op (Burn differentiated it op by op).
fn old_formula<B: Backend>(x: Tensor<B, 4>, g: Tensor<B, 1>, b: Tensor<B, 1>, spec: BatchNormSpec) -> Tensor<B, 4> {
    let c = x.dims()[3];
    let mean = reduce_rows(x.clone(), true);
    let var = reduce_rows(x.clone().sub(mean.clone()).square(), true);
    let std = var.add_scalar(spec.epsilon).sqrt();
    let y = x.sub(mean).div(std).mul(g.reshape([1, 1, 1, c])).add(b.reshape([1, 1, 1, c]));
    match spec.activation {
        Activation::None => y,
        Activation::Silu => burn::tensor::activation::silu(y),
    }
}

#[test]
fn norm_reference_f64() {
    // read back as f32 (`assert_close`), so f32 rounding is the floor
    check::<Autodiff<Flex>>(&Default::default(), DType::F64, 10, 1e-7);
}

/// Flex's loops (`flex.rs`) against the f64 loops, and against the tensor-op formula the model used before this op
/// (which the other backends still run): equal to f32 rounding.
#[test]
fn norm_flex_f32_and_the_old_formula() {
    check::<Autodiff<Flex>>(&Default::default(), DType::F32, 20, 2e-5);
    let device = Default::default();
    for spec in specs() {
        let k = case([4, 30, 5, 7], 30);
        let x = tensor::<Flex, 4>(&k.x, k.shape, DType::F32, &device);
        let g = tensor::<Flex, 1>(&k.gamma, [7], DType::F32, &device);
        let b = tensor::<Flex, 1>(&k.beta, [7], DType::F32, &device);
        let (y, _, _) = batch_norm_train(x.clone(), g.clone(), b.clone(), spec);
        let old = old_formula(x, g, b, spec);
        let old: Vec<f64> = to_vec(old).into_iter().map(f64::from).collect();
        assert_close(&format!("{spec:?}: the old formula"), &to_vec(y), &old, 2e-6);
    }
}

#[cfg(feature = "wgpu")]
#[test]
fn norm_wgpu_autodiff() {
    use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
    let device = WgpuDevice::DefaultDevice;
    check::<Autodiff<burn::backend::Wgpu>>(&device, DType::F32, 40, 2e-5);
    check::<Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>>(&device, DType::F32, 50, 2e-5);
    // f16 activations and parameters: the kernels read f16 and sum in f32
    check::<Autodiff<burn::backend::Wgpu>>(&device, DType::F16, 55, 1e-2);
}

#[cfg(feature = "cuda")]
#[test]
fn norm_cuda_autodiff() {
    use burn::backend::cuda::CudaDevice;
    use burn_cubecl::CubeBackend;
    use cubecl::cuda::CudaRuntime;
    let device = CudaDevice::default();
    check::<Autodiff<burn::backend::Cuda>>(&device, DType::F32, 60, 2e-5);
    check::<Autodiff<CubeBackend<CudaRuntime, f32, i32, u8>>>(&device, DType::F32, 70, 2e-5);
}

/// The kernels launched directly into NaN-poisoned outputs and scratch (every element must be written): forward
/// and backward of each case against [`naive`] (`dy` = `r`).
#[allow(dead_code)]
fn check_kernels_poisoned<R: burn_cubecl::CubeRuntime, BT: burn_cubecl::BoolElement>(device: &R::Device, seed: u64) {
    use super::kernels::{launch_backward, launch_forward, split, ACT_NONE, ACT_SILU};
    for (s, shape) in [[2 * 20 * 20, 1, 1, 6], [2, 16, 20, 80], [3, 8, 4, 16]].into_iter().enumerate() {
        for spec in specs() {
            let k = case(shape, seed + s as u64);
            let (y, mean, var, dx, dg, db) = naive(&k, spec);
            let c = shape[3];
            let n = k.x.len() / c;
            let f32_ = DType::F32;
            let x = upload::<R, BT, 2>(&k.x, [n, c], f32_, device);
            let r = upload::<R, BT, 2>(&k.r, [n, c], f32_, device);
            let g = upload::<R, BT, 1>(&k.gamma, [c], f32_, device);
            let b = upload::<R, BT, 1>(&k.beta, [c], f32_, device);
            let part = || poisoned::<R, BT, 3>([2, split(n, c).2 as usize, c], f32_, device);
            let (eps, act) =
                (spec.epsilon as f32, if spec.activation == Activation::Silu { ACT_SILU } else { ACT_NONE });
            let what = format!("kernels {shape:?} {:?}", spec.activation);
            let (out, m, v) = (
                poisoned::<R, BT, 2>([n, c], f32_, device),
                poisoned::<R, BT, 1>([c], f32_, device),
                poisoned::<R, BT, 1>([c], f32_, device),
            );
            launch_forward(&x, &g, &b, &part(), &out, &m, &v, eps, act);
            assert_close(&format!("{what} y"), &download::<R, BT, 2>(out), &y, 2e-5);
            assert_close(&format!("{what} mean"), &download::<R, BT, 1>(m.clone()), &mean, 2e-5);
            assert_close(&format!("{what} var"), &download::<R, BT, 1>(v.clone()), &var, 2e-5);
            let (d, dgam, dbet) = (
                poisoned::<R, BT, 2>([n, c], f32_, device),
                poisoned::<R, BT, 1>([c], f32_, device),
                poisoned::<R, BT, 1>([c], f32_, device),
            );
            launch_backward(&x, &r, [&m, &v, &g, &b], &part(), &d, &dgam, &dbet, eps, act);
            assert_close(&format!("{what} dx"), &download::<R, BT, 2>(d), &dx, 2e-5);
            assert_close(&format!("{what} dgamma"), &download::<R, BT, 1>(dgam), &dg, 2e-5);
            assert_close(&format!("{what} dbeta"), &download::<R, BT, 1>(dbet), &db, 2e-5);
        }
    }
}

#[cfg(feature = "wgpu")]
#[test]
fn norm_wgpu_kernels_poisoned() {
    check_kernels_poisoned::<burn::backend::wgpu::WgpuRuntime, u32>(&Default::default(), 80);
}

#[cfg(feature = "cuda")]
#[test]
fn norm_cuda_kernels_poisoned() {
    check_kernels_poisoned::<cubecl::cuda::CudaRuntime, u8>(&Default::default(), 90);
}
