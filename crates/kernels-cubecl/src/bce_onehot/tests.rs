//! Tests of the one-hot BCE sum against a float64 host implementation (value and gradient), on the
//! reference (`Flex`, `Autodiff<Flex>`), the raw kernels into poisoned outputs, and the op through
//! `Fusion`, `Autodiff<Fusion>` and `Autodiff<CubeBackend>` (wgpu on lavapipe; `cuda` on the GPU).
#![allow(dead_code)]

use burn::backend::{Autodiff, Flex};
use burn::tensor::{backend::AutodiffBackend, Int, Tensor, TensorData};

use super::{bce_onehot_sum, BceOneHotBackend};
use crate::test_util::*;

pub(crate) struct Case {
    pub b: usize,
    pub c: usize,
    pub a: usize,
    pub logits: Vec<f32>,
    pub labels: Vec<i64>,
    pub scores: Vec<f32>,
}

/// Random logits (|x| up to 12, so both branches of the stable form are hit), labels in `[0, C)` with
/// some out of range (`C`, `-1`: all-zero targets), scores in `[0, 1]` with background zeros.
pub(crate) fn case(seed: u64, b: usize, c: usize, a: usize) -> Case {
    let mut rng = Rng::new(seed);
    let logits = rng.uniform(b * c * a, 12.0);
    let mut labels = Vec::new();
    let mut scores = Vec::new();
    for i in 0..b * a {
        let r = rng.unit();
        labels.push(if i % 17 == 5 {
            c as i64
        } else if i % 23 == 7 {
            -1
        } else {
            (r * c as f32) as i64
        });
        scores.push(if rng.unit() < 0.3 { 0.0 } else { rng.unit() });
    }
    Case { b, c, a, logits, labels, scores }
}

/// `(Σ loss, d loss / d logits)` in float64.
pub(crate) fn host(k: &Case) -> (f64, Vec<f64>) {
    let (mut total, mut grad) = (0.0f64, Vec::with_capacity(k.logits.len()));
    for b in 0..k.b {
        for c in 0..k.c {
            for a in 0..k.a {
                let x = k.logits[(b * k.c + c) * k.a + a] as f64;
                let t = if k.labels[b * k.a + a] == c as i64 { k.scores[b * k.a + a] as f64 } else { 0.0 };
                total += x.max(0.0) - x * t + (-x.abs()).exp().ln_1p();
                grad.push(1.0 / (1.0 + (-x).exp()) - t);
            }
        }
    }
    (total, grad)
}

fn inputs<B: burn::tensor::backend::Backend>(
    k: &Case,
    dev: &B::Device,
) -> (Tensor<B, 3>, Tensor<B, 2, Int>, Tensor<B, 2>) {
    (
        Tensor::from_data(TensorData::new(k.logits.clone(), [k.b, k.c, k.a]), dev),
        Tensor::from_data(TensorData::new(k.labels.clone(), [k.b, k.a]), dev),
        Tensor::from_data(TensorData::new(k.scores.clone(), [k.b, k.a]), dev),
    )
}

/// The logits of `k` as a strided `[B, C, A]` view of a `[B, A, C]` tensor (anchor stride `C`).
fn transposed_logits<B: burn::tensor::backend::Backend>(k: &Case, dev: &B::Device) -> Tensor<B, 3> {
    transposed_view::<B>(&k.logits, [k.b, k.c, k.a], dev)
}

/// Value on `B` (no autodiff), from contiguous and from strided logits.
pub(crate) fn check_value<B: BceOneHotBackend>(dev: &B::Device, seed: u64) {
    for (b, c, a) in [(2, 5, 37), (3, 80, 300)] {
        let k = case(seed + a as u64, b, c, a);
        let (want, _) = host(&k);
        let (x, l, s) = inputs::<B>(&k, dev);
        let got = to_vec(bce_onehot_sum(x, l.clone(), s.clone()));
        assert_close(&format!("{} sum {b}x{c}x{a}", B::name(dev)), &got, &[want], 1e-5);
        let got = to_vec(bce_onehot_sum(transposed_logits::<B>(&k, dev), l, s));
        assert_close(&format!("{} sum {b}x{c}x{a} strided", B::name(dev)), &got, &[want], 1e-5);
    }
}

/// Value and gradient under an autodiff backend `A`.
pub(crate) fn check_grad<A: AutodiffBackend + BceOneHotBackend>(dev: &A::Device, seed: u64) {
    for (b, c, a) in [(2, 5, 37), (2, 80, 300)] {
        let k = case(seed + a as u64, b, c, a);
        let (want, want_g) = host(&k);
        let (x, l, s) = inputs::<A>(&k, dev);
        let x = x.require_grad();
        let total = bce_onehot_sum(x.clone(), l, s);
        let grads = (total.clone() * 0.75).backward();
        let g = to_vec(x.grad(&grads).expect("logits gradient"));
        assert_close(&format!("{} sum {b}x{c}x{a}", A::name(dev)), &to_vec(total), &[want], 1e-5);
        let want_g: Vec<f64> = want_g.iter().map(|v| 0.75 * v).collect();
        assert_close(&format!("{} grad {b}x{c}x{a}", A::name(dev)), &g, &want_g, 1e-5);
    }
}

#[test]
fn reference_flex() {
    check_value::<Flex>(&Default::default(), 11_000);
    check_grad::<Autodiff<Flex>>(&Default::default(), 11_100);
}

#[test]
fn empty_logits_give_zero() {
    let dev = Default::default();
    let t = bce_onehot_sum(
        Tensor::<Flex, 3>::zeros([2, 0, 5], &dev),
        Tensor::<Flex, 2, Int>::zeros([2, 5], &dev),
        Tensor::<Flex, 2>::zeros([2, 5], &dev),
    );
    assert_eq!(to_vec(t), vec![0.0]);
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub(crate) mod cube {
    use burn::tensor::{DType, TensorPrimitive};
    use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeRuntime};

    use super::*;
    use crate::bce_onehot::cube::raw;

    /// Raw launches into NaN-poisoned outputs; the partial sums must cover every element. The second
    /// shape reads strided logits (a transposed view).
    pub(crate) fn check_kernels<R: CubeRuntime, BT: BoolElement>(dev: &R::Device, seed: u64) {
        for (b, c, a) in [(2, 5, 37), (2, 80, 8400)] {
            let k = case(seed + a as u64, b, c, a);
            let (want, want_g) = host(&k);
            let x = if a == 37 {
                upload::<R, BT, 3>(&k.logits, [b, c, a], DType::F32, dev)
            } else {
                let x: CubeTensor<R> = transposed_logits::<Cb<R, BT>>(&k, dev).into_primitive().tensor();
                assert!(!x.is_contiguous(), "the strided case must not be contiguous");
                x
            };
            let s = upload::<R, BT, 2>(&k.scores, [b, a], DType::F32, dev);
            let l: CubeTensor<R> =
                Tensor::<Cb<R, BT>, 2, Int>::from_data(TensorData::new(k.labels.clone(), [b, a]), dev).into_primitive();
            let l = burn_cubecl::kernel::into_contiguous(l);
            let (rows, cubes) = raw::forward_split(b, c, a);
            let partial = poisoned::<R, BT, 2>([rows, cubes], DType::F32, dev);
            raw::launch_bce_onehot_forward(&x, &l, &s, &partial);
            let parts = download::<R, BT, 2>(partial);
            assert!(parts.iter().all(|v| v.is_finite()), "partial sums: unwritten entries");
            let sum: f64 = parts.iter().map(|&v| v as f64).sum();
            assert_close(&format!("kernel sum {b}x{c}x{a} ({cubes} cubes)"), &[sum as f32], &[want], 1e-5);

            let d_total = upload::<R, BT, 1>(&[0.5], [1], DType::F32, dev);
            let d = poisoned::<R, BT, 3>([b, c, a], DType::F32, dev);
            raw::launch_bce_onehot_backward(&x, &l, &s, &d_total, &d);
            let want_g: Vec<f64> = want_g.iter().map(|v| 0.5 * v).collect();
            let got = to_vec(Tensor::<Cb<R, BT>, 3>::from_primitive(TensorPrimitive::Float(d)));
            assert_close(&format!("kernel grad {b}x{c}x{a}"), &got, &want_g, 1e-5);
        }
    }
}

#[cfg(feature = "wgpu")]
mod wgpu {
    use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
    use burn::backend::{Autodiff, Wgpu};

    use super::*;

    #[test]
    fn bce_onehot_wgpu_kernels() {
        cube::check_kernels::<WgpuRuntime, u32>(&WgpuDevice::DefaultDevice, 11_200);
    }

    #[test]
    fn bce_onehot_wgpu_fusion_and_autodiff() {
        check_value::<Wgpu>(&WgpuDevice::DefaultDevice, 11_300);
        check_grad::<Autodiff<Wgpu>>(&WgpuDevice::DefaultDevice, 11_400);
        check_grad::<Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>>(&WgpuDevice::DefaultDevice, 11_500);
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use burn::backend::cuda::CudaDevice;
    use burn::backend::{Autodiff, Cuda};
    use burn_cubecl::CubeBackend;
    use cubecl::cuda::CudaRuntime;

    use super::*;

    #[test]
    fn bce_onehot_cuda_kernels() {
        cube::check_kernels::<CudaRuntime, u8>(&CudaDevice::default(), 11_200);
    }

    #[test]
    fn bce_onehot_cuda_fusion_and_autodiff() {
        check_value::<Cuda>(&CudaDevice::default(), 11_300);
        check_grad::<Autodiff<Cuda>>(&CudaDevice::default(), 11_400);
        check_grad::<Autodiff<CubeBackend<CudaRuntime, f32, i32, u8>>>(&CudaDevice::default(), 11_500);
    }
}
