//! Small host-side helpers shared by the `CubeBackend` implementations of the ops.
use burn::tensor::{DType, Shape};
use burn_cubecl::{
    kernel::{cast, into_contiguous},
    ops::numeric::empty_device_contiguous_dtype,
    tensor::CubeTensor,
    CubeRuntime,
};

/// A fresh, tight (row-major, unpitched) tensor on `like`'s device; its contents are undefined.
pub fn empty<R: CubeRuntime>(like: &CubeTensor<R>, shape: Shape, dtype: DType) -> CubeTensor<R> {
    empty_device_contiguous_dtype(like.client.clone(), like.device.clone(), shape, dtype)
}

/// `t` in `dtype`, tight (a cast's output may be pitched on CUDA, so `into_contiguous` comes after it).
///
/// An empty tensor is replaced by a fresh empty one without launching anything: burn's cast and copy
/// kernels launch a `0×0×0` grid for zero elements, which CUDA rejects with `CUDA_ERROR_INVALID_VALUE`.
pub fn tight_as<R: CubeRuntime>(t: CubeTensor<R>, dtype: DType) -> CubeTensor<R> {
    if t.meta.shape().num_elements() == 0 {
        return empty(&t, t.meta.shape().clone(), dtype);
    }
    into_contiguous(if t.dtype == dtype { t } else { cast(t, dtype) })
}
