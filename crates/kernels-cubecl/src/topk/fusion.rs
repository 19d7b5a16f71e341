//! [`TopKBackend`] for [`Fusion`]: an opaque custom op in the fusion stream (one float input, a float and an
//! int output); `k` and the index dtype travel in the op's closure.
use burn::tensor::{DType, IntDType, Shape};
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::TopKBackend;
use crate::fusion_util::{custom_op, Prim};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

impl<B: FusionBackend + TopKBackend> TopKBackend for Fusion<B> {
    fn topk_rows(x: T<B>, k: usize, int_dtype: IntDType) -> (T<B>, T<B>) {
        let [rows, n] = x.shape.dims::<2>();
        assert!(k >= 1 && k <= n, "topk: k = {k} must be in 1..={n}");
        let outs = [(Shape::new([rows, k]), x.dtype), (Shape::new([rows, k]), DType::from(int_dtype))];
        let [values, indices] = custom_op::<B, 1, 2>("topk_rows", [x], outs, move |[x]| {
            let (v, i) = B::topk_rows(x.float(), k, int_dtype);
            [Prim::Float(v), Prim::Int(i)]
        });
        (values, indices)
    }
}
