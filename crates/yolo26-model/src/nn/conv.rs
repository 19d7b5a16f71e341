//! `Conv` (conv → BatchNorm → SiLU), `DWConv` and the BN folding used for inference.
//!
//! ultralytics: `nn/modules/conv.py::Conv`, `DWConv`; `utils/torch_utils.py::fuse_conv_and_bn`.
//! Activations are NHWC (`[B, H, W, C]`, PyTorch's `channels_last`); the weight is stored as PyTorch's
//! `[c_out, c_in / groups, k, k]` (a Burn `Conv2d`, so loading, saving, BN folding and the optimizer see
//! ultralytics' shapes) and viewed as `[c_out, k, k, c_in / groups]` for [`kernels_cubecl::conv::conv2d_nhwc`] at
//! each call. State-dict names: `conv.weight`, `bn.{weight, bias, running_mean, running_var}` (Burn's
//! `gamma`/`beta` are renamed on load, see `crate::load`).

use std::sync::atomic::{AtomicU8, Ordering};

use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, PaddingConfig2d};
use burn::prelude::*;
use kernels_cubecl::conv::{conv2d_nhwc, row_stages, weight_to_ohwi, Activation, Conv2dSpec};
/// The convolutions' arithmetic ([`set_conv_math`]) and the opt-in tensor-core gradient kernels.
pub use kernels_cubecl::conv::{set_tensor_core_gradients, ConvMath};

use kernels_cubecl::norm::{batch_norm_apply, batch_norm_train, BatchNormSpec};

use crate::YoloBackend;

/// The arithmetic every convolution of the process uses on the GPU backends (0 = exact, 1 = fast).
static CONV_MATH: AtomicU8 = AtomicU8::new(0);

/// Sets the arithmetic of every convolution of the model ([`ConvMath::Exact`] by default; [`ConvMath::Fast`]:
/// tensor cores, TF32 for f32 — PyTorch's cuDNN default). Process-wide: it is read at each call.
pub fn set_conv_math(math: ConvMath) {
    CONV_MATH.store(matches!(math, ConvMath::Fast) as u8, Ordering::Relaxed);
}

/// The arithmetic set by [`set_conv_math`].
pub fn conv_math() -> ConvMath {
    if CONV_MATH.load(Ordering::Relaxed) == 1 {
        ConvMath::Fast
    } else {
        ConvMath::Exact
    }
}

/// `act(conv(x) + bias)` of a Burn `Conv2d` module on NHWC `x` (its stride, symmetric padding, dilation, groups;
/// the weight viewed as OHWI).
pub fn conv2d_module_nhwc<B: YoloBackend>(conv: &Conv2d<B>, x: Tensor<B, 4>, activation: Activation) -> Tensor<B, 4> {
    let (top, left) = match conv.padding {
        PaddingConfig2d::Valid => (0, 0),
        PaddingConfig2d::Explicit(top, left, bottom, right) if top == bottom && left == right => (top, left),
        ref p => panic!("conv2d_module_nhwc: only symmetric explicit or valid padding, got {p:?}"),
    };
    let spec = Conv2dSpec {
        stride: conv.stride,
        padding: [top, left],
        dilation: conv.dilation,
        groups: conv.groups,
        activation,
        math: conv_math(),
    };
    // mixed precision (`yolo26 train --amp`): f32 parameters, half activations: the weight and bias are cast to
    // the activations' dtype here (torch.autocast's cast of a conv's weight); the gradient flows back through the
    // cast to the f32 parameter. A no-op when the dtypes agree.
    let dtype = x.dtype();
    let w = weight_to_ohwi(conv.weight.val().cast(dtype));
    conv2d_nhwc(x, w, conv.bias.as_ref().map(|b| b.val().cast(dtype)), spec)
}

/// Burn's `BatchNorm::forward` on NHWC `x [B, H, W, C]`, without permuted copies: `x` is seen as the row-major
/// `[A1, A2, A3, C]` array (`A1·A2·A3 = B·H·W` rows, [`row_stages`]: one axis on Flex, three on the CubeCL
/// backends, where the reference's Burn reductions are slow to few outputs; the op's CubeCL kernels read the rows
/// as one `[B·H·W, C]` matrix whatever the stages) and every statistic is a mean over the rows, every broadcast one
/// of `[1, 1, 1, C]`; `act` follows the norm. Under autodiff (training): batch mean and biased
/// variance through [`kernels_cubecl::norm::batch_norm_train`] (norm and activation as one op with a closed-form
/// backward), running statistics updated with the module's momentum, as Burn (and, up to the variance's
/// `n / (n − 1)`, torch) does; otherwise the running statistics.
pub fn batch_norm_nhwc<B: YoloBackend>(bn: &BatchNorm<B>, x: Tensor<B, 4>, act: Activation) -> Tensor<B, 4> {
    let [b, h, w, c] = x.dims();
    batch_norm_nhwc_staged(bn, x, row_stages::<B>(b * h * w, c), act)
}

/// [`batch_norm_nhwc`] with the rows seen as `stages = [A1, A2, A3]` (whose product must be `B·H·W`).
pub fn batch_norm_nhwc_staged<B: YoloBackend>(
    bn: &BatchNorm<B>,
    x: Tensor<B, 4>,
    stages: [usize; 3],
    act: Activation,
) -> Tensor<B, 4> {
    let dims = x.dims();
    let (n, c) = (dims[0] * dims[1] * dims[2], dims[3]);
    assert_eq!(stages.iter().product::<usize>(), n, "batch_norm_nhwc: stages {stages:?} for {n} rows");
    let x: Tensor<B, 4> = x.reshape([stages[0], stages[1], stages[2], c]);
    let device = x.device();
    if B::ad_enabled(&device) {
        // training: one differentiable op (closed-form backward, kernels_cubecl::norm)
        let spec = BatchNormSpec { epsilon: bn.epsilon, activation: act };
        let (y, mean, var) = batch_norm_train(x, bn.gamma.val(), bn.beta.val(), spec);
        let m = bn.momentum;
        let update = |running: Tensor<B, 1>, batch: Tensor<B, 1>| {
            running.to_device(&device).mul_scalar(1.0 - m).add(batch.detach().mul_scalar(m))
        };
        bn.running_mean.update(update(bn.running_mean.value_sync(), mean).detach());
        bn.running_var.update(update(bn.running_var.value_sync(), var).detach());
        return y.reshape(dims);
    }
    let (mean, var) = (bn.running_mean.value().to_device(&device), bn.running_var.value().to_device(&device));
    let spec = BatchNormSpec { epsilon: bn.epsilon, activation: act };
    batch_norm_apply(x, mean, var, bn.gamma.val(), bn.beta.val(), spec).reshape(dims)
}

/// ultralytics `nn.modules.conv.Conv(c1, c2, k, s, p=k//2, g, d=1, act)`: bias-free conv, BatchNorm (eps 1e-3,
/// momentum 0.03), SiLU. Built by [`ConvConfig::init`].
#[derive(Module, Debug)]
pub struct Conv<B: Backend> {
    /// The `k×k` convolution, weight `[c2, c1 / g, k, k]` (bias-free until the norm is folded into it).
    pub conv: Conv2d<B>,
    /// `None` once folded into `conv` ([`Conv::fold_bn`]).
    pub bn: Option<BatchNorm<B>>,
    /// SiLU after the norm (`act=True`), identity otherwise.
    pub act: bool,
}

/// Hyper-parameters of a [`Conv`] (ultralytics' argument names; padding is always `k / 2`).
#[derive(Config, Debug)]
pub struct ConvConfig {
    /// Input channels.
    pub c1: usize,
    /// Output channels.
    pub c2: usize,
    /// Kernel size (square).
    #[config(default = 1)]
    pub k: usize,
    /// Stride.
    #[config(default = 1)]
    pub s: usize,
    /// Groups (`c1` for a depthwise conv).
    #[config(default = 1)]
    pub g: usize,
    /// SiLU after the norm.
    #[config(default = true)]
    pub act: bool,
}

impl ConvConfig {
    /// Builds the [`Conv`] (random weights, BatchNorm at its identity statistics).
    pub fn init<B: Backend>(&self, device: &B::Device) -> Conv<B> {
        let p = self.k / 2;
        let conv = Conv2dConfig::new([self.c1, self.c2], [self.k, self.k])
            .with_stride([self.s, self.s])
            .with_groups(self.g)
            .with_padding(PaddingConfig2d::Explicit(p, p, p, p))
            .with_bias(false)
            .init(device);
        let bn = BatchNormConfig::new(self.c2).with_epsilon(1e-3).with_momentum(0.03).init(device);
        Conv { conv, bn: Some(bn), act: self.act }
    }

    /// ultralytics `DWConv(c1, c2, k, s)`: a `Conv` with `groups = gcd(c1, c2)`.
    pub fn dw(c1: usize, c2: usize, k: usize) -> Self {
        ConvConfig::new(c1, c2).with_k(k).with_g(gcd(c1, c2))
    }
}

/// Greatest common divisor (`math.gcd`, for [`ConvConfig::dw`]'s groups).
pub fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl<B: YoloBackend> Conv<B> {
    /// `[B, H, W, c1] → [B, H/s, W/s, c2]` (rounded up). Folded: conv, bias and SiLU in one kernel.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let act = if self.act { Activation::Silu } else { Activation::None };
        match &self.bn {
            None => conv2d_module_nhwc(&self.conv, x, act),
            Some(bn) => batch_norm_nhwc(bn, conv2d_module_nhwc(&self.conv, x, Activation::None), act),
        }
    }
}

impl<B: YoloBackend> Conv<B> {
    /// [`Conv::forward`] followed by `chunk(n, 3)` (the output's channels in `n` equal parts), as C3k2 uses its
    /// `cv1`. A folded conv without groups computes each part as a convolution of its own (the weight's and bias's
    /// rows of that part: views, no copy), so every part is a contiguous tensor: the chunk views of one output made
    /// the next conv's input and the bottleneck's residual add walk strided memory (9 % of a CPU forward,
    /// `perf`, 2026-12-07). Otherwise (training, BatchNorm not folded) the output is chunked. Same values either way.
    pub fn forward_chunks(&self, x: Tensor<B, 4>, n: usize) -> Vec<Tensor<B, 4>> {
        let [co, _, _, _] = self.conv.weight.dims();
        if self.bn.is_some() || self.conv.groups != 1 || n <= 1 || !co.is_multiple_of(n) {
            return self.forward(x).chunk(n, 3);
        }
        let act = if self.act { Activation::Silu } else { Activation::None };
        let (top, left) = match self.conv.padding {
            PaddingConfig2d::Explicit(top, left, bottom, right) if top == bottom && left == right => (top, left),
            _ => return self.forward(x).chunk(n, 3),
        };
        let spec = Conv2dSpec {
            stride: self.conv.stride,
            padding: [top, left],
            dilation: self.conv.dilation,
            groups: 1,
            activation: act,
            math: conv_math(),
        };
        let dtype = x.dtype();
        let w = weight_to_ohwi(self.conv.weight.val().cast(dtype));
        let b = self.conv.bias.as_ref().map(|b| b.val().cast(dtype));
        let part = co / n;
        (0..n)
            .map(|i| {
                let r = i * part..(i + 1) * part;
                conv2d_nhwc(x.clone(), w.clone().slice(r.clone()), b.clone().map(|b| b.slice(r)), spec)
            })
            .collect()
    }
}

impl<B: Backend> Conv<B> {
    /// Folds the BatchNorm into the convolution (`w' = w·γ/√(var+eps)`, `b' = (b − mean)·γ/√(var+eps) + β`),
    /// as `fuse_conv_and_bn` does for inference. A no-op when already folded.
    pub fn fold_bn(mut self) -> Self {
        if let Some(bn) = self.bn.take() {
            self.conv = fold_conv_bn(self.conv, &bn);
        }
        self
    }
}

/// `fuse_conv_bn_weights`: returns the conv with the norm folded into weight and bias (the weight's memory in OHWI
/// order, seen as OIHW).
pub fn fold_conv_bn<B: Backend>(mut conv: Conv2d<B>, bn: &BatchNorm<B>) -> Conv2d<B> {
    let scale = bn.gamma.val() / (bn.running_var.value() + bn.epsilon).sqrt();
    let [co, _, _, _] = conv.weight.dims();
    let w = conv.weight.val() * scale.clone().reshape([co, 1, 1, 1]);
    let b0 = match &conv.bias {
        Some(b) => b.val(),
        None => Tensor::zeros([co], &scale.device()),
    };
    let b = bn.beta.val() + (b0 - bn.running_mean.value()) * scale;
    // stored OHWI (what `conv2d_nhwc` reads) behind an OIHW view, so `weight_to_ohwi` at each call is a free view
    conv.weight = burn::module::Param::from_tensor(weight_to_ohwi(w).permute([0, 3, 1, 2]));
    conv.bias = Some(burn::module::Param::from_tensor(b));
    conv
}

/// A plain biased 1×1 `nn.Conv2d` (the last conv of each Detect branch).
pub fn conv1x1_bias<B: Backend>(c1: usize, c2: usize, device: &B::Device) -> Conv2d<B> {
    Conv2dConfig::new([c1, c2], [1, 1]).with_bias(true).init(device)
}
