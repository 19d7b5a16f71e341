//! [`TopKBackend`] for [`Fusion`]: an opaque custom op in the fusion stream (one float input, a float and
//! an int output); `execute` calls the inner backend's kernel. `k` lives in the op struct.
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn::tensor::{DType, IntDType, Shape};
use burn_fusion::{
    stream::{Operation, OperationStreams},
    Fusion, FusionBackend, FusionRuntime, FusionTensor,
};

use super::TopKBackend;

type Handles<B> = HandleContainer<<<B as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle>;

#[derive(Clone, Debug)]
struct TopKOp<B> {
    desc: CustomOpIr,
    k: usize,
    int_dtype: IntDType,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + TopKBackend> Operation<B::FusionRuntime> for TopKOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([x], [values, indices]) = self.desc.as_fixed();
        let x = handles.get_float_tensor::<B>(x);
        let (v, i) = B::topk_rows(x, self.k, self.int_dtype);
        handles.register_float_tensor::<B>(&values.id, v);
        handles.register_int_tensor::<B>(&indices.id, i);
    }
}

impl<B: FusionBackend + TopKBackend> TopKBackend for Fusion<B> {
    fn topk_rows(
        x: FusionTensor<B::FusionRuntime>,
        k: usize,
        int_dtype: IntDType,
    ) -> (FusionTensor<B::FusionRuntime>, FusionTensor<B::FusionRuntime>) {
        let [rows, n] = x.shape.dims::<2>();
        assert!(k >= 1 && k <= n, "topk: k = {k} must be in 1..={n}");
        let client = x.client.clone();
        let streams = OperationStreams::with_inputs([&x]);
        let values = TensorIr::uninit(client.create_empty_handle(), Shape::new([rows, k]), x.dtype);
        let indices = TensorIr::uninit(client.create_empty_handle(), Shape::new([rows, k]), DType::from(int_dtype));
        let desc = CustomOpIr::new("topk_rows", &[x.into_ir()], &[values, indices]);
        let [values, indices] = client
            .register(streams, OperationIr::Custom(desc.clone()), TopKOp::<B> { desc, k, int_dtype, _b: PhantomData })
            .outputs::<2>();
        (values, indices)
    }
}
