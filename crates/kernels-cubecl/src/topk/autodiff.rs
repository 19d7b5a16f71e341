//! [`TopKBackend`] for [`Autodiff`]: the indices come from the inner backend (not differentiable); the
//! values are a `gather` of the tracked input, so gradients flow to the selected entries.
use burn::backend::{autodiff::checkpoint::strategy::CheckpointStrategy, Autodiff};
use burn::tensor::{ops::FloatTensor, ops::IntTensor, IntDType, Tensor, TensorPrimitive};

use super::TopKBackend;

impl<B: TopKBackend, C: CheckpointStrategy> TopKBackend for Autodiff<B, C> {
    fn topk_rows(x: FloatTensor<Self>, k: usize, int_dtype: IntDType) -> (FloatTensor<Self>, IntTensor<Self>) {
        let (_, indices) = B::topk_rows(x.primitive.clone(), k, int_dtype);
        let x = Tensor::<Self, 2>::from_primitive(TensorPrimitive::Float(x));
        let values = x.gather(1, Tensor::<Self, 2, burn::tensor::Int>::from_primitive(indices.clone()));
        (values.into_primitive().tensor(), indices)
    }
}
