//! [`BranchLossBackend`] for [`Fusion`]: the forward and the backward of a branch are each one opaque custom
//! op; `execute` runs the inner backend's method.
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn::tensor::{DType, IntDType, Shape};
use burn_fusion::{
    stream::{Operation, OperationStreams},
    Fusion, FusionBackend, FusionRuntime, FusionTensor,
};

use super::{BranchConfig, BranchLossBackend, BranchPrims, BranchSaved};

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
        let (
            [boxes, scores, grid, gt_boxes, gt_labels, gt_mask],
            [total, items, terms, w_sum, gt_idx, fg, score_sum, labels],
        ) = self.desc.as_fixed();
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
        handles.register_float_tensor::<B>(&total.id, out.total);
        handles.register_float_tensor::<B>(&items.id, out.items);
        handles.register_float_tensor::<B>(&terms.id, out.terms);
        handles.register_float_tensor::<B>(&w_sum.id, out.w_sum);
        handles.register_int_tensor::<B>(&gt_idx.id, out.gt_idx);
        handles.register_float_tensor::<B>(&fg.id, out.fg);
        handles.register_float_tensor::<B>(&score_sum.id, out.score_sum);
        handles.register_int_tensor::<B>(&labels.id, out.labels);
    }
}

#[derive(Clone, Debug)]
struct BranchBackwardOp<B> {
    desc: CustomOpIr,
    cfg: BranchConfig,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + BranchLossBackend> Operation<B::FusionRuntime> for BranchBackwardOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([boxes, scores, grid, gt_boxes, gt_idx, labels, score_sum, w_sum, d_total], [d_boxes, d_scores]) =
            self.desc.as_fixed();
        let saved = BranchSaved::<B> {
            grid: handles.get_float_tensor::<B>(grid),
            gt_boxes: handles.get_float_tensor::<B>(gt_boxes),
            gt_idx: handles.get_int_tensor::<B>(gt_idx),
            labels: handles.get_int_tensor::<B>(labels),
            score_sum: handles.get_float_tensor::<B>(score_sum),
            w_sum: handles.get_float_tensor::<B>(w_sum),
        };
        let (db, ds) = B::branch_loss_backward(
            handles.get_float_tensor::<B>(boxes),
            handles.get_float_tensor::<B>(scores),
            saved,
            handles.get_float_tensor::<B>(d_total),
            self.cfg,
        );
        handles.register_float_tensor::<B>(&d_boxes.id, db);
        handles.register_float_tensor::<B>(&d_scores.id, ds);
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
            out(Shape::new([1]), dtype),
            out(Shape::new([3]), dtype),
            out(Shape::new([3]), dtype),
            out(Shape::new([1]), dtype),
            out(ba(), DType::from(int_dtype)),
            out(ba(), dtype),
            out(ba(), dtype),
            out(ba(), labels_dtype),
        ];
        let inputs = [boxes, scores, grid, gt_boxes, gt_labels, gt_mask].map(|t| t.into_ir());
        let desc = CustomOpIr::new("yolo26_branch_loss", &inputs, &outputs);
        let [total, items, terms, w_sum, gt_idx, fg, score_sum, labels] = client
            .register(
                streams,
                OperationIr::Custom(desc.clone()),
                BranchOp::<B> { desc, cfg, int_dtype, _b: PhantomData },
            )
            .outputs::<8>();
        BranchPrims { total, items, terms, w_sum, gt_idx, fg, score_sum, labels }
    }

    fn branch_loss_backward(
        boxes: T<B>,
        scores: T<B>,
        saved: BranchSaved<Self>,
        d_total: T<B>,
        cfg: BranchConfig,
    ) -> (T<B>, T<B>) {
        let client = scores.client.clone();
        let BranchSaved { grid, gt_boxes, gt_idx, labels, score_sum, w_sum } = saved;
        let all = [boxes, scores, grid, gt_boxes, gt_idx, labels, score_sum, w_sum, d_total];
        let streams = OperationStreams::with_inputs(all.iter());
        let out = |t: &T<B>| TensorIr::uninit(client.create_empty_handle(), t.shape.clone(), t.dtype);
        let outputs = [out(&all[0]), out(&all[1])];
        let inputs = all.map(|t| t.into_ir());
        let desc = CustomOpIr::new("yolo26_branch_loss_backward", &inputs, &outputs);
        let [d_boxes, d_scores] = client
            .register(streams, OperationIr::Custom(desc.clone()), BranchBackwardOp::<B> { desc, cfg, _b: PhantomData })
            .outputs::<2>();
        (d_boxes, d_scores)
    }
}
