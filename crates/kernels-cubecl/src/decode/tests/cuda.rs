//! CUDA (GPU machine only; every test name contains `cuda`).
use burn::backend::cuda::CudaDevice;
use burn::backend::{Autodiff, Cuda};
use burn::tensor::DType;
use burn_cubecl::CubeBackend;
use cubecl::cuda::CudaRuntime;

use super::cube::{check_kernels, check_strided};
use super::*;

type Bt = u8;

fn device() -> CudaDevice {
    CudaDevice { index: 0 }
}

#[test]
fn decode_cuda_kernels() {
    let c = Case::new(4, &[(80, 80), (40, 40), (20, 20)], &[8.0, 16.0, 32.0]);
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for format in [BoxFormat::Xyxy, BoxFormat::Xywh] {
            check_kernels::<CudaRuntime, Bt>(&device(), &c, format, dtype, 5000);
        }
    }
}

#[test]
fn decode_cuda_autodiff_grads() {
    let c = Case::new(4, &[(80, 80), (40, 40), (20, 20)], &[8.0, 16.0, 32.0]);
    check_autodiff::<Autodiff<Cuda>>(&device(), &c, BoxFormat::Xyxy, DType::F32, 5100);
    check_autodiff::<Autodiff<CubeBackend<CudaRuntime, f32, i32, u8>>>(
        &device(),
        &c,
        BoxFormat::Xywh,
        DType::F32,
        5101,
    );
}

#[test]
fn decode_cuda_strided_input() {
    check_strided::<CudaRuntime, Bt>(&device(), 5200);
}
