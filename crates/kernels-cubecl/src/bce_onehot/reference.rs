//! The reference implementation of the one-hot BCE sum in Burn tensor ops (the default bodies of
//! [`super::BceOneHotBackend`]): dense targets, [`crate::bce`]'s reference, a sum.
use burn::tensor::{
    activation::sigmoid,
    backend::Backend,
    ops::{FloatTensor, IntTensor},
    Int, Tensor, TensorPrimitive,
};

use crate::bce::reference_forward as bce_reference;
use crate::tensor_util::{compute_dtype, float};

/// Dense targets `[B, C, A]` in `dtype`: `one_hot(label)·score`.
fn dense_targets<B: Backend>(
    labels: IntTensor<B>,
    scores: FloatTensor<B>,
    num_classes: usize,
    dtype: burn::tensor::DType,
) -> Tensor<B, 3> {
    let labels: Tensor<B, 2, Int> = Tensor::from_primitive(labels);
    let scores = float::<B, 2>(scores).cast(dtype);
    let [b, a] = labels.dims();
    let classes = Tensor::<B, 1, Int>::arange(0..num_classes as i64, &labels.device()).reshape([1, num_classes, 1]);
    let hot = labels.unsqueeze_dim::<3>(1).expand([b, num_classes, a]).equal(classes.expand([b, num_classes, a]));
    hot.float().cast(dtype) * scores.unsqueeze_dim(1)
}

/// Reference forward in tensor ops (dense targets, then the BCE reference and a sum).
pub fn reference_sum<B: Backend>(
    logits: FloatTensor<B>,
    labels: IntTensor<B>,
    scores: FloatTensor<B>,
) -> FloatTensor<B> {
    let x: Tensor<B, 3> = Tensor::from_primitive(TensorPrimitive::Float(logits));
    let dtype = x.dtype();
    let cd = compute_dtype(dtype);
    let t = dense_targets::<B>(labels, scores, x.dims()[1], cd);
    let n = x.shape().num_elements();
    let x = x.cast(cd).reshape([n]);
    let loss: Tensor<B, 1> = Tensor::from_primitive(TensorPrimitive::Float(bce_reference::<B>(
        x.into_primitive().tensor(),
        t.reshape([n]).into_primitive().tensor(),
    )));
    loss.sum().cast(dtype).into_primitive().tensor()
}

/// Reference backward in tensor ops: `d_total · (σ(x) − t)`.
pub fn reference_backward<B: Backend>(
    logits: FloatTensor<B>,
    labels: IntTensor<B>,
    scores: FloatTensor<B>,
    d_total: FloatTensor<B>,
) -> FloatTensor<B> {
    let x: Tensor<B, 3> = Tensor::from_primitive(TensorPrimitive::Float(logits));
    let dtype = x.dtype();
    let cd = compute_dtype(dtype);
    let t = dense_targets::<B>(labels, scores, x.dims()[1], cd);
    let g = float::<B, 1>(d_total).cast(cd);
    let d = (sigmoid(x.cast(cd)) - t) * g.reshape([1, 1, 1]);
    d.cast(dtype).into_primitive().tensor()
}
