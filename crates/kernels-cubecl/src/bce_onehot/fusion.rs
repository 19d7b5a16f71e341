//! [`BceOneHotBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream.
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn::tensor::Shape;
use burn_fusion::{
    stream::{Operation, OperationStreams},
    Fusion, FusionBackend, FusionRuntime, FusionTensor,
};

use super::{check_shapes, BceOneHotBackend};

type Handles<B> = HandleContainer<<<B as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle>;
type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

#[derive(Clone, Debug)]
struct FwdOp<B> {
    desc: CustomOpIr,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + BceOneHotBackend> Operation<B::FusionRuntime> for FwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([logits, labels, scores], [total]) = self.desc.as_fixed();
        let out = B::bce_onehot_sum(
            handles.get_float_tensor::<B>(logits),
            handles.get_int_tensor::<B>(labels),
            handles.get_float_tensor::<B>(scores),
        );
        handles.register_float_tensor::<B>(&total.id, out);
    }
}

#[derive(Clone, Debug)]
struct BwdOp<B> {
    desc: CustomOpIr,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + BceOneHotBackend> Operation<B::FusionRuntime> for BwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([logits, labels, scores, d_total], [d_logits]) = self.desc.as_fixed();
        let out = B::bce_onehot_backward(
            handles.get_float_tensor::<B>(logits),
            handles.get_int_tensor::<B>(labels),
            handles.get_float_tensor::<B>(scores),
            handles.get_float_tensor::<B>(d_total),
        );
        handles.register_float_tensor::<B>(&d_logits.id, out);
    }
}

impl<B: FusionBackend + BceOneHotBackend> BceOneHotBackend for Fusion<B> {
    fn bce_onehot_sum(logits: T<B>, labels: T<B>, scores: T<B>) -> T<B> {
        check_shapes(logits.shape.as_slice(), labels.shape.as_slice(), scores.shape.as_slice());
        let client = logits.client.clone();
        let streams = OperationStreams::with_inputs([&logits, &labels, &scores]);
        let total = TensorIr::uninit(client.create_empty_handle(), Shape::new([1]), logits.dtype);
        let desc = CustomOpIr::new("bce_onehot_sum", &[logits.into_ir(), labels.into_ir(), scores.into_ir()], &[total]);
        let [total] = client
            .register(streams, OperationIr::Custom(desc.clone()), FwdOp::<B> { desc, _b: PhantomData })
            .outputs::<1>();
        total
    }

    fn bce_onehot_backward(logits: T<B>, labels: T<B>, scores: T<B>, d_total: T<B>) -> T<B> {
        check_shapes(logits.shape.as_slice(), labels.shape.as_slice(), scores.shape.as_slice());
        let client = logits.client.clone();
        let streams = OperationStreams::with_inputs([&logits, &labels, &scores, &d_total]);
        let d_logits = TensorIr::uninit(client.create_empty_handle(), logits.shape.clone(), logits.dtype);
        let desc = CustomOpIr::new(
            "bce_onehot_backward",
            &[logits.into_ir(), labels.into_ir(), scores.into_ir(), d_total.into_ir()],
            &[d_logits],
        );
        let [d_logits] = client
            .register(streams, OperationIr::Custom(desc.clone()), BwdOp::<B> { desc, _b: PhantomData })
            .outputs::<1>();
        d_logits
    }
}
