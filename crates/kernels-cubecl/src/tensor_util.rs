//! Helpers of the reference (tensor-op) implementations that the ops' traits use as default bodies.
use burn::tensor::{backend::Backend, ops::FloatTensor, DType, Tensor, TensorPrimitive};

/// The dtype the reference computes in: half precision is computed in F32; F32/F64 are kept.
pub(crate) fn compute_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

/// A float primitive as a `Tensor` of rank `D`.
pub(crate) fn float<B: Backend, const D: usize>(t: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}
