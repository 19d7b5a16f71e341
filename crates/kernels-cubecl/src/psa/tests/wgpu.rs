//! wgpu (Mesa lavapipe in CI: a CPU Vulkan driver, so `N ≤ 130`).
use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Wgpu};
use burn::tensor::DType;

use super::cube::check_kernels;
use super::*;

type Bt = u32;

fn device() -> WgpuDevice {
    WgpuDevice::DefaultDevice
}

#[test]
fn wgpu_psa_kernels_poisoned_f32() {
    for (i, c) in CASES.iter().enumerate() {
        check_kernels::<WgpuRuntime, Bt>(&device(), c, DType::F32, 3000 + i as u64);
    }
}

#[test]
fn wgpu_psa_kernels_poisoned_f16() {
    check_kernels::<WgpuRuntime, Bt>(&device(), &CASES[1], DType::F16, 3100);
}

#[test]
fn wgpu_psa_autodiff_fusion_grads() {
    // `Wgpu` = `Fusion<CubeBackend<..>>`: forward and backward through the custom fusion ops.
    for (i, c) in CASES.iter().enumerate() {
        check_autodiff::<Autodiff<Wgpu>>(&device(), c, DType::F32, 3200 + i as u64);
    }
}

#[test]
fn wgpu_psa_autodiff_cube_grads() {
    type B = Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>;
    for (i, c) in CASES.iter().enumerate().take(4) {
        check_autodiff::<B>(&device(), c, DType::F32, 3300 + i as u64);
    }
}

#[test]
fn wgpu_psa_forward_fusion_n130() {
    // Inference path (no autodiff) through Fusion; N = 130 spans three FA query tiles.
    check_forward::<Wgpu>(&device(), &PsaCase::new(1, 2, 32, 64, 10, 13), DType::F32, 3400);
    check_forward::<Wgpu>(&device(), &PsaCase::new(2, 1, 16, 32, 13, 10), DType::F32, 3401);
}

#[test]
fn wgpu_psa_autodiff_fusion_f16_grads() {
    check_autodiff::<Autodiff<Wgpu>>(&device(), &CASES[2], DType::F16, 3500);
}
