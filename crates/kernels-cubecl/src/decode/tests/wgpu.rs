//! wgpu (Mesa lavapipe in CI).
use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Wgpu};
use burn::tensor::DType;

use super::cube::{check_kernels, check_strided};
use super::*;

type Bt = u32;

fn device() -> WgpuDevice {
    WgpuDevice::DefaultDevice
}

#[test]
fn decode_wgpu_kernels_f32() {
    for (n, c) in small_cases().iter().enumerate() {
        for format in [BoxFormat::Xyxy, BoxFormat::Xywh] {
            check_kernels::<WgpuRuntime, Bt>(&device(), c, format, DType::F32, 4000 + n as u64);
        }
    }
    // A full 640×640 head (8400 anchors, several cubes).
    let c = Case::new(2, &[(80, 80), (40, 40), (20, 20)], &[8.0, 16.0, 32.0]);
    check_kernels::<WgpuRuntime, Bt>(&device(), &c, BoxFormat::Xyxy, DType::F32, 4010);
}

#[test]
fn decode_wgpu_kernels_f16() {
    for format in [BoxFormat::Xyxy, BoxFormat::Xywh] {
        check_kernels::<WgpuRuntime, Bt>(&device(), &small_cases()[0], format, DType::F16, 4100);
    }
}

#[test]
fn decode_wgpu_autodiff_fusion_grads() {
    for (n, c) in small_cases().iter().enumerate() {
        for format in [BoxFormat::Xyxy, BoxFormat::Xywh] {
            check_autodiff::<Autodiff<Wgpu>>(&device(), c, format, DType::F32, 4200 + n as u64);
        }
    }
    check_autodiff::<Autodiff<Wgpu>>(&device(), &small_cases()[1], BoxFormat::Xywh, DType::F16, 4210);
}

#[test]
fn decode_wgpu_autodiff_cube_grads() {
    type B = Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>;
    for (n, c) in small_cases().iter().enumerate() {
        for format in [BoxFormat::Xyxy, BoxFormat::Xywh] {
            check_autodiff::<B>(&device(), c, format, DType::F32, 4300 + n as u64);
        }
    }
}

#[test]
fn decode_wgpu_forward_only_fusion() {
    check_forward::<Wgpu>(&device(), &small_cases()[0], BoxFormat::Xyxy, 4400);
}

#[test]
fn decode_wgpu_strided_input() {
    check_strided::<WgpuRuntime, Bt>(&device(), 4500);
}
