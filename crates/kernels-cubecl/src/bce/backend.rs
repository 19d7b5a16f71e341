//! The backend extension trait of BCE-with-logits and its reference implementation (tensor ops).
//!
//! Shapes: `logits`, `targets`, `loss`, `d_loss`, `d_logits`: `[N]` (the public function flattens).
use burn::tensor::{activation::sigmoid, backend::Backend, ops::FloatTensor, Tensor, TensorPrimitive};

use crate::dtype::{cast_to, compute_dtype};

/// Backend extension: elementwise BCE with logits and its gradient w.r.t. the logits.
pub trait BceWithLogitsBackend: Backend {
    /// `loss = max(x, 0) − x·t + ln(1 + e^{−|x|})` (dtype of `logits`).
    fn bce_with_logits_forward(logits: FloatTensor<Self>, targets: FloatTensor<Self>) -> FloatTensor<Self> {
        reference_forward::<Self>(logits, targets)
    }

    /// `d logits = d_loss · (σ(x) − t)` (dtype of `logits`). The targets get no gradient.
    fn bce_with_logits_backward(
        logits: FloatTensor<Self>,
        targets: FloatTensor<Self>,
        d_loss: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        reference_backward::<Self>(logits, targets, d_loss)
    }
}

impl BceWithLogitsBackend for burn::backend::Flex {}

fn wrap<B: Backend>(t: FloatTensor<B>) -> Tensor<B, 1> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

/// Reference forward in tensor ops (F32; F64 stays F64): `clamp_min(x, 0) − x·t + log1p(exp(−|x|))`.
pub fn reference_forward<B: Backend>(logits: FloatTensor<B>, targets: FloatTensor<B>) -> FloatTensor<B> {
    let x = wrap::<B>(logits);
    let dtype = x.dtype();
    let cd = compute_dtype(dtype);
    let x = cast_to(x, cd);
    let t = cast_to(wrap::<B>(targets), cd);
    let loss = x.clone().clamp_min(0.0) - x.clone() * t + x.abs().neg().exp().log1p();
    cast_to(loss, dtype).into_primitive().tensor()
}

/// Reference backward in tensor ops: `d_loss · (σ(x) − t)`.
pub fn reference_backward<B: Backend>(
    logits: FloatTensor<B>,
    targets: FloatTensor<B>,
    d_loss: FloatTensor<B>,
) -> FloatTensor<B> {
    let x = wrap::<B>(logits);
    let dtype = x.dtype();
    let cd = compute_dtype(dtype);
    let x = cast_to(x, cd);
    let t = cast_to(wrap::<B>(targets), cd);
    let g = cast_to(wrap::<B>(d_loss), cd);
    cast_to((sigmoid(x) - t) * g, dtype).into_primitive().tensor()
}
