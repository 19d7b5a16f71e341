//! [`TalBackend`] for [`Fusion`]: an opaque custom op in the fusion stream (five float inputs and the int
//! labels in; the int slot and two float tensors out); `execute` calls the inner backend.
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn::tensor::{DType, IntDType, Shape};
use burn_fusion::{
    stream::{Operation, OperationStreams},
    Fusion, FusionBackend, FusionRuntime, FusionTensor,
};

use super::{check_shapes, TalBackend, TalConfig};

type Handles<B> = HandleContainer<<<B as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle>;

#[derive(Clone, Debug)]
struct TalOp<B> {
    desc: CustomOpIr,
    cfg: TalConfig,
    int_dtype: IntDType,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + TalBackend> Operation<B::FusionRuntime> for TalOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([logits, boxes, anchors, gt_boxes, gt_labels, gt_mask], [gt_idx, fg, norm, labels]) = self.desc.as_fixed();
        let (i, f, n, l) = B::task_aligned_assign(
            handles.get_float_tensor::<B>(logits),
            handles.get_float_tensor::<B>(boxes),
            handles.get_float_tensor::<B>(anchors),
            handles.get_float_tensor::<B>(gt_boxes),
            handles.get_int_tensor::<B>(gt_labels),
            handles.get_float_tensor::<B>(gt_mask),
            self.cfg,
            self.int_dtype,
        );
        handles.register_int_tensor::<B>(&gt_idx.id, i);
        handles.register_float_tensor::<B>(&fg.id, f);
        handles.register_float_tensor::<B>(&norm.id, n);
        handles.register_int_tensor::<B>(&labels.id, l);
    }
}

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

impl<B: FusionBackend + TalBackend> TalBackend for Fusion<B> {
    fn task_aligned_assign(
        logits: T<B>,
        boxes: T<B>,
        anchors: T<B>,
        gt_boxes: T<B>,
        gt_labels: T<B>,
        gt_mask: T<B>,
        cfg: TalConfig,
        int_dtype: IntDType,
    ) -> (T<B>, T<B>, T<B>, T<B>) {
        let (b, _, a, _) = check_shapes(
            logits.shape.as_slice(),
            boxes.shape.as_slice(),
            anchors.shape.as_slice(),
            gt_boxes.shape.as_slice(),
            gt_labels.shape.as_slice(),
            gt_mask.shape.as_slice(),
            &cfg,
        );
        let client = logits.client.clone();
        let dtype = logits.dtype;
        let labels_dtype = gt_labels.dtype;
        let streams = OperationStreams::with_inputs([&logits, &boxes, &anchors, &gt_boxes, &gt_labels, &gt_mask]);
        let out = |dt: DType| TensorIr::uninit(client.create_empty_handle(), Shape::new([b, a]), dt);
        let outputs = [out(DType::from(int_dtype)), out(dtype), out(dtype), out(labels_dtype)];
        let inputs = [logits, boxes, anchors, gt_boxes, gt_labels, gt_mask].map(|t| t.into_ir());
        let desc = CustomOpIr::new("task_aligned_assign", &inputs, &outputs);
        let [gt_idx, fg, norm, labels] = client
            .register(streams, OperationIr::Custom(desc.clone()), TalOp::<B> { desc, cfg, int_dtype, _b: PhantomData })
            .outputs::<4>();
        (gt_idx, fg, norm, labels)
    }
}
