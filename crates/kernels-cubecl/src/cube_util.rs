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

/// `t` as F32 with unit stride along its last axis: returned as is when it already is (pitched rows are
/// fine for the kernels that read a row stride, e.g. the anchor grid), else a tight copy.
pub fn f32_rows<R: CubeRuntime>(t: CubeTensor<R>) -> CubeTensor<R> {
    let unit_rows = t.meta.strides().last().is_none_or(|&s| s == 1);
    if t.dtype == DType::F32 && unit_rows && t.meta.shape().num_elements() > 0 {
        t
    } else {
        tight_as(t, DType::F32)
    }
}

/// Panics unless every tensor has tight row-major strides (the kernels index linearly). Note that on CUDA
/// `empty_device_dtype`/`from_data` may return pitched rows: allocate outputs with
/// `empty_device_contiguous_dtype` and pass inputs through `into_contiguous`.
pub fn assert_tight<R: CubeRuntime>(what: &str, tensors: &[&CubeTensor<R>]) {
    for (i, t) in tensors.iter().enumerate() {
        assert!(
            t.is_contiguous(),
            "{what}: tensor #{i} (shape {:?}, strides {:?}) is not tightly contiguous",
            t.meta.shape(),
            t.meta.strides()
        );
    }
}
