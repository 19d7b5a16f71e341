//! [`BceWithLogitsBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream.
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn_fusion::{
    stream::{Operation, OperationStreams},
    Fusion, FusionBackend, FusionRuntime, FusionTensor,
};

use super::backend::BceWithLogitsBackend;
use super::cube::check_shapes;

type Handles<B> = HandleContainer<<<B as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle>;

#[derive(Clone, Debug)]
struct BceFwdOp<B> {
    desc: CustomOpIr,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + BceWithLogitsBackend> Operation<B::FusionRuntime> for BceFwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([logits, targets], [loss]) = self.desc.as_fixed();
        let logits = handles.get_float_tensor::<B>(logits);
        let targets = handles.get_float_tensor::<B>(targets);
        let out = B::bce_with_logits_forward(logits, targets);
        handles.register_float_tensor::<B>(&loss.id, out);
    }
}

#[derive(Clone, Debug)]
struct BceBwdOp<B> {
    desc: CustomOpIr,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + BceWithLogitsBackend> Operation<B::FusionRuntime> for BceBwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([logits, targets, d_loss], [d_logits]) = self.desc.as_fixed();
        let logits = handles.get_float_tensor::<B>(logits);
        let targets = handles.get_float_tensor::<B>(targets);
        let d_loss = handles.get_float_tensor::<B>(d_loss);
        let out = B::bce_with_logits_backward(logits, targets, d_loss);
        handles.register_float_tensor::<B>(&d_logits.id, out);
    }
}

impl<B: FusionBackend + BceWithLogitsBackend> BceWithLogitsBackend for Fusion<B> {
    fn bce_with_logits_forward(
        logits: FusionTensor<B::FusionRuntime>,
        targets: FusionTensor<B::FusionRuntime>,
    ) -> FusionTensor<B::FusionRuntime> {
        check_shapes(logits.shape.as_slice(), targets.shape.as_slice());
        let client = logits.client.clone();
        let streams = OperationStreams::with_inputs([&logits, &targets]);
        let loss = TensorIr::uninit(client.create_empty_handle(), logits.shape.clone(), logits.dtype);
        let desc = CustomOpIr::new("bce_with_logits_forward", &[logits.into_ir(), targets.into_ir()], &[loss]);
        client.register(streams, OperationIr::Custom(desc.clone()), BceFwdOp::<B> { desc, _b: PhantomData }).output()
    }

    fn bce_with_logits_backward(
        logits: FusionTensor<B::FusionRuntime>,
        targets: FusionTensor<B::FusionRuntime>,
        d_loss: FusionTensor<B::FusionRuntime>,
    ) -> FusionTensor<B::FusionRuntime> {
        check_shapes(logits.shape.as_slice(), targets.shape.as_slice());
        let client = logits.client.clone();
        let streams = OperationStreams::with_inputs([&logits, &targets, &d_loss]);
        let d_logits = TensorIr::uninit(client.create_empty_handle(), logits.shape.clone(), logits.dtype);
        let desc = CustomOpIr::new(
            "bce_with_logits_backward",
            &[logits.into_ir(), targets.into_ir(), d_loss.into_ir()],
            &[d_logits],
        );
        client.register(streams, OperationIr::Custom(desc.clone()), BceBwdOp::<B> { desc, _b: PhantomData }).output()
    }
}
