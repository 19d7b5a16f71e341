//! CUDA (GPU machine only; every test name contains `cuda`).
use burn::backend::cuda::CudaDevice;
use burn::backend::{Autodiff, Cuda};
use burn::tensor::DType;
use burn_cubecl::CubeBackend;
use cubecl::cuda::CudaRuntime;

use super::cube::{check_kernels, check_strided_mixed_empty};
use super::*;

type Bt = u8;

fn device() -> CudaDevice {
    CudaDevice { index: 0 }
}

#[test]
fn bce_cuda_kernels() {
    check_kernels::<CudaRuntime, Bt>(&device(), 100_003, DType::F32, 9800);
    check_kernels::<CudaRuntime, Bt>(&device(), 4097, DType::F16, 9801);
    check_kernels::<CudaRuntime, Bt>(&device(), 4097, DType::BF16, 9802);
}

#[test]
fn bce_cuda_autodiff_grads() {
    check_autodiff::<Autodiff<Cuda>>(&device(), [4, 8400, 3], DType::F32, 9900);
    check_autodiff::<Autodiff<CubeBackend<CudaRuntime, f32, i32, u8>>>(&device(), [2, 37, 5], DType::F32, 9901);
}

#[test]
fn bce_cuda_strided_mixed_empty() {
    check_strided_mixed_empty::<CudaRuntime, Bt>(&device(), 9902);
}
