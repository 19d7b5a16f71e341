//! [`BboxLossBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream.
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn::tensor::Shape;
use burn_fusion::{
    stream::{Operation, OperationStreams},
    Fusion, FusionBackend, FusionRuntime, FusionTensor,
};

use super::{check_shapes, BboxLossBackend};

type Handles<B> = HandleContainer<<<B as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle>;
type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

#[derive(Clone, Debug)]
struct FwdOp<B> {
    desc: CustomOpIr,
    image: [f32; 2],
    _b: PhantomData<B>,
}

impl<B: FusionBackend + BboxLossBackend> Operation<B::FusionRuntime> for FwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([dist, anchors, gt_boxes, gt_idx, weight], [sums]) = self.desc.as_fixed();
        let out = B::bbox_loss_sums(
            handles.get_float_tensor::<B>(dist),
            handles.get_float_tensor::<B>(anchors),
            handles.get_float_tensor::<B>(gt_boxes),
            handles.get_int_tensor::<B>(gt_idx),
            handles.get_float_tensor::<B>(weight),
            self.image,
        );
        handles.register_float_tensor::<B>(&sums.id, out);
    }
}

#[derive(Clone, Debug)]
struct BwdOp<B> {
    desc: CustomOpIr,
    image: [f32; 2],
    _b: PhantomData<B>,
}

impl<B: FusionBackend + BboxLossBackend> Operation<B::FusionRuntime> for BwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([dist, anchors, gt_boxes, gt_idx, weight, d_sums], [d_dist]) = self.desc.as_fixed();
        let out = B::bbox_loss_backward(
            handles.get_float_tensor::<B>(dist),
            handles.get_float_tensor::<B>(anchors),
            handles.get_float_tensor::<B>(gt_boxes),
            handles.get_int_tensor::<B>(gt_idx),
            handles.get_float_tensor::<B>(weight),
            self.image,
            handles.get_float_tensor::<B>(d_sums),
        );
        handles.register_float_tensor::<B>(&d_dist.id, out);
    }
}

fn check<B: FusionBackend>(dist: &T<B>, anchors: &T<B>, gt_boxes: &T<B>, gt_idx: &T<B>, weight: &T<B>) {
    check_shapes(
        dist.shape.as_slice(),
        anchors.shape.as_slice(),
        gt_boxes.shape.as_slice(),
        gt_idx.shape.as_slice(),
        weight.shape.as_slice(),
    );
}

impl<B: FusionBackend + BboxLossBackend> BboxLossBackend for Fusion<B> {
    fn bbox_loss_sums(dist: T<B>, anchors: T<B>, gt_boxes: T<B>, gt_idx: T<B>, weight: T<B>, image: [f32; 2]) -> T<B> {
        check::<B>(&dist, &anchors, &gt_boxes, &gt_idx, &weight);
        let client = dist.client.clone();
        let streams = OperationStreams::with_inputs([&dist, &anchors, &gt_boxes, &gt_idx, &weight]);
        let sums = TensorIr::uninit(client.create_empty_handle(), Shape::new([3]), dist.dtype);
        let desc = CustomOpIr::new(
            "bbox_loss_sums",
            &[dist.into_ir(), anchors.into_ir(), gt_boxes.into_ir(), gt_idx.into_ir(), weight.into_ir()],
            &[sums],
        );
        let [sums] = client
            .register(streams, OperationIr::Custom(desc.clone()), FwdOp::<B> { desc, image, _b: PhantomData })
            .outputs::<1>();
        sums
    }

    fn bbox_loss_backward(
        dist: T<B>,
        anchors: T<B>,
        gt_boxes: T<B>,
        gt_idx: T<B>,
        weight: T<B>,
        image: [f32; 2],
        d_sums: T<B>,
    ) -> T<B> {
        check::<B>(&dist, &anchors, &gt_boxes, &gt_idx, &weight);
        let client = dist.client.clone();
        let streams = OperationStreams::with_inputs([&dist, &anchors, &gt_boxes, &gt_idx, &weight, &d_sums]);
        let d_dist = TensorIr::uninit(client.create_empty_handle(), dist.shape.clone(), dist.dtype);
        let desc = CustomOpIr::new(
            "bbox_loss_backward",
            &[
                dist.into_ir(),
                anchors.into_ir(),
                gt_boxes.into_ir(),
                gt_idx.into_ir(),
                weight.into_ir(),
                d_sums.into_ir(),
            ],
            &[d_dist],
        );
        let [d_dist] = client
            .register(streams, OperationIr::Custom(desc.clone()), BwdOp::<B> { desc, image, _b: PhantomData })
            .outputs::<1>();
        d_dist
    }
}
