//! The reference implementation (Burn's NCHW ops between permutes) on `Flex` (f64), and Flex's own f32 forward. Flex's f64 convolution agrees
//! with the f64 loops to ~5e-8 only (measured), hence 1e-6 rather than f64 rounding.
use burn::backend::{Autodiff, Flex};
use burn::tensor::DType;

use super::*;

#[test]
fn conv_reference_forward_f64() {
    check_forward::<Flex>(&Default::default(), DType::F64, 100, 1e-6);
}

/// f32 on Flex runs the CPU path (`flex.rs`: im2col + gemm, depthwise rows); grouped cases the reference.
#[test]
fn conv_flex_forward_f32() {
    check_forward::<Flex>(&Default::default(), DType::F32, 101, 1e-5);
}

#[test]
fn conv_reference_autodiff_f64() {
    check_autodiff::<Autodiff<Flex>>(&Default::default(), DType::F64, 102, 1e-6);
}

#[test]
fn conv_reference_backward_ops_f64() {
    check_backward_ops::<Flex>(&Default::default(), DType::F64, 103, 1e-6);
}

/// f32 gradients on Flex run the CPU path (`flex_grad.rs`: gemm + col2im, split weight-gradient runs, depthwise
/// per image); grouped cases the reference.
#[test]
fn conv_flex_backward_f32() {
    check_backward_ops::<Flex>(&Default::default(), DType::F32, 104, grad_tolerance(DType::F32));
    check_autodiff::<Autodiff<Flex>>(&Default::default(), DType::F32, 105, grad_tolerance(DType::F32));
}

/// f16 / bf16 on Flex: f32 arithmetic on the upcast values, rounded once (`flex.rs` `half_dtype`), forward and
/// both gradients, within the half-precision tolerances the GPU kernels meet (f32 accumulation).
#[test]
fn conv_flex_half_accumulates_in_f32() {
    for (dtype, seed) in [(DType::F16, 106), (DType::BF16, 107)] {
        check_forward::<Flex>(&Default::default(), dtype, seed, crate::test_util::tolerance(dtype));
        check_backward_ops::<Flex>(&Default::default(), dtype, seed + 10, grad_tolerance(dtype));
        check_autodiff::<Autodiff<Flex>>(&Default::default(), dtype, seed + 20, grad_tolerance(dtype));
    }
}
