//! wgpu (Mesa lavapipe in CI: a CPU Vulkan driver, so the shapes stay small).
use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Wgpu};
use burn::tensor::DType;

use super::cube::{check_kernels, check_non_contiguous};
use super::*;

type Bt = u32;

fn device() -> WgpuDevice {
    WgpuDevice::DefaultDevice
}

#[test]
fn wgpu_kernels_f32_all_head_dims() {
    for (n, c) in SMALL_CASES.iter().enumerate() {
        check_kernels::<WgpuRuntime, Bt>(&device(), c, DType::F32, 1000 + n as u64, c.scale());
    }
    // A non-default scale and a large-ish sequence with several query and key tiles.
    check_kernels::<WgpuRuntime, Bt>(&device(), &Case::new(1, 130, 128, 32, 32), DType::F32, 1010, 0.45);
}

#[test]
fn wgpu_kernels_f16() {
    for (n, c) in
        [Case::new(2, 37, 53, 16, 16), Case::new(1, 65, 129, 64, 64), Case::new(1, 17, 40, 128, 128)].iter().enumerate()
    {
        check_kernels::<WgpuRuntime, Bt>(&device(), c, DType::F16, 1100 + n as u64, c.scale());
    }
}

#[test]
fn wgpu_autodiff_fusion_grads() {
    // `Wgpu` is `Fusion<CubeBackend<WgpuRuntime, ..>>`: forward and backward go through the custom fusion op.
    for (n, c) in
        [Case::new(2, 37, 53, 16, 16), Case::new(4, 70, 45, 32, 64), Case::new(1, 33, 20, 128, 128)].iter().enumerate()
    {
        check_autodiff::<Autodiff<Wgpu>>(&device(), c, DType::F32, 1200 + n as u64, c.scale());
    }
}

#[test]
fn wgpu_autodiff_fusion_f16_grads() {
    check_autodiff::<Autodiff<Wgpu>>(&device(), &Case::new(2, 29, 47, 32, 32), DType::F16, 1300, 0.25);
}

#[test]
fn wgpu_autodiff_cube_grads() {
    type B = Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>;
    for (n, c) in [Case::new(3, 41, 66, 64, 64), Case::new(2, 9, 130, 16, 32)].iter().enumerate() {
        check_autodiff::<B>(&device(), c, DType::F32, 1400 + n as u64, c.scale());
    }
}

#[test]
fn wgpu_non_contiguous_inputs() {
    check_non_contiguous::<WgpuRuntime, Bt>(&device(), 1500);
}

#[test]
fn wgpu_module_matches_burn_mha() {
    super::reference::check_module_matches_mha::<Wgpu>(&device(), 1600, 1e-4);
}

#[test]
fn wgpu_forward_only_fusion() {
    // Inference path (no autodiff) through Fusion.
    check_forward::<Wgpu>(&device(), &Case::new(2, 50, 77, 64, 64), DType::F32, 1700, 0.125);
}
