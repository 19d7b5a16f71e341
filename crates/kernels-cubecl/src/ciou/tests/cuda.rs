//! CUDA (GPU machine only; every test name contains `cuda`).
use burn::backend::cuda::CudaDevice;
use burn::backend::{Autodiff, Cuda};
use burn::tensor::DType;
use burn_cubecl::CubeBackend;
use cubecl::cuda::CudaRuntime;

use super::cube::{check_kernels, check_strided_and_empty};
use super::*;

type Bt = u8;

fn device() -> CudaDevice {
    CudaDevice { index: 0 }
}

#[test]
fn ciou_cuda_kernels() {
    for (n, dtype) in [DType::F32, DType::F16].into_iter().enumerate() {
        check_kernels::<CudaRuntime, Bt>(&device(), dtype, 8000 + n as u64);
    }
}

#[test]
fn ciou_cuda_autodiff_grads() {
    check_autodiff::<Autodiff<Cuda>>(&device(), DType::F32, 8100);
    check_autodiff::<Autodiff<CubeBackend<CudaRuntime, f32, i32, u8>>>(&device(), DType::F32, 8101);
}

#[test]
fn ciou_cuda_strided_and_empty() {
    check_strided_and_empty::<CudaRuntime, Bt>(&device(), 8200);
}
