//! The reference of the training BatchNorm op in Burn tensor ops (the trait's default bodies; see the module doc
//! for the formulas).
//!
//! Mixed precision (training with f16/bf16 activations and f32 parameters, `yolo26 train --amp`): the arithmetic
//! runs in the compute dtype of `x` (f32 for half, [`crate::tensor_util::compute_dtype`]), as cuDNN's batch norm
//! does for half inputs; `y` and `dx` come back in `x`'s dtype, `μ`, `σ²`, `dγ`, `dβ` in `γ`'s.
use burn::tensor::{activation::sigmoid, backend::Backend, ops::FloatTensor, DType, Tensor, TensorMetadata};

use super::{float, tensor, BatchNormSpec};
use crate::conv::{reduce_rows, Activation};
use crate::tensor_util::compute_dtype;

/// `[C]` → `[1, 1, 1, C]`.
fn per_channel<B: Backend>(t: FloatTensor<B>) -> Tensor<B, 4> {
    let t: Tensor<B, 1> = tensor(t);
    let c = t.dims()[0];
    t.reshape([1, 1, 1, c])
}

/// `σ = √(var + eps)` as `[1, 1, 1, C]` (the forward and the backward compute it the same way).
fn std_of<B: Backend>(var: Tensor<B, 4>, eps: f64) -> Tensor<B, 4> {
    var.add_scalar(eps).sqrt()
}

/// Forward: `(act(γ·(x − μ)/σ + β), μ, σ²)` with `μ`, `σ²` the means over the rows (staged as `x`'s first three axes).
pub fn forward<B: Backend>(
    x: FloatTensor<B>,
    gamma: FloatTensor<B>,
    beta: FloatTensor<B>,
    spec: BatchNormSpec,
) -> (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>) {
    let x: Tensor<B, 4> = tensor(x);
    let (out, stat) = (x.dtype(), gamma.dtype());
    let x = x.cast(compute_dtype(out));
    let c = x.dims()[3];
    let mean = reduce_rows(x.clone(), true);
    let var = reduce_rows(x.clone().sub(mean.clone()).square(), true);
    let y = apply(x, mean.clone(), var.clone(), tensor(gamma), tensor(beta), spec).cast(out);
    (float(y), float(mean.reshape([c]).cast(stat)), float(var.reshape([c]).cast(stat)))
}

/// `act(γ·(x − μ)/√(σ² + eps) + β)` with given statistics (`[1, 1, 1, C]`), `γ`, `β`: `[C]`: the forward's
/// elementwise part, also BatchNorm in evaluation (running statistics). Computed in `x`'s compute dtype (the
/// statistics and `γ`, `β` cast to it), returned in `x`'s dtype.
pub fn apply<B: Backend>(
    x: Tensor<B, 4>,
    mean: Tensor<B, 4>,
    var: Tensor<B, 4>,
    gamma: Tensor<B, 1>,
    beta: Tensor<B, 1>,
    spec: BatchNormSpec,
) -> Tensor<B, 4> {
    let c = gamma.dims()[0];
    let out = x.dtype();
    let cd = compute_dtype(out);
    let (x, mean, var, gamma, beta) = (x.cast(cd), mean.cast(cd), var.cast(cd), gamma.cast(cd), beta.cast(cd));
    let y = x.sub(mean).div(std_of(var, spec.epsilon)).mul(gamma.reshape([1, 1, 1, c])).add(beta.reshape([1, 1, 1, c]));
    let y = match spec.activation {
        Activation::None => y,
        Activation::Silu => burn::tensor::activation::silu(y),
    };
    y.cast(out)
}

/// Backward: `(dx, dγ, dβ)` for the output gradient `dy` (closed form, see the module doc).
pub fn backward<B: Backend>(
    x: FloatTensor<B>,
    gamma: FloatTensor<B>,
    beta: FloatTensor<B>,
    mean: FloatTensor<B>,
    var: FloatTensor<B>,
    dy: FloatTensor<B>,
    spec: BatchNormSpec,
) -> (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>) {
    let x: Tensor<B, 4> = tensor(x);
    let (out, stat): (DType, DType) = (x.dtype(), gamma.dtype());
    let cd = compute_dtype(out);
    let x = x.cast(cd);
    let [a1, a2, a3, c] = x.dims();
    let n = (a1 * a2 * a3) as f64;
    let (gamma, beta) = (per_channel::<B>(gamma).cast(cd), per_channel::<B>(beta).cast(cd));
    let std = std_of(per_channel::<B>(var).cast(cd), spec.epsilon);
    let xhat = x.sub(per_channel::<B>(mean).cast(cd)).div(std.clone());
    let dy: Tensor<B, 4> = tensor::<B, 4>(dy).cast(cd);
    let dz = match spec.activation {
        Activation::None => dy,
        Activation::Silu => {
            // d silu(z)/dz = s·(1 + z·(1 − s)), s = sigmoid(z), z the pre-activation recomputed from x
            let z = xhat.clone().mul(gamma.clone()).add(beta);
            let s = sigmoid(z.clone());
            dy.mul(s.clone()).mul(z.mul(s.neg().add_scalar(1.0)).add_scalar(1.0))
        }
    };
    let dbeta = reduce_rows(dz.clone(), false);
    let dgamma = reduce_rows(dz.clone().mul(xhat.clone()), false);
    let dx = dz.sub(dbeta.clone().div_scalar(n)).sub(xhat.mul(dgamma.clone().div_scalar(n))).mul(gamma.div(std));
    (float(dx.cast(out)), float(dgamma.reshape([c]).cast(stat)), float(dbeta.reshape([c]).cast(stat)))
}
