//! [`Conv2dBackend`] for [`Autodiff`]: `conv(x, w) + bias` is one backward step (the inner backend's data and
//! weight gradients; the bias gradient is `dy` summed over the pixels); the activation is Burn's differentiable
//! `silu` on top, so its backward is Burn's (it needs the pre-activation, which the step's output is).
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::{activation, ops::FloatTensor};

use super::{Activation, Conv2dBackend, Conv2dSpec};
use crate::autodiff_util::{constant, differentiable};
use crate::tensor_util::float;

/// `Σ_pixels dy`: `[B, OH, OW, Co]` → `[Co]`.
fn bias_grad<B: Conv2dBackend>(dy: FloatTensor<B>) -> FloatTensor<B> {
    let dy = float::<B, 4>(dy);
    let [b, h, w, co] = dy.dims();
    let [a1, a2, a3] = super::row_stages::<B>(b * h * w, co);
    super::reduce_rows(dy.reshape([a1, a2, a3, co]), false).reshape([co]).into_primitive().tensor()
}

impl<B: Conv2dBackend, C: CheckpointStrategy> Conv2dBackend for Autodiff<B, C> {
    const ROW_REDUCTIONS_ARE_FAST: bool = B::ROW_REDUCTIONS_ARE_FAST;
    const HOST_POOL: bool = B::HOST_POOL;

    fn conv2d_nhwc(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        spec: Conv2dSpec,
    ) -> FloatTensor<Self> {
        // the step covers the linear part; the activation is applied (and differentiated) by Burn below
        let lin = Conv2dSpec { activation: Activation::None, ..spec };
        let z = match bias {
            Some(b) => differentiable::<B, C, _, 3>(
                [x, w, b],
                |[x, w, b]| (B::conv2d_nhwc(x.clone(), w.clone(), Some(b), lin), (x, w, lin)),
                // z = conv(x, w) + b: dx and dw through the transposed convolutions, db = Σ dz
                |(x, w, lin), dz, needs| {
                    let dx = needs[0].then(|| B::conv2d_nhwc_backward_data(x.clone(), w.clone(), dz.clone(), lin));
                    let dw = needs[1].then(|| B::conv2d_nhwc_backward_weight(x, w, dz.clone(), lin));
                    let db = needs[2].then(|| bias_grad::<B>(dz));
                    [dx, dw, db]
                },
            ),
            None => differentiable::<B, C, _, 2>(
                [x, w],
                |[x, w]| (B::conv2d_nhwc(x.clone(), w.clone(), None, lin), (x, w, lin)),
                // z = conv(x, w): dx and dw through the transposed convolutions
                |(x, w, lin), dz, needs| {
                    let dx = needs[0].then(|| B::conv2d_nhwc_backward_data(x.clone(), w.clone(), dz.clone(), lin));
                    let dw = needs[1].then(|| B::conv2d_nhwc_backward_weight(x, w, dz, lin));
                    [dx, dw]
                },
            ),
        };
        match spec.activation {
            Activation::None => z,
            Activation::Silu => activation::silu(float::<Self, 4>(z)).into_primitive().tensor(),
        }
    }

    fn conv2d_nhwc_backward_data(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        spec: Conv2dSpec,
    ) -> FloatTensor<Self> {
        constant(B::conv2d_nhwc_backward_data(x.primitive, w.primitive, dy.primitive, spec))
    }

    fn conv2d_nhwc_backward_weight(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        spec: Conv2dSpec,
    ) -> FloatTensor<Self> {
        constant(B::conv2d_nhwc_backward_weight(x.primitive, w.primitive, dy.primitive, spec))
    }
}
