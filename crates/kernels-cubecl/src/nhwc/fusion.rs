//! [`NhwcBackend`] for [`Fusion`]: a concatenation of two or more inputs is one opaque custom op of the fusion
//! stream (the inner backend's: on CubeCL one kernel launch per four inputs); one input is itself; max-pool and
//! upsample are Burn's ops (the reference), which the stream records and fuses as usual.
use burn::tensor::Shape;
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::NhwcBackend;
use crate::fusion_util::{custom_op_n, Prim};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

impl<B: FusionBackend + NhwcBackend> NhwcBackend for Fusion<B> {
    fn cat_channels_nhwc(xs: Vec<T<B>>) -> T<B> {
        if xs.len() == 1 {
            return xs.into_iter().next().expect("one input");
        }
        let [b, h, w, _] = xs[0].shape.dims::<4>();
        let ct: usize = xs.iter().map(|t| t.shape.dims::<4>()[3]).sum();
        let out = [(Shape::new([b, h, w, ct]), xs[0].dtype)];
        let [y] = custom_op_n::<B, 1>("cat_channels_nhwc", xs, out, |xs| {
            [Prim::Float(B::cat_channels_nhwc(xs.into_iter().map(Prim::float).collect()))]
        });
        y
    }
}
