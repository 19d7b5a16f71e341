//! The reference implementation of BCE-with-logits in Burn tensor ops (the default bodies of the backend trait).
//!
//! Shapes: `logits`, `targets`, `loss`, `d_loss`, `d_logits`: `[N]` (the public function flattens).
use burn::tensor::{activation::sigmoid, backend::Backend, ops::FloatTensor};

use crate::tensor_util::{compute_dtype, float};

/// Reference forward in tensor ops (F32; F64 stays F64): `clamp_min(x, 0) − x·t + log1p(exp(−|x|))`.
pub fn reference_forward<B: Backend>(logits: FloatTensor<B>, targets: FloatTensor<B>) -> FloatTensor<B> {
    let x = float::<B, 1>(logits);
    let dtype = x.dtype();
    let cd = compute_dtype(dtype);
    let x = x.cast(cd);
    let t = float::<B, 1>(targets).cast(cd);
    let loss = x.clone().clamp_min(0.0) - x.clone() * t + x.abs().neg().exp().log1p();
    loss.cast(dtype).into_primitive().tensor()
}

/// Reference backward in tensor ops: `d_loss · (σ(x) − t)`.
pub fn reference_backward<B: Backend>(
    logits: FloatTensor<B>,
    targets: FloatTensor<B>,
    d_loss: FloatTensor<B>,
) -> FloatTensor<B> {
    let x = float::<B, 1>(logits);
    let dtype = x.dtype();
    let cd = compute_dtype(dtype);
    let x = x.cast(cd);
    let t = float::<B, 1>(targets).cast(cd);
    let g = float::<B, 1>(d_loss).cast(cd);
    ((sigmoid(x) - t) * g).cast(dtype).into_primitive().tensor()
}
