//! Top-k against a host sort: the reference path (Flex, Autodiff<Flex>), the kernel through Fusion and
//! plain CubeBackend on wgpu (lavapipe in CI) and CUDA (names contain `cuda`), raw passes into
//! NaN-poisoned outputs, ties, and gradients of the values under Autodiff.
#![allow(dead_code)]

use burn::tensor::{Int, Tensor, TensorData};

use super::{topk_rows, TopKBackend};
use crate::test_util::Rng;

/// Expected `(values, indices)` of each row: descending value, ties by ascending index.
fn host_topk(x: &[f32], rows: usize, n: usize, k: usize) -> (Vec<f32>, Vec<i64>) {
    let (mut vals, mut idx) = (Vec::new(), Vec::new());
    for r in 0..rows {
        let row = &x[r * n..(r + 1) * n];
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
        for &c in &order[..k] {
            vals.push(row[c]);
            idx.push(c as i64);
        }
    }
    (vals, idx)
}

fn run<B: TopKBackend>(x: &[f32], rows: usize, n: usize, k: usize, dev: &B::Device) -> (Vec<f32>, Vec<i64>) {
    let t = Tensor::<B, 2>::from_data(TensorData::new(x.to_vec(), [rows, n]), dev);
    let (v, i) = topk_rows(t, k);
    assert_eq!(v.dims(), [rows, k]);
    assert_eq!(i.dims(), [rows, k]);
    let v = v.into_data().convert::<f32>().into_vec::<f32>().unwrap();
    let i = i.into_data().convert::<i64>().into_vec::<i64>().unwrap();
    (v, i)
}

/// Distinct random values: the result must equal the host sort exactly (values and indices).
fn check_random<B: TopKBackend>(dev: &B::Device, seed: u64, exact_ties: bool) {
    let mut rng = Rng::new(seed);
    // (rows, n, k): one chunk, several chunks and passes, k = n, k = 1, n not a power of two, YOLO's 300;
    // k ≤ 16 runs the register-list kernel (few rows: chunks of 2048; ≥ 128 rows: one chunk per row).
    for (rows, n, k) in [
        (1, 10, 3),
        (3, 257, 1),
        (2, 700, 64),
        (2, 1000, 1000),
        (1, 8400, 300),
        (2, 5000, 7),
        (4, 129, 129),
        (130, 3000, 10),
        (2, 16, 16),
    ] {
        let x = rng.uniform(rows * n, 4.0);
        let (ev, ei) = host_topk(&x, rows, n, k);
        let (v, i) = run::<B>(&x, rows, n, k, dev);
        assert_eq!(v, ev, "values, rows {rows} n {n} k {k}");
        assert_eq!(i, ei, "indices, rows {rows} n {n} k {k}");
    }
    if exact_ties {
        // Heavy ties (8 distinct values): the kernel's order is value desc, then index asc.
        for (rows, n, k) in [(2, 3000, 500), (2, 3000, 10), (129, 700, 7)] {
            let x: Vec<f32> = rng.uniform(rows * n, 4.0).iter().map(|v| v.round()).collect();
            let (ev, ei) = host_topk(&x, rows, n, k);
            let (v, i) = run::<B>(&x, rows, n, k, dev);
            assert_eq!(v, ev, "tied values, k {k}");
            assert_eq!(i, ei, "tied indices, k {k}");
        }
    }
}

/// Gradient of `Σ w ∘ topk(x).values`: `w` scattered to the selected entries, zero elsewhere.
fn check_grad<B: burn::tensor::backend::AutodiffBackend + TopKBackend>(dev: &B::Device, seed: u64) {
    let mut rng = Rng::new(seed);
    let (rows, n, k) = (3, 600, 20);
    let x = rng.uniform(rows * n, 2.0);
    let w = rng.uniform(rows * k, 1.0);
    let xt = Tensor::<B, 2>::from_data(TensorData::new(x.clone(), [rows, n]), dev).require_grad();
    let (v, _) = topk_rows(xt.clone(), k);
    let wt = Tensor::<B, 2>::from_data(TensorData::new(w.clone(), [rows, k]), dev);
    let grads = (v * wt).sum().backward();
    let g = xt.grad(&grads).unwrap().into_data().convert::<f32>().into_vec::<f32>().unwrap();
    let (_, ei) = host_topk(&x, rows, n, k);
    let mut expected = vec![0.0f32; rows * n];
    for r in 0..rows {
        for j in 0..k {
            expected[r * n + ei[r * k + j] as usize] = w[r * k + j];
        }
    }
    assert_eq!(g, expected);
}

#[test]
fn topk_reference_flex() {
    check_random::<burn::backend::Flex>(&Default::default(), 1, false);
}

#[test]
fn topk_reference_autodiff_flex_grad() {
    check_grad::<burn::backend::Autodiff<burn::backend::Flex>>(&Default::default(), 2);
}

#[test]
fn topk_rejects_k_larger_than_row() {
    let err = std::panic::catch_unwind(|| {
        let t = Tensor::<burn::backend::Flex, 2>::ones([2, 5], &Default::default());
        topk_rows(t, 6)
    })
    .expect_err("k > n must panic");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("k = 6") && msg.contains("1..=5"), "{msg}");
}

/// One raw pass of each kernel into NaN-poisoned outputs: every element written, each chunk's top k in
/// order (bitonic: chunks of 256, k 30; register lists: chunks of 2·256, k 7).
#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn check_raw_pass<R: burn_cubecl::CubeRuntime>(dev: &R::Device, seed: u64) {
    check_raw_pass_with::<R>(dev, seed, 30, 256);
    check_raw_pass_with::<R>(dev, seed + 1, 7, 2 * super::kernels::SMALL_UNITS);
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn check_raw_pass_with<R: burn_cubecl::CubeRuntime>(dev: &R::Device, seed: u64, k: usize, chunk: usize) {
    use burn::tensor::{DType, Shape, TensorPrimitive};
    use burn_cubecl::{kernel::into_contiguous, tensor::CubeTensor, CubeBackend};
    type Cb<R> = CubeBackend<R, f32, i32, u32>;
    let (rows, n) = (2usize, 1100usize);
    let x = Rng::new(seed).uniform(rows * n, 3.0);
    let chunks = n.div_ceil(chunk);
    let xt: CubeTensor<R> = into_contiguous(
        Tensor::<Cb<R>, 2>::from_data(TensorData::new(x.clone(), [rows, n]), dev).into_primitive().tensor(),
    );
    let poisoned_f = |len: usize| -> CubeTensor<R> {
        let t: CubeTensor<R> = Tensor::<Cb<R>, 1>::full([len], f32::NAN, dev).into_primitive().tensor();
        CubeTensor::new_contiguous(t.client, t.device, Shape::new([rows, len / rows]), t.handle, t.dtype)
    };
    let poisoned_i = |len: usize| -> CubeTensor<R> {
        let t: CubeTensor<R> = Tensor::<Cb<R>, 1, Int>::full([len], -7, dev).into_primitive();
        CubeTensor::new_contiguous(t.client, t.device, Shape::new([rows, len / rows]), t.handle, t.dtype)
    };
    let (ov, oi) = (poisoned_f(rows * chunks * k), poisoned_i(rows * chunks * k));
    let dummy = poisoned_i(rows);
    assert_eq!(oi.dtype, DType::I32);
    if k <= super::kernels::SMALL_K {
        super::kernels::launch_small_pass(&xt, &dummy, false, &ov, &oi, k, chunk / super::kernels::SMALL_UNITS);
    } else {
        super::kernels::launch_pass(&xt, &dummy, false, &ov, &oi, k, chunk);
    }
    let v = Tensor::<Cb<R>, 2>::from_primitive(TensorPrimitive::Float(ov)).into_data().into_vec::<f32>().unwrap();
    let i = Tensor::<Cb<R>, 2, Int>::from_primitive(oi).into_data().convert::<i64>().into_vec::<i64>().unwrap();
    for r in 0..rows {
        for c in 0..chunks {
            let lo = c * chunk;
            let hi = (lo + chunk).min(n);
            let part: Vec<f32> = x[r * n + lo..r * n + hi].to_vec();
            let (ev, ei) = host_topk(&part, 1, hi - lo, k);
            let at = r * chunks * k + c * k;
            assert_eq!(&v[at..at + k], &ev[..], "row {r} chunk {c} values");
            let ei: Vec<i64> = ei.iter().map(|j| j + lo as i64).collect();
            assert_eq!(&i[at..at + k], &ei[..], "row {r} chunk {c} indices");
        }
    }
}

#[cfg(feature = "wgpu")]
mod wgpu {
    use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
    use burn::backend::{Autodiff, Wgpu};

    #[test]
    fn wgpu_topk_fusion() {
        super::check_random::<Wgpu>(&WgpuDevice::DefaultDevice, 10, true);
    }

    #[test]
    fn wgpu_topk_cube_and_raw_pass() {
        super::check_random::<CubeBackend<WgpuRuntime, f32, i32, u32>>(&WgpuDevice::DefaultDevice, 11, true);
        super::check_raw_pass::<WgpuRuntime>(&WgpuDevice::DefaultDevice, 12);
    }

    #[test]
    fn wgpu_topk_autodiff_grad() {
        super::check_grad::<Autodiff<Wgpu>>(&WgpuDevice::DefaultDevice, 13);
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use burn::backend::cuda::CudaDevice;
    use burn::backend::{Autodiff, Cuda};
    use burn_cubecl::CubeBackend;
    use cubecl::cuda::CudaRuntime;

    #[test]
    fn cuda_topk() {
        let dev = CudaDevice::new(0);
        super::check_random::<Cuda>(&dev, 20, true);
        super::check_random::<CubeBackend<CudaRuntime, f32, i32, u8>>(&dev, 21, true);
        super::check_raw_pass::<CudaRuntime>(&dev, 22);
        super::check_grad::<Autodiff<Cuda>>(&dev, 23);
    }
}
