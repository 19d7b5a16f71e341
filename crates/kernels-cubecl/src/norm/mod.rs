//! Training-mode BatchNorm (+ SiLU) on NHWC activations as one differentiable op: `y = act(γ·(x − μ)/σ + β)` with
//! the batch statistics `μ`, `σ² ` of each channel (biased variance, `σ = √(σ² + eps)`), returning `y`, `μ` and `σ²`
//! (for the caller's running statistics). ultralytics: `Conv.forward` = `act(bn(conv(x)))` in `model.train()`;
//! PyTorch computes it with cuDNN's batch-norm kernels and SiLU's own.
//!
//! Layout: `x: [A1, A2, A3, C]`, the `B·H·W` rows of an NHWC activation seen as three axes that the statistics reduce
//! one after the other ([`crate::conv::row_stages`]; `[n, 1, 1, C]` reduces in one step); `γ`, `β`, `μ`, `σ²`:
//! `[C]`.
//!
//! Why an op: the same formula in Burn tensor ops differentiates op by op — about a dozen full-size intermediate
//! tensors kept for the backward and six full-size reductions per layer. The backward here is the closed form
//! (the gradient of BatchNorm composed with SiLU's), from `x` and the per-channel statistics only:
//!
//! ```text
//! x̂ = (x − μ)/σ,  z = γ·x̂ + β,  dz = dy·s·(1 + z·(1 − s)) with s = sigmoid(z)   (dz = dy without activation)
//! dβ = Σ dz,  dγ = Σ dz·x̂,  dx = (γ/σ)·(dz − dβ/n − x̂·dγ/n)                     (Σ over the n rows)
//! ```
//!
//! Implementations ([`NormBackend`]): `Flex` runs both passes as loops over the rows (`flex.rs`, f32);
//! `CubeBackend` runs each pass as three kernels (`kernels/`: per-chunk partial sums in one pass over the
//! activation, a small pass adding them up, then the elementwise output; `cube.rs`) and `Fusion` registers each pass
//! as one custom op (`fusion.rs`); the trait's default bodies are [`reference`] (Burn tensor ops, the statistics
//! through staged reductions, [`crate::conv::reduce_rows`]). `Autodiff<B, C>` records one backward step whose body
//! is the inner backend's [`NormBackend::batch_norm_train_backward`].
//!
//! Why kernels rather than the reference on the GPU: the reference's reductions are six staged `sum_dim` launches
//! per layer and pass, and its per-channel steps (`√(σ² + eps)`, `γ/σ`, `dβ/n`) run as separate tiny launches,
//! since `Fusion` only fuses elementwise operations of one shape; a training step of yolo26n had ~1,050
//! reductions, the largest kind of launch (`docs/BENCHMARKS.md`, "Kernel launches").
mod autodiff;
mod cube;
mod flex;
mod fusion;
pub(crate) mod kernels;
pub mod reference;

#[cfg(test)]
mod tests;

use burn::tensor::{backend::Backend, ops::FloatTensor, Tensor, TensorPrimitive};

use crate::conv::Activation;

/// Settings of [`batch_norm_train`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchNormSpec {
    /// Added to the variance (`eps`; ultralytics' BatchNorm2d: 1e-3).
    pub epsilon: f64,
    /// Applied to the normalised output.
    pub activation: Activation,
}

/// Backend extension: training-mode BatchNorm (+ activation) with its backward (defaults: [`reference`]).
pub trait NormBackend: Backend {
    /// `x: [A1, A2, A3, C]`, `gamma`, `beta`: `[C]` → `(y: [A1, A2, A3, C], mean: [C], var: [C])`.
    fn batch_norm_train(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        spec: BatchNormSpec,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        reference::forward::<Self>(x, gamma, beta, spec)
    }

    /// The gradients `(dx, dγ, dβ)` of [`NormBackend::batch_norm_train`] for `dy` (`mean`, `var` as it returned).
    #[allow(clippy::too_many_arguments)]
    fn batch_norm_train_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        var: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        spec: BatchNormSpec,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        reference::backward::<Self>(x, gamma, beta, mean, var, dy, spec)
    }
}

fn float<B: Backend, const D: usize>(t: Tensor<B, D>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

fn tensor<B: Backend, const D: usize>(t: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

/// Training-mode BatchNorm of `x: [A1, A2, A3, C]` with per-channel `gamma`, `beta` (`[C]`), then the activation:
/// returns the output and the batch mean and biased variance (`[C]`, not differentiated). Panics when `gamma` or
/// `beta` is not `[C]`.
pub fn batch_norm_train<B: NormBackend>(
    x: Tensor<B, 4>,
    gamma: Tensor<B, 1>,
    beta: Tensor<B, 1>,
    spec: BatchNormSpec,
) -> (Tensor<B, 4>, Tensor<B, 1>, Tensor<B, 1>) {
    let c = x.dims()[3];
    assert!(
        gamma.dims() == [c] && beta.dims() == [c],
        "batch_norm_train: x {:?}, gamma {:?}, beta {:?}",
        x.dims(),
        gamma.dims(),
        beta.dims()
    );
    let (y, mean, var) = B::batch_norm_train(float(x), float(gamma), float(beta), spec);
    (tensor(y), tensor(mean), tensor(var))
}

/// BatchNorm with given statistics (evaluation: the running mean and variance, `[C]`), then the activation:
/// `act(γ·(x − μ)/√(σ² + eps) + β)` on `x: [A1, A2, A3, C]` — the elementwise part of [`batch_norm_train`]'s
/// forward, in the same operations.
pub fn batch_norm_apply<B: Backend>(
    x: Tensor<B, 4>,
    mean: Tensor<B, 1>,
    var: Tensor<B, 1>,
    gamma: Tensor<B, 1>,
    beta: Tensor<B, 1>,
    spec: BatchNormSpec,
) -> Tensor<B, 4> {
    let c = x.dims()[3];
    reference::apply(x, mean.reshape([1, 1, 1, c]), var.reshape([1, 1, 1, c]), gamma, beta, spec)
}
