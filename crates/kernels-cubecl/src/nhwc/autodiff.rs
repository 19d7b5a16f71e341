//! [`NhwcBackend`] for [`Autodiff`]: the concatenation of 2 to 4 inputs runs the inner backend's (one kernel on
//! CubeCL, Flex's row copies on the CPU) and records one backward step: each input's gradient is its channel
//! range of the output gradient (a view, as Burn's `cat` backward gives). Max-pool, upsample and longer lists
//! are Burn's differentiable ops (the reference).
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;
use burn::tensor::TensorMetadata;

use super::{float, reference, tensor, NhwcBackend};
use crate::autodiff_util::differentiable;

impl<B: NhwcBackend, C: CheckpointStrategy> NhwcBackend for Autodiff<B, C> {
    fn cat_channels_nhwc(xs: Vec<FloatTensor<Self>>) -> FloatTensor<Self> {
        match xs.len() {
            2 => cat::<B, C, 2>(xs),
            3 => cat::<B, C, 3>(xs),
            4 => cat::<B, C, 4>(xs),
            _ => reference::cat_channels::<Self>(xs),
        }
    }
}

fn cat<B: NhwcBackend, C: CheckpointStrategy, const N: usize>(
    xs: Vec<FloatTensor<Autodiff<B, C>>>,
) -> FloatTensor<Autodiff<B, C>> {
    let xs: [FloatTensor<Autodiff<B, C>>; N] = xs.try_into().unwrap_or_else(|_| unreachable!("cat: N inputs"));
    let widths: [usize; N] = xs.each_ref().map(|t| t.primitive.shape().dims::<4>()[3]);
    differentiable::<B, C, _, N>(
        xs,
        |xs| (B::cat_channels_nhwc(xs.into()), widths),
        |widths, d, needs| {
            let d = tensor::<B, 4>(d);
            let mut start = 0;
            core::array::from_fn(|i| {
                let s = start;
                start += widths[i];
                needs[i].then(|| float(d.clone().narrow(3, s, widths[i])))
            })
        },
    )
}
