//! [`TopKBackend`] for [`CubeBackend`]: runs the passes of `kernel.rs` (bitonic chunks, or register lists
//! for `k ≤ 16`) until one chunk per row is left.
use burn::tensor::{DType, IntDType, Shape};
use burn_cubecl::{
    kernel::into_contiguous, ops::numeric::empty_device_contiguous_dtype, tensor::CubeTensor, BoolElement, CubeBackend,
    CubeRuntime, FloatElement, IntElement,
};

use super::kernels::{chunk_for, launch_pass, launch_small_pass, small_per_unit, SMALL_K, SMALL_UNITS};
use super::{reference_topk, TopKBackend};

impl<R, F, I, BT> TopKBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn topk_rows(x: CubeTensor<R>, k: usize, int_dtype: IntDType) -> (CubeTensor<R>, CubeTensor<R>) {
        match chunk_for(k) {
            Some(chunk) => topk(x, k, chunk, int_dtype.into()),
            None => reference_topk::<Self>(x, k, int_dtype),
        }
    }
}

/// Kernel top-k of `x: [rows, n]` with chunks of `chunk` entries (bitonic passes), or, for `k ≤ SMALL_K`,
/// the register-list passes of [`super::kernels::topk_small_kernel`]; indices of dtype `int_dtype`.
pub fn topk<R: CubeRuntime>(
    x: CubeTensor<R>,
    k: usize,
    chunk: usize,
    int_dtype: DType,
) -> (CubeTensor<R>, CubeTensor<R>) {
    let [rows, n] = x.meta.shape().dims::<2>();
    assert!(k >= 1 && k <= n, "topk: k = {k} must be in 1..={n}");
    let empty = |shape: [usize; 2], dtype: DType| {
        empty_device_contiguous_dtype(x.client.clone(), x.device.clone(), Shape::new(shape), dtype)
    };
    let mut values = into_contiguous(x.clone());
    // Bound but unread in the first pass (the column is the position).
    let mut indices = empty([1, 1], int_dtype);
    let mut has_indices = false;
    let mut len = n;
    loop {
        let small = k <= SMALL_K;
        let per_unit = small_per_unit(rows, len);
        let chunks = if small { len.div_ceil(SMALL_UNITS * per_unit) } else { len.div_ceil(chunk) };
        let out_values = empty([rows, chunks * k], values.dtype);
        let out_indices = empty([rows, chunks * k], int_dtype);
        if small {
            launch_small_pass(&values, &indices, has_indices, &out_values, &out_indices, k, per_unit);
        } else {
            launch_pass(&values, &indices, has_indices, &out_values, &out_indices, k, chunk);
        }
        values = out_values;
        indices = out_indices;
        has_indices = true;
        len = chunks * k;
        if chunks == 1 {
            return (values, indices);
        }
    }
}
