//! CUDA (run on a GPU machine; every test name contains `cuda`, which CI skips).
use burn::backend::cuda::CudaDevice;
use burn::backend::{Autodiff, Cuda};
use burn::tensor::DType;
use burn_cubecl::CubeBackend;
use cubecl::cuda::CudaRuntime;

use super::cube::check_kernels;
use super::*;

type Bt = u8;

fn device() -> CudaDevice {
    CudaDevice { index: 0 }
}

/// The model's PSA shapes (yolo26n: C = 128, nh = 2, kd = 32, hd = 64 at 20×20) plus the small cases.
const CUDA_CASES: [PsaCase; 3] =
    [PsaCase::new(2, 2, 32, 64, 20, 20), PsaCase::new(1, 4, 32, 64, 20, 20), PsaCase::new(3, 1, 16, 32, 17, 23)];

#[test]
fn cuda_psa_kernels_poisoned() {
    for (i, c) in CASES.iter().chain(CUDA_CASES.iter()).enumerate() {
        check_kernels::<CudaRuntime, Bt>(&device(), c, DType::F32, 4000 + i as u64);
        check_kernels::<CudaRuntime, Bt>(&device(), c, DType::F16, 4100 + i as u64);
    }
}

#[test]
fn cuda_psa_autodiff_fusion_grads() {
    for (i, c) in CASES.iter().chain(CUDA_CASES.iter()).enumerate() {
        check_autodiff::<Autodiff<Cuda>>(&device(), c, DType::F32, 4200 + i as u64);
    }
    check_autodiff::<Autodiff<Cuda>>(&device(), &CUDA_CASES[0], DType::F16, 4250);
    check_autodiff::<Autodiff<Cuda>>(&device(), &CUDA_CASES[0], DType::BF16, 4251);
}

#[test]
fn cuda_psa_autodiff_cube_grads() {
    type B = Autodiff<CubeBackend<CudaRuntime, f32, i32, u8>>;
    for (i, c) in CASES.iter().chain(CUDA_CASES.iter()).enumerate() {
        check_autodiff::<B>(&device(), c, DType::F32, 4300 + i as u64);
    }
}
