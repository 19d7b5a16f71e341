//! The reference of every NHWC layout op: Burn's own tensor ops (the trait's default bodies).
use burn::nn::pool::MaxPool2dConfig;
use burn::nn::PaddingConfig2d;
use burn::tensor::{backend::Backend, ops::FloatTensor, Tensor};

use super::{float, tensor, PoolSpec};

/// NCHW `MaxPool2d` on the permuted view, permuted back.
pub fn max_pool2d<B: Backend>(x: FloatTensor<B>, spec: PoolSpec) -> FloatTensor<B> {
    let x: Tensor<B, 4> = tensor(x);
    let [_, h, w, _] = x.dims();
    spec.out_hw(h, w); // the same checks on every backend
    let pool = MaxPool2dConfig::new(spec.kernel)
        .with_strides(spec.stride)
        .with_padding(PaddingConfig2d::Explicit(spec.padding[0], spec.padding[1], spec.padding[0], spec.padding[1]))
        .init();
    float(pool.forward(x.permute([0, 3, 1, 2])).permute([0, 2, 3, 1]))
}

/// `Tensor::cat` on axis 3.
pub fn cat_channels<B: Backend>(xs: Vec<FloatTensor<B>>) -> FloatTensor<B> {
    float(Tensor::<B, 4>::cat(xs.into_iter().map(tensor).collect(), 3))
}

/// `[B, H, 1, W, 1, C]` expanded to `[B, H, 2, W, 2, C]`, read as `[B, 2H, 2W, C]`.
pub fn upsample2x<B: Backend>(x: FloatTensor<B>) -> FloatTensor<B> {
    let x: Tensor<B, 4> = tensor(x);
    let [b, h, w, c] = x.dims();
    let x: Tensor<B, 6> = x.reshape([b, h, 1, w, 1, c]);
    float(x.expand([b, h, 2, w, 2, c]).reshape([b, 2 * h, 2 * w, c]))
}
