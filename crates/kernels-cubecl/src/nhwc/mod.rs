//! Layout ops on NHWC activations (`[B, H, W, C]`, channels contiguous): max-pool, channel concatenation and
//! nearest 2× upsampling — what a channels-last network needs besides its convolutions.
//!
//! ultralytics / torch equivalents (on NCHW): `nn.MaxPool2d(k, s, p)`, `torch.cat(xs, 1)`,
//! `nn.Upsample(scale_factor=2, mode="nearest")`.
//!
//! - [`max_pool2d`], [`cat_channels`], [`upsample2x`]: the `Tensor`-level functions.
//! - [`NhwcBackend`]: the backend extension trait. Its default methods are the reference (`reference.rs`: Burn's
//!   own ops — NCHW pooling on permuted views, `Tensor::cat` on the last axis, expand + reshape), which CubeCL
//!   backends already fuse or run well and which `Autodiff` differentiates. `Flex` overrides them with direct
//!   loops over contiguous channel rows (`flex.rs`): Burn's CPU versions of these ops walked strided views element
//!   by element (a yolo26n forward at 640 spent ~20 % of its time in them).
//! - The channel concatenation has its own kernel on CubeCL (`kernels.rs`, `cube.rs`: up to four inputs in one
//!   launch, strided inputs read in place; Burn's `cat` is one slice-assign launch per input plus a copy per
//!   strided input), one custom op on `Fusion` (`fusion.rs`) and one backward step under `Autodiff`
//!   (`autodiff.rs`: each input's gradient is its channel range of the output's).

mod autodiff;
mod cube;
mod flex;
mod fusion;
pub(crate) mod kernels;
mod reference;

#[cfg(test)]
mod tests;

use burn::tensor::{backend::Backend, ops::FloatTensor, Tensor, TensorPrimitive};

/// Geometry of a max-pool over NHWC: kernel, stride, padding (`[h, w]` each; padding counts as `-∞`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSpec {
    /// Window `[kh, kw]`.
    pub kernel: [usize; 2],
    /// Step `[sh, sw]`.
    pub stride: [usize; 2],
    /// Rows / columns of `-∞` added on each side, `[ph, pw]`.
    pub padding: [usize; 2],
}

impl PoolSpec {
    /// Output `[OH, OW]` for an input of `[H, W]` (PyTorch's floor rule); panics on an empty output or a
    /// padding over half the kernel (PyTorch's rule too).
    pub fn out_hw(&self, h: usize, w: usize) -> [usize; 2] {
        let out = |i: usize, d: usize| {
            let (k, s, p) = (self.kernel[d], self.stride[d], self.padding[d]);
            assert!(k >= 1 && s >= 1 && 2 * p <= k, "max_pool2d_nhwc: kernel {k}, stride {s}, padding {p}");
            assert!(i + 2 * p >= k, "max_pool2d_nhwc: input {i} + 2·{p} smaller than kernel {k}");
            (i + 2 * p - k) / s + 1
        };
        [out(h, 0), out(w, 1)]
    }
}

/// Backend extension: layout ops on NHWC float tensors (defaults: Burn's ops, see the module docs).
pub trait NhwcBackend: Backend {
    /// Max-pool of `x: [B, H, W, C]` → `[B, OH, OW, C]`.
    fn max_pool2d_nhwc(x: FloatTensor<Self>, spec: PoolSpec) -> FloatTensor<Self> {
        reference::max_pool2d::<Self>(x, spec)
    }

    /// Concatenation along the channel axis of `[B, H, W, Cᵢ]` tensors → `[B, H, W, ΣCᵢ]`.
    fn cat_channels_nhwc(xs: Vec<FloatTensor<Self>>) -> FloatTensor<Self> {
        reference::cat_channels::<Self>(xs)
    }

    /// Nearest-neighbour 2× upsampling of `[B, H, W, C]` → `[B, 2H, 2W, C]`.
    fn upsample2x_nhwc(x: FloatTensor<Self>) -> FloatTensor<Self> {
        reference::upsample2x::<Self>(x)
    }
}

fn float<B: Backend, const D: usize>(t: Tensor<B, D>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

fn tensor<B: Backend, const D: usize>(t: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

/// Max-pool of `x: [B, H, W, C]` (`nn.MaxPool2d(kernel, stride, padding)` on the NCHW view).
pub fn max_pool2d<B: NhwcBackend>(x: Tensor<B, 4>, spec: PoolSpec) -> Tensor<B, 4> {
    tensor(B::max_pool2d_nhwc(float(x), spec))
}

/// `torch.cat(xs, dim=1)` of NCHW views = concatenation of `[B, H, W, Cᵢ]` on the last axis. Panics on an
/// empty list or mismatched `B, H, W`.
pub fn cat_channels<B: NhwcBackend>(xs: Vec<Tensor<B, 4>>) -> Tensor<B, 4> {
    assert!(!xs.is_empty(), "cat_channels: no tensors");
    let [b, h, w, _] = xs[0].dims();
    for x in &xs {
        let [b2, h2, w2, _] = x.dims();
        assert!([b2, h2, w2] == [b, h, w], "cat_channels: {:?} vs [{b}, {h}, {w}, _]", x.dims());
    }
    tensor(B::cat_channels_nhwc(xs.into_iter().map(float).collect()))
}

/// Nearest 2× upsampling of `[B, H, W, C]` → `[B, 2H, 2W, C]` (`nn.Upsample(None, 2, "nearest")`).
pub fn upsample2x<B: NhwcBackend>(x: Tensor<B, 4>) -> Tensor<B, 4> {
    tensor(B::upsample2x_nhwc(float(x)))
}
