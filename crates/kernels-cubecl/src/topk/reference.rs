//! The reference implementation of row-wise top-k in Burn tensor ops (the default body of
//! [`super::TopKBackend`]).
use burn::tensor::{
    backend::Backend,
    ops::{FloatTensor, IntTensor},
    IntDType, Tensor, TensorPrimitive,
};

/// Reference top-k from a full descending sort (any backend).
pub fn reference_topk<B: Backend>(x: FloatTensor<B>, k: usize, _int_dtype: IntDType) -> (FloatTensor<B>, IntTensor<B>) {
    let x = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(x));
    let (values, indices) = x.sort_descending_with_indices(1);
    (values.narrow(1, 0, k).into_primitive().tensor(), indices.narrow(1, 0, k).into_primitive())
}
