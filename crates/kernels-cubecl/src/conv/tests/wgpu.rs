//! wgpu (Mesa lavapipe in CI).
use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Wgpu};
use burn::tensor::DType;

use super::cube::{check_kernels, check_spread, check_strided_and_fast};
use super::*;

type Bt = u32;

fn device() -> WgpuDevice {
    WgpuDevice::DefaultDevice
}

#[test]
fn conv_wgpu_kernels_f32() {
    check_kernels::<WgpuRuntime, Bt>(&device(), DType::F32, 200);
    check_spread::<WgpuRuntime, Bt>(&device(), DType::F32, 207);
    check_spread::<WgpuRuntime, Bt>(&device(), DType::F16, 208);
}

#[test]
fn conv_wgpu_kernels_f16() {
    check_kernels::<WgpuRuntime, Bt>(&device(), DType::F16, 201);
}

#[test]
fn conv_wgpu_fusion_forward_and_backward_ops() {
    check_forward::<Wgpu>(&device(), DType::F32, 202, 1e-5);
    check_backward_ops::<Wgpu>(&device(), DType::F32, 203, 2e-5);
}

#[test]
fn conv_wgpu_autodiff_grads() {
    check_autodiff::<Autodiff<Wgpu>>(&device(), DType::F32, 204, 2e-5);
    check_autodiff::<Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>>(&device(), DType::F32, 205, 2e-5);
}

#[test]
fn conv_wgpu_strided_and_fast() {
    // lavapipe has no tensor cores: the fast path falls back to the exact kernels
    check_strided_and_fast::<WgpuRuntime, Bt>(&device(), 206, 1e-5);
}
