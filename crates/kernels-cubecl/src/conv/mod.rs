//! 2-D convolution on NHWC tensors as a Burn op: `y = act(conv(x, w) + bias)` in one kernel, with its input and
//! weight gradients. The ultralytics equivalent is `Conv.forward_fuse` (`act(conv(x))`, BN folded into the conv's
//! weight and bias) with PyTorch's `channels_last` memory format.
//!
//! Layouts (the channel is the innermost axis everywhere, so no permute is needed between layers):
//! - `x: [B, H, W, Ci]`, `w: [Co, KH, KW, Ci/groups]` (OHWI; [`weight_to_ohwi`] converts PyTorch's OIHW),
//!   `bias: [Co]`, `y: [B, OH, OW, Co]`, `OH = (H + 2·ph − dh·(KH−1) − 1)/sh + 1` (likewise `OW`).
//!
//! Implementations ([`Conv2dBackend`]):
//! - reference (default bodies, any backend): Burn's NCHW `conv2d` and its backward ops between permutes.
//! - `Flex` (`flex.rs`): f32 forward on the NHWC data (im2col tiles × `gemm`, depthwise rows, fused epilogue);
//!   gradients through the reference.
//! - `CubeBackend` (`cube.rs`, `kernels/`): an implicit GEMM on plain units (exact f32 arithmetic; bias and SiLU in
//!   its epilogue; split-K weight gradient), dedicated depthwise kernels, and with [`ConvMath::Fast`] cubek's
//!   tensor-core implicit GEMM for `groups = 1` (TF32 for f32 storage; f16/bf16 with f32 accumulation): the forward,
//!   and the input gradient at stride 1 (cubek's is wrong at stride 2; see `cube.rs`).
//! - `Fusion<B>`: one custom op; `Autodiff<B, C>`: the conv (+ bias) is one backward step (input, weight and bias
//!   gradients), the activation is Burn's differentiable `silu` after it.
mod autodiff;
pub(crate) mod cube;
pub(crate) mod flex;
mod flex_grad;
mod fusion;
pub(crate) mod kernels;
mod reference;
mod rows;

#[cfg(test)]
mod tests;

pub use reference::{reference_backward_data, reference_backward_weight, reference_forward};
pub use rows::{reduce_rows, row_stages};

use burn::tensor::{backend::Backend, ops::FloatTensor, Tensor, TensorPrimitive};

/// The activation applied after the bias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Activation {
    /// None (`nn.Identity`).
    #[default]
    None,
    /// SiLU `v·σ(v)` (ultralytics' `Conv.default_act`).
    Silu,
}

/// Which arithmetic the GPU kernels may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ConvMath {
    /// Plain f32 multiply-adds whatever the storage dtype (the parity default).
    #[default]
    Exact,
    /// Tensor cores where the runtime has them, for `groups = 1`: TF32 products for f32 storage (PyTorch's
    /// cuDNN default, `allow_tf32 = True`), f16/bf16 products with f32 accumulation: the forward and the
    /// stride-1 input gradient. Elsewhere (and the weight gradient) as `Exact`.
    Fast,
}

/// Stride, padding, dilation and groups of a convolution, its activation and its arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conv2dSpec {
    /// `[rows, columns]`.
    pub stride: [usize; 2],
    /// Zero padding `[rows, columns]` on both sides.
    pub padding: [usize; 2],
    /// `[rows, columns]`.
    pub dilation: [usize; 2],
    /// Channel groups (`Ci` and `Co` divisible by it).
    pub groups: usize,
    /// Applied after the bias.
    pub activation: Activation,
    /// Arithmetic of the GPU kernels.
    pub math: ConvMath,
}

impl Conv2dSpec {
    /// Square stride and padding, no dilation, no activation, exact arithmetic.
    pub fn new(stride: usize, padding: usize, groups: usize) -> Self {
        Self {
            stride: [stride; 2],
            padding: [padding; 2],
            dilation: [1, 1],
            groups,
            activation: Activation::None,
            math: ConvMath::Exact,
        }
    }

    /// The same with `activation`.
    pub fn with_activation(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self
    }

    /// The same with `math`.
    pub fn with_math(mut self, math: ConvMath) -> Self {
        self.math = math;
        self
    }

    /// Burn's options of the same convolution (NCHW ops of the reference).
    pub fn burn_options(&self) -> burn::tensor::ops::ConvOptions<2> {
        burn::tensor::ops::ConvOptions::new(self.stride, self.padding, self.dilation, self.groups)
    }
}

/// Every size of one convolution, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dGeometry {
    /// Batch.
    pub batch: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Input channels.
    pub c_in: usize,
    /// Output height.
    pub oh: usize,
    /// Output width.
    pub ow: usize,
    /// Output channels.
    pub c_out: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Stride.
    pub stride: [usize; 2],
    /// Padding.
    pub padding: [usize; 2],
    /// Dilation.
    pub dilation: [usize; 2],
    /// Groups.
    pub groups: usize,
}

impl Conv2dGeometry {
    /// The geometry of `x [B, H, W, Ci]` convolved with `w [Co, KH, KW, Ci/groups]`, or what is inconsistent.
    pub fn new(x: &[usize], w: &[usize], spec: &Conv2dSpec) -> Result<Self, String> {
        let (&[batch, h, wd, c_in], &[c_out, kh, kw, cig]) = (x, w) else {
            return Err(format!("conv2d_nhwc: expected x [B, H, W, Ci] and w [Co, KH, KW, Ci/g], got {x:?} and {w:?}"));
        };
        let g = spec.groups;
        if g == 0 || c_in % g != 0 || c_out % g != 0 || cig * g != c_in {
            return Err(format!(
                "conv2d_nhwc: groups {g} do not fit x {x:?} (Ci {c_in}) and w {w:?} (Co {c_out}, Ci/g {cig})"
            ));
        }
        if spec.stride.contains(&0) || spec.dilation.contains(&0) || kh == 0 || kw == 0 {
            return Err(format!("conv2d_nhwc: zero stride, dilation or kernel size ({spec:?}, w {w:?})"));
        }
        let out = |len: usize, k: usize, i: usize| {
            let span = spec.dilation[i] * (k - 1) + 1;
            (len + 2 * spec.padding[i]).checked_sub(span).map(|r| r / spec.stride[i] + 1)
        };
        let (Some(oh), Some(ow)) = (out(h, kh, 0), out(wd, kw, 1)) else {
            return Err(format!("conv2d_nhwc: kernel {kh}x{kw} larger than the padded input {h}x{wd} ({spec:?})"));
        };
        Ok(Self {
            batch,
            h,
            w: wd,
            c_in,
            oh,
            ow,
            c_out,
            kh,
            kw,
            stride: spec.stride,
            padding: spec.padding,
            dilation: spec.dilation,
            groups: g,
        })
    }

    /// One filter per channel (`groups = Ci = Co`).
    pub fn depthwise(&self) -> bool {
        self.groups == self.c_in && self.groups == self.c_out
    }

    /// `[B, OH, OW, Co]`.
    pub fn out_shape(&self) -> [usize; 4] {
        [self.batch, self.oh, self.ow, self.c_out]
    }

    /// `[Co, KH, KW, Ci/groups]`.
    pub fn weight_shape(&self) -> [usize; 4] {
        [self.c_out, self.kh, self.kw, self.c_in / self.groups]
    }
}

/// `y = act(conv(x, w) + bias)`: `x [B, H, W, Ci]`, `w [Co, KH, KW, Ci/groups]`, `bias [Co]` → `[B, OH, OW, Co]`.
/// Differentiable w.r.t. `x`, `w` and `bias` under `Autodiff`.
///
/// # Panics
/// When the shapes do not fit `spec` (the message names them).
pub fn conv2d_nhwc<B: Conv2dBackend>(
    x: Tensor<B, 4>,
    w: Tensor<B, 4>,
    bias: Option<Tensor<B, 1>>,
    spec: Conv2dSpec,
) -> Tensor<B, 4> {
    let geo = Conv2dGeometry::new(&x.dims(), &w.dims(), &spec).unwrap_or_else(|e| panic!("{e}"));
    if let Some(b) = &bias {
        assert_eq!(b.dims(), [geo.c_out], "conv2d_nhwc: bias {:?} for {} output channels", b.dims(), geo.c_out);
    }
    let bias = bias.map(|b| b.into_primitive().tensor());
    let y = B::conv2d_nhwc(x.into_primitive().tensor(), w.into_primitive().tensor(), bias, spec);
    Tensor::from_primitive(TensorPrimitive::Float(y))
}

/// PyTorch's conv weight `[Co, Ci/groups, KH, KW]` (OIHW) as `[Co, KH, KW, Ci/groups]` (OHWI), contiguous (likewise
/// any NCHW tensor as NHWC).
pub fn weight_to_ohwi<B: Backend>(w: Tensor<B, 4>) -> Tensor<B, 4> {
    let dims = w.dims();
    let flat: Tensor<B, 1> = w.permute([0, 2, 3, 1]).reshape([dims.iter().product::<usize>()]);
    flat.reshape([dims[0], dims[2], dims[3], dims[1]])
}

static TENSOR_CORE_GRADIENTS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Opt-in, process-wide: the tensor-core gradient kernels written on 2026-12-08 and not yet run on a GPU — the
/// f16/bf16 weight gradient on `cmma` (`kernels::wgrad_cmma`) and strided input gradients of `ConvMath::Fast`
/// through cubek's stride-1 GEMM (`cube::strided_fast_dgrad`). Off: the exact kernels, as before. The `yolo26`
/// CLI turns it on when the environment has `YOLO26_TC_GRADS=1`.
pub fn set_tensor_core_gradients(on: bool) {
    TENSOR_CORE_GRADIENTS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`set_tensor_core_gradients`] is on.
pub fn tensor_core_gradients() -> bool {
    TENSOR_CORE_GRADIENTS.load(std::sync::atomic::Ordering::Relaxed)
}

/// `f()` on a thread of rayon's global pool when `B` computes there ([`Conv2dBackend::HOST_POOL`]; the calling
/// thread waits once), else on the calling thread (GPU backends keep their per-thread streams). Measured on a
/// 2-core VM (2026-12-08, `yolo26 bench --device cpu --batch 1`, 3 alternated pairs): forward medians 56.4 /
/// 47.7 / 44.7 → 52.8 / 45.1 / 39.7 ms. Used for inference only: with a training step's forward and backward
/// wrapped too, one run of the integration tests (tests in parallel threads of one process) saw an amp step
/// whose gradients lacked 6 of 366 parameters (not reproduced in 7 runs of the test alone; not understood), so
/// Autodiff work stays on the caller's thread.
pub fn on_host_pool<B: Conv2dBackend, T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if !B::HOST_POOL || rayon::current_thread_index().is_some() {
        return f();
    }
    let mut out = None;
    rayon::scope(|s| s.spawn(|_| out = Some(f())));
    out.expect("the pool ran the closure")
}

/// Backend extension: the NHWC convolution and its gradients.
pub trait Conv2dBackend: Backend {
    /// Whether reducing an NHWC activation seen as the row-major `[B·H·W, C]` matrix over its rows (`mean_dim(0)`)
    /// is the cheap way to get per-channel statistics on this backend (the BatchNorm of a training step). `true` on
    /// Flex, whose transposing copies walk element by element (Burn's `BatchNorm` on a permuted view made a CPU
    /// training step 4.7× slower). `false` on the CubeCL backends, whose reductions run about one unit per output:
    /// a reduction to a handful of columns is nearly serial there (a yolo26n training step on an H100 took 5,970
    /// ms that way), so column reductions go in steps there ([`row_stages`]).
    const ROW_REDUCTIONS_ARE_FAST: bool = false;

    /// Whether this backend computes on the host's rayon pool (Flex). Callers then run a whole forward on a pool
    /// thread ([`on_host_pool`]), so the ops' parallel loops start from a worker instead of waking the calling
    /// thread around every op.
    const HOST_POOL: bool = false;

    /// `act(conv(x, w) + bias)`, `[B, OH, OW, Co]` (see [`conv2d_nhwc`]).
    fn conv2d_nhwc(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        spec: Conv2dSpec,
    ) -> FloatTensor<Self> {
        reference_forward::<Self>(x, w, bias, spec)
    }

    /// `∂L/∂x [B, H, W, Ci]` from `dy = ∂L/∂(conv(x, w) + bias)` `[B, OH, OW, Co]` (before the activation);
    /// `x` gives the shape.
    fn conv2d_nhwc_backward_data(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        spec: Conv2dSpec,
    ) -> FloatTensor<Self> {
        reference_backward_data::<Self>(x, w, dy, spec)
    }

    /// `∂L/∂w [Co, KH, KW, Ci/groups]` from `dy` (as for [`Conv2dBackend::conv2d_nhwc_backward_data`]).
    fn conv2d_nhwc_backward_weight(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        spec: Conv2dSpec,
    ) -> FloatTensor<Self> {
        reference_backward_weight::<Self>(x, w, dy, spec)
    }
}
