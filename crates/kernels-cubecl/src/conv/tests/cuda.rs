//! CUDA (GPU machine only; every test name contains `cuda`).
use burn::backend::cuda::CudaDevice;
use burn::backend::{Autodiff, Cuda};
use burn::tensor::DType;
use burn_cubecl::CubeBackend;
use cubecl::cuda::CudaRuntime;

use super::cube::{check_kernels, check_spread, check_strided_and_fast};
use super::*;

type Bt = u8;

fn device() -> CudaDevice {
    CudaDevice { index: 0 }
}

#[test]
fn conv_cuda_kernels() {
    for (n, dtype) in [DType::F32, DType::F16, DType::BF16].into_iter().enumerate() {
        check_kernels::<CudaRuntime, Bt>(&device(), dtype, 300 + n as u64);
        check_spread::<CudaRuntime, Bt>(&device(), dtype, 330 + n as u64);
    }
}

#[test]
fn conv_cuda_fusion_and_autodiff() {
    check_forward::<Cuda>(&device(), DType::F32, 310, 1e-5);
    check_backward_ops::<Cuda>(&device(), DType::F32, 311, 2e-5);
    check_autodiff::<Autodiff<Cuda>>(&device(), DType::F32, 312, 2e-5);
    check_autodiff::<Autodiff<CubeBackend<CudaRuntime, f32, i32, u8>>>(&device(), DType::F32, 313, 2e-5);
}

#[test]
fn conv_cuda_strided_and_fast() {
    // Fast = TF32 tensor cores for f32 (10-bit mantissa products): ~1e-3 relative
    check_strided_and_fast::<CudaRuntime, Bt>(&device(), 320, 5e-3);
    // the opt-in strided path (dy spread onto the stride-1 grid, cubek's stride-1 GEMM)
    crate::conv::set_tensor_core_gradients(true);
    check_strided_and_fast::<CudaRuntime, Bt>(&device(), 321, 5e-3);
    crate::conv::set_tensor_core_gradients(false);
}
