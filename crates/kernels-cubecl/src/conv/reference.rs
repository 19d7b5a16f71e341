//! The reference: Burn's NCHW convolution ops (`ModuleOps::conv2d`, `conv2d_x_backward`,
//! `conv2d_weight_backward`) between NHWC ↔ NCHW permutes, the activation as Burn's `silu`.
use burn::tensor::{activation, backend::Backend, ops::FloatTensor, Tensor};

use super::{weight_to_ohwi, Activation, Conv2dSpec};
use crate::tensor_util::float;

/// NHWC / OHWI → NCHW / OIHW (a view).
fn to_nchw<B: Backend>(t: FloatTensor<B>) -> FloatTensor<B> {
    float::<B, 4>(t).permute([0, 3, 1, 2]).into_primitive().tensor()
}

/// NCHW / OIHW → NHWC / OHWI, contiguous (the same axis move as [`weight_to_ohwi`]).
fn to_nhwc<B: Backend>(t: FloatTensor<B>) -> Tensor<B, 4> {
    weight_to_ohwi(float::<B, 4>(t))
}

/// `act(conv(x, w) + bias)` on NHWC tensors.
pub fn reference_forward<B: Backend>(
    x: FloatTensor<B>,
    w: FloatTensor<B>,
    bias: Option<FloatTensor<B>>,
    spec: Conv2dSpec,
) -> FloatTensor<B> {
    let y = B::conv2d(to_nchw::<B>(x), to_nchw::<B>(w), bias, spec.burn_options());
    let y = to_nhwc::<B>(y);
    match spec.activation {
        Activation::None => y,
        Activation::Silu => activation::silu(y),
    }
    .into_primitive()
    .tensor()
}

/// `∂L/∂x` (NHWC) from the pre-activation gradient `dy` (NHWC).
pub fn reference_backward_data<B: Backend>(
    x: FloatTensor<B>,
    w: FloatTensor<B>,
    dy: FloatTensor<B>,
    spec: Conv2dSpec,
) -> FloatTensor<B> {
    let dx = B::conv2d_x_backward(to_nchw::<B>(x), to_nchw::<B>(w), to_nchw::<B>(dy), spec.burn_options());
    to_nhwc::<B>(dx).into_primitive().tensor()
}

/// `∂L/∂w` (OHWI) from the pre-activation gradient `dy` (NHWC).
pub fn reference_backward_weight<B: Backend>(
    x: FloatTensor<B>,
    w: FloatTensor<B>,
    dy: FloatTensor<B>,
    spec: Conv2dSpec,
) -> FloatTensor<B> {
    let dw = B::conv2d_weight_backward(to_nchw::<B>(x), to_nchw::<B>(w), to_nchw::<B>(dy), spec.burn_options());
    to_nhwc::<B>(dw).into_primitive().tensor()
}
