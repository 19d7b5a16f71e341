//! wgpu (Mesa lavapipe in CI).
use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Wgpu};
use burn::tensor::DType;

use super::cube::{check_kernels, check_strided_and_empty};
use super::*;

type Bt = u32;

fn device() -> WgpuDevice {
    WgpuDevice::DefaultDevice
}

#[test]
fn ciou_wgpu_kernels_f32() {
    let e = check_kernels::<WgpuRuntime, Bt>(&device(), DType::F32, 7000);
    eprintln!("worst {e:.3e}");
}

#[test]
fn ciou_wgpu_kernels_f16() {
    check_kernels::<WgpuRuntime, Bt>(&device(), DType::F16, 7100);
}

#[test]
fn ciou_wgpu_autodiff_fusion_grads() {
    check_autodiff::<Autodiff<Wgpu>>(&device(), DType::F32, 7200);
}

#[test]
fn ciou_wgpu_autodiff_cube_grads() {
    check_autodiff::<Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>>(&device(), DType::F32, 7300);
}

#[test]
fn ciou_wgpu_forward_only_fusion() {
    check_forward::<Wgpu>(&device(), 7400);
}

#[test]
fn ciou_wgpu_strided_and_empty() {
    check_strided_and_empty::<WgpuRuntime, Bt>(&device(), 7500);
}
