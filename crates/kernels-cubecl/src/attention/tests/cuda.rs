//! CUDA (run on a GPU machine; every test name contains `cuda`, which CI skips). Bigger shapes than wgpu.
use burn::backend::cuda::CudaDevice;
use burn::backend::{Autodiff, Cuda};
use burn::tensor::DType;
use burn_cubecl::CubeBackend;
use cubecl::cuda::CudaRuntime;

use super::cube::{check_kernels, check_non_contiguous};
use super::*;
use crate::attention::cube::raw;

type Bt = u8;

fn device() -> CudaDevice {
    CudaDevice { index: 0 }
}

const CUDA_CASES: [Case; 7] = [
    Case::new(2, 37, 53, 16, 16),
    Case::new(3, 300, 257, 32, 32),
    Case::new(4, 400, 400, 64, 64),
    Case::new(2, 129, 1000, 128, 128),
    Case::new(8, 400, 400, 32, 64),
    Case::new(1, 1, 1, 64, 64),
    Case::new(2, 1025, 63, 64, 64),
];

#[test]
fn cuda_kernels_f32() {
    for (n, c) in CUDA_CASES.iter().enumerate() {
        check_kernels::<CudaRuntime, Bt>(&device(), c, DType::F32, 2000 + n as u64, c.scale());
    }
}

#[test]
fn cuda_kernels_f16_bf16() {
    for (n, c) in CUDA_CASES.iter().enumerate() {
        check_kernels::<CudaRuntime, Bt>(&device(), c, DType::F16, 2100 + n as u64, c.scale());
        check_kernels::<CudaRuntime, Bt>(&device(), c, DType::BF16, 2200 + n as u64, c.scale());
    }
}

/// The H200 has f16 and bf16 16×16×16 tensor-core tiles: the f16/bf16 cases above must have gone through
/// the cmma forward (checked in `check_kernels`), not silently through the plain kernel.
#[test]
fn cuda_cmma_forward_is_selected() {
    for dtype in [DType::F16, DType::BF16] {
        for (dk, dv) in [(16, 16), (32, 64), (64, 64), (128, 128)] {
            let q =
                crate::test_util::upload::<CudaRuntime, Bt, 3>(&vec![0.5; 2 * 8 * dk], [2, 8, dk], dtype, &device());
            assert!(raw::cmma_supported(&q, dk, dv), "{dtype:?} dk {dk} dv {dv}: tensor-core forward not selected");
            assert!(raw::mma_supported(&q, dk, dv), "{dtype:?} dk {dk} dv {dv}: mma kernels not selected");
        }
        let q = crate::test_util::upload::<CudaRuntime, Bt, 3>(&vec![0.5; 2 * 8 * 24], [2, 8, 24], dtype, &device());
        assert!(!raw::cmma_supported(&q, 24, 24), "head dim 24 is not a multiple of 16");
        assert!(!raw::mma_supported(&q, 24, 24), "head dim 24 is not a multiple of 16");
    }
}

#[test]
fn cuda_autodiff_fusion_grads() {
    for (n, c) in CUDA_CASES.iter().enumerate().take(5) {
        check_autodiff::<Autodiff<Cuda>>(&device(), c, DType::F32, 2300 + n as u64, c.scale());
    }
    check_autodiff::<Autodiff<Cuda>>(&device(), &CUDA_CASES[2], DType::F16, 2310, 0.125);
}

#[test]
fn cuda_autodiff_cube_grads() {
    type B = Autodiff<CubeBackend<CudaRuntime, f32, i32, u8>>;
    check_autodiff::<B>(&device(), &CUDA_CASES[4], DType::F32, 2400, 0.2);
}

#[test]
fn cuda_non_contiguous_inputs() {
    check_non_contiguous::<CudaRuntime, Bt>(&device(), 2500);
}

#[test]
fn cuda_module_matches_burn_mha() {
    super::reference::check_module_matches_mha::<Cuda>(&device(), 2600, 3e-3);
}
