//! [`Conv2dBackend`] for [`Fusion`]: each pass is one opaque custom op of the fusion stream (the activation is
//! inside the forward kernel, so nothing is lost by not fusing it).
use burn::tensor::Shape;
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::{Conv2dBackend, Conv2dGeometry, Conv2dSpec};
use crate::fusion_util::{custom_op, Prim};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

fn geometry<B: FusionBackend>(x: &T<B>, w: &T<B>, spec: &Conv2dSpec) -> Conv2dGeometry {
    Conv2dGeometry::new(x.shape.as_slice(), w.shape.as_slice(), spec).unwrap_or_else(|e| panic!("{e}"))
}

impl<B: FusionBackend + Conv2dBackend> Conv2dBackend for Fusion<B> {
    fn conv2d_nhwc(x: T<B>, w: T<B>, bias: Option<T<B>>, spec: Conv2dSpec) -> T<B> {
        let out = [(Shape::new(geometry::<B>(&x, &w, &spec).out_shape()), x.dtype)];
        match bias {
            Some(b) => {
                let [y] = custom_op::<B, 3, 1>("conv2d_nhwc", [x, w, b], out, move |[x, w, b]| {
                    [Prim::Float(B::conv2d_nhwc(x.float(), w.float(), Some(b.float()), spec))]
                });
                y
            }
            None => {
                let [y] = custom_op::<B, 2, 1>("conv2d_nhwc", [x, w], out, move |[x, w]| {
                    [Prim::Float(B::conv2d_nhwc(x.float(), w.float(), None, spec))]
                });
                y
            }
        }
    }

    fn conv2d_nhwc_backward_data(x: T<B>, w: T<B>, dy: T<B>, spec: Conv2dSpec) -> T<B> {
        geometry::<B>(&x, &w, &spec);
        let out = [(x.shape.clone(), x.dtype)];
        let [dx] = custom_op::<B, 3, 1>("conv2d_nhwc_backward_data", [x, w, dy], out, move |[x, w, dy]| {
            [Prim::Float(B::conv2d_nhwc_backward_data(x.float(), w.float(), dy.float(), spec))]
        });
        dx
    }

    fn conv2d_nhwc_backward_weight(x: T<B>, w: T<B>, dy: T<B>, spec: Conv2dSpec) -> T<B> {
        geometry::<B>(&x, &w, &spec);
        let out = [(w.shape.clone(), x.dtype)];
        let [dw] = custom_op::<B, 3, 1>("conv2d_nhwc_backward_weight", [x, w, dy], out, move |[x, w, dy]| {
            [Prim::Float(B::conv2d_nhwc_backward_weight(x.float(), w.float(), dy.float(), spec))]
        });
        dw
    }
}
