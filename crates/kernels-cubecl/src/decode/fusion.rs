//! [`DetectDecodeBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream;
//! the box format lives in the op struct (`CustomOpIr` has no scalar slot in Burn 0.21).
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn_fusion::{
    stream::{Operation, OperationStreams},
    Fusion, FusionBackend, FusionRuntime, FusionTensor,
};

use super::backend::DetectDecodeBackend;
use super::cube::check_shapes;
use super::BoxFormat;

type Handles<B> = HandleContainer<<<B as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle>;

#[derive(Clone, Debug)]
struct DecodeFwdOp<B> {
    desc: CustomOpIr,
    format: BoxFormat,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + DetectDecodeBackend> Operation<B::FusionRuntime> for DecodeFwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([dist, anchors], [boxes]) = self.desc.as_fixed();
        let dist = handles.get_float_tensor::<B>(dist);
        let anchors = handles.get_float_tensor::<B>(anchors);
        let out = B::detect_decode_forward(dist, anchors, self.format);
        handles.register_float_tensor::<B>(&boxes.id, out);
    }
}

#[derive(Clone, Debug)]
struct DecodeBwdOp<B> {
    desc: CustomOpIr,
    format: BoxFormat,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + DetectDecodeBackend> Operation<B::FusionRuntime> for DecodeBwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([anchors, d_boxes], [d_dist]) = self.desc.as_fixed();
        let anchors = handles.get_float_tensor::<B>(anchors);
        let d_boxes = handles.get_float_tensor::<B>(d_boxes);
        let out = B::detect_decode_backward(anchors, d_boxes, self.format);
        handles.register_float_tensor::<B>(&d_dist.id, out);
    }
}

impl<B: FusionBackend + DetectDecodeBackend> DetectDecodeBackend for Fusion<B> {
    fn detect_decode_forward(
        dist: FusionTensor<B::FusionRuntime>,
        anchors: FusionTensor<B::FusionRuntime>,
        format: BoxFormat,
    ) -> FusionTensor<B::FusionRuntime> {
        check_shapes(dist.shape.as_slice(), anchors.shape.as_slice());
        let client = dist.client.clone();
        let streams = OperationStreams::with_inputs([&dist, &anchors]);
        let boxes = TensorIr::uninit(client.create_empty_handle(), dist.shape.clone(), dist.dtype);
        let desc = CustomOpIr::new("detect_decode_forward", &[dist.into_ir(), anchors.into_ir()], &[boxes]);
        client
            .register(streams, OperationIr::Custom(desc.clone()), DecodeFwdOp::<B> { desc, format, _b: PhantomData })
            .output()
    }

    fn detect_decode_backward(
        anchors: FusionTensor<B::FusionRuntime>,
        d_boxes: FusionTensor<B::FusionRuntime>,
        format: BoxFormat,
    ) -> FusionTensor<B::FusionRuntime> {
        check_shapes(d_boxes.shape.as_slice(), anchors.shape.as_slice());
        let client = d_boxes.client.clone();
        let streams = OperationStreams::with_inputs([&anchors, &d_boxes]);
        let d_dist = TensorIr::uninit(client.create_empty_handle(), d_boxes.shape.clone(), d_boxes.dtype);
        let desc = CustomOpIr::new("detect_decode_backward", &[anchors.into_ir(), d_boxes.into_ir()], &[d_dist]);
        client
            .register(streams, OperationIr::Custom(desc.clone()), DecodeBwdOp::<B> { desc, format, _b: PhantomData })
            .output()
    }
}
