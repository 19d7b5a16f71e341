//! [`BranchLossBackend`] for [`Fusion`]: the whole branch is one opaque custom op (six inputs, five
//! outputs); `execute` runs the inner backend's composition.
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn::tensor::{DType, IntDType, Shape};
use burn_fusion::{
    stream::{Operation, OperationStreams},
    Fusion, FusionBackend, FusionRuntime, FusionTensor,
};

use super::{BranchConfig, BranchLossBackend, BranchPrims};

type Handles<B> = HandleContainer<<<B as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle>;
type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

#[derive(Clone, Debug)]
struct BranchOp<B> {
    desc: CustomOpIr,
    cfg: BranchConfig,
    int_dtype: IntDType,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + BranchLossBackend> Operation<B::FusionRuntime> for BranchOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([boxes, scores, grid, gt_boxes, gt_labels, gt_mask], [sums, gt_idx, fg, score_sum, labels]) =
            self.desc.as_fixed();
        let out = B::branch_loss(
            handles.get_float_tensor::<B>(boxes),
            handles.get_float_tensor::<B>(scores),
            handles.get_float_tensor::<B>(grid),
            handles.get_float_tensor::<B>(gt_boxes),
            handles.get_int_tensor::<B>(gt_labels),
            handles.get_float_tensor::<B>(gt_mask),
            self.cfg,
            self.int_dtype,
        );
        handles.register_float_tensor::<B>(&sums.id, out.sums);
        handles.register_int_tensor::<B>(&gt_idx.id, out.gt_idx);
        handles.register_float_tensor::<B>(&fg.id, out.fg);
        handles.register_float_tensor::<B>(&score_sum.id, out.score_sum);
        handles.register_int_tensor::<B>(&labels.id, out.labels);
    }
}

impl<B: FusionBackend + BranchLossBackend> BranchLossBackend for Fusion<B> {
    fn branch_loss(
        boxes: T<B>,
        scores: T<B>,
        grid: T<B>,
        gt_boxes: T<B>,
        gt_labels: T<B>,
        gt_mask: T<B>,
        cfg: BranchConfig,
        int_dtype: IntDType,
    ) -> BranchPrims<Self> {
        let (b, a) = (scores.shape[0], scores.shape[2]);
        let client = scores.client.clone();
        let dtype = scores.dtype;
        let labels_dtype = gt_labels.dtype;
        let streams = OperationStreams::with_inputs([&boxes, &scores, &grid, &gt_boxes, &gt_labels, &gt_mask]);
        let out = |shape: Shape, dt: DType| TensorIr::uninit(client.create_empty_handle(), shape, dt);
        let ba = || Shape::new([b, a]);
        let outputs = [
            out(Shape::new([4]), dtype),
            out(ba(), DType::from(int_dtype)),
            out(ba(), dtype),
            out(ba(), dtype),
            out(ba(), labels_dtype),
        ];
        let inputs = [boxes, scores, grid, gt_boxes, gt_labels, gt_mask].map(|t| t.into_ir());
        let desc = CustomOpIr::new("yolo26_branch_loss", &inputs, &outputs);
        let [sums, gt_idx, fg, score_sum, labels] = client
            .register(
                streams,
                OperationIr::Custom(desc.clone()),
                BranchOp::<B> { desc, cfg, int_dtype, _b: PhantomData },
            )
            .outputs::<5>();
        BranchPrims { sums, gt_idx, fg, score_sum, labels }
    }
}
