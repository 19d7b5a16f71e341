//! [`CiouLossBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream.
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn::tensor::{DType, Shape};
use burn_fusion::{
    stream::{Operation, OperationStreams},
    Fusion, FusionBackend, FusionRuntime, FusionTensor,
};

use super::backend::CiouLossBackend;
use super::cube::check_shapes;

type Handles<B> = HandleContainer<<<B as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle>;

#[derive(Clone, Debug)]
struct CiouFwdOp<B> {
    desc: CustomOpIr,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + CiouLossBackend> Operation<B::FusionRuntime> for CiouFwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([pred, target], [loss, alpha]) = self.desc.as_fixed();
        let pred = handles.get_float_tensor::<B>(pred);
        let target = handles.get_float_tensor::<B>(target);
        let (l, a) = B::ciou_loss_forward(pred, target);
        handles.register_float_tensor::<B>(&loss.id, l);
        handles.register_float_tensor::<B>(&alpha.id, a);
    }
}

#[derive(Clone, Debug)]
struct CiouBwdOp<B> {
    desc: CustomOpIr,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + CiouLossBackend> Operation<B::FusionRuntime> for CiouBwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([pred, target, alpha, d_loss], [d_pred, d_target]) = self.desc.as_fixed();
        let pred = handles.get_float_tensor::<B>(pred);
        let target = handles.get_float_tensor::<B>(target);
        let alpha = handles.get_float_tensor::<B>(alpha);
        let d_loss = handles.get_float_tensor::<B>(d_loss);
        let (gp, gt) = B::ciou_loss_backward(pred, target, alpha, d_loss);
        handles.register_float_tensor::<B>(&d_pred.id, gp);
        handles.register_float_tensor::<B>(&d_target.id, gt);
    }
}

impl<B: FusionBackend + CiouLossBackend> CiouLossBackend for Fusion<B> {
    fn ciou_loss_forward(
        pred: FusionTensor<B::FusionRuntime>,
        target: FusionTensor<B::FusionRuntime>,
    ) -> (FusionTensor<B::FusionRuntime>, FusionTensor<B::FusionRuntime>) {
        check_shapes(pred.shape.as_slice(), target.shape.as_slice());
        let client = pred.client.clone();
        let m = pred.shape[0];
        // The reference path keeps F64 alpha for F64 inputs; the kernels always give F32.
        let alpha_dtype = if pred.dtype == DType::F64 { DType::F64 } else { DType::F32 };
        let streams = OperationStreams::with_inputs([&pred, &target]);
        let loss = TensorIr::uninit(client.create_empty_handle(), Shape::new([m]), pred.dtype);
        let alpha = TensorIr::uninit(client.create_empty_handle(), Shape::new([m]), alpha_dtype);
        let desc = CustomOpIr::new("ciou_loss_forward", &[pred.into_ir(), target.into_ir()], &[loss, alpha]);
        let [loss, alpha] = client
            .register(streams, OperationIr::Custom(desc.clone()), CiouFwdOp::<B> { desc, _b: PhantomData })
            .outputs::<2>();
        (loss, alpha)
    }

    fn ciou_loss_backward(
        pred: FusionTensor<B::FusionRuntime>,
        target: FusionTensor<B::FusionRuntime>,
        alpha: FusionTensor<B::FusionRuntime>,
        d_loss: FusionTensor<B::FusionRuntime>,
    ) -> (FusionTensor<B::FusionRuntime>, FusionTensor<B::FusionRuntime>) {
        check_shapes(pred.shape.as_slice(), target.shape.as_slice());
        let client = pred.client.clone();
        let streams = OperationStreams::with_inputs([&pred, &target, &alpha, &d_loss]);
        let d_pred = TensorIr::uninit(client.create_empty_handle(), pred.shape.clone(), pred.dtype);
        let d_target = TensorIr::uninit(client.create_empty_handle(), pred.shape.clone(), pred.dtype);
        let desc = CustomOpIr::new(
            "ciou_loss_backward",
            &[pred.into_ir(), target.into_ir(), alpha.into_ir(), d_loss.into_ir()],
            &[d_pred, d_target],
        );
        let [d_pred, d_target] = client
            .register(streams, OperationIr::Custom(desc.clone()), CiouBwdOp::<B> { desc, _b: PhantomData })
            .outputs::<2>();
        (d_pred, d_target)
    }
}
