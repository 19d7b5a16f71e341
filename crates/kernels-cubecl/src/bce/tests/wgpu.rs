//! wgpu (Mesa lavapipe in CI).
use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Wgpu};
use burn::tensor::DType;

use super::cube::{check_kernels, check_strided_mixed_empty};
use super::*;

type Bt = u32;

fn device() -> WgpuDevice {
    WgpuDevice::DefaultDevice
}

#[test]
fn bce_wgpu_kernels_f32() {
    for (k, n) in [1usize, 255, 1000].into_iter().enumerate() {
        check_kernels::<WgpuRuntime, Bt>(&device(), n, DType::F32, 9200 + k as u64);
    }
}

#[test]
fn bce_wgpu_kernels_f16() {
    check_kernels::<WgpuRuntime, Bt>(&device(), 513, DType::F16, 9300);
}

#[test]
fn bce_wgpu_autodiff_fusion_grads() {
    check_autodiff::<Autodiff<Wgpu>>(&device(), [2, 37, 5], DType::F32, 9400);
    check_autodiff::<Autodiff<Wgpu>>(&device(), [3, 7, 11], DType::F16, 9401);
}

#[test]
fn bce_wgpu_autodiff_cube_grads() {
    check_autodiff::<Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>>(&device(), [2, 37, 5], DType::F32, 9500);
}

#[test]
fn bce_wgpu_forward_only_fusion() {
    check_forward::<Wgpu>(&device(), 9600);
}

#[test]
fn bce_wgpu_strided_mixed_empty() {
    check_strided_mixed_empty::<WgpuRuntime, Bt>(&device(), 9700);
}
