//! Dtype helpers of the reference (tensor-op) implementations of the decode, CIoU and BCE ops.
use burn::tensor::{backend::Backend, DType, FloatDType, Tensor};

/// Half-precision values are computed in F32; F32/F64 are kept.
pub(crate) fn compute_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

/// `t` cast to `dtype` (no-op when it already has it).
pub(crate) fn cast_to<B: Backend, const D: usize>(t: Tensor<B, D>, dtype: DType) -> Tensor<B, D> {
    if t.dtype() == dtype {
        t
    } else {
        t.cast(float_dtype(dtype))
    }
}

pub(crate) fn float_dtype(dtype: DType) -> FloatDType {
    match dtype {
        DType::F64 => FloatDType::F64,
        DType::F16 => FloatDType::F16,
        DType::BF16 => FloatDType::BF16,
        _ => FloatDType::F32,
    }
}
