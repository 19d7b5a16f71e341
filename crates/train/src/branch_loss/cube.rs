//! [`BranchLossBackend`] for [`CubeBackend`]: the kernels of `kernels-cubecl` launched directly, no Burn
//! tensor op in between. Forward (9 launches): detect-decode, the assigner (metrics, top-k, resolve, GT
//! statistics, targets — its targets kernel also gathers the labels), the box-loss and one-hot BCE block
//! partial sums, and the items kernel (final sums, normalisation, gains). Backward (3 launches): the items
//! scaling, the box-loss backward, the one-hot BCE backward. Other cases (F64, no GT slot, an empty batch,
//! a top-k the kernels do not take) run the default composition.
use burn::tensor::{ops::IntTensor, DType, IntDType, Shape};
use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};
use kernels_cubecl::bbox_loss::cube::raw as bbox;
use kernels_cubecl::bce_onehot::cube::raw as bce;
use kernels_cubecl::cube_util::{empty, tight_as};
use kernels_cubecl::decode::{BoxFormat, DetectDecodeBackend};
use kernels_cubecl::loss_items::kernels::{launch_loss_items_backward, launch_loss_items_forward};
use kernels_cubecl::tal::cube::assign;
use kernels_cubecl::topk::kernel::chunk_for;

use super::{compose, compose_backward, BranchConfig, BranchLossBackend, BranchPrims, BranchSaved};

/// Whether the kernel path takes this branch (else the default composition runs).
fn kernel_path<R: CubeRuntime>(scores: &CubeTensor<R>, gt_boxes: &CubeTensor<R>, cfg: &BranchConfig) -> bool {
    let [b, _, a] = scores.meta.shape().dims::<3>();
    let tal = cfg.tal;
    scores.dtype != DType::F64
        && b * a > 0
        && gt_boxes.meta.shape()[1] > 0
        && (tal.topk2 == tal.topk || tal.one2one())
        && chunk_for(tal.topk).is_some()
        && tal.topk <= a
}

impl<R, F, I, BT> BranchLossBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn branch_loss(
        boxes: CubeTensor<R>,
        scores: CubeTensor<R>,
        grid: CubeTensor<R>,
        gt_boxes: CubeTensor<R>,
        gt_labels: IntTensor<Self>,
        gt_mask: CubeTensor<R>,
        cfg: BranchConfig,
        int_dtype: IntDType,
    ) -> BranchPrims<Self> {
        if !kernel_path(&scores, &gt_boxes, &cfg) {
            return compose::<Self>(boxes, scores, grid, gt_boxes, gt_labels, gt_mask, cfg, int_dtype);
        }
        let dtype = scores.dtype;
        let [b, c, a] = scores.meta.shape().dims::<3>();
        let pred_px = Self::detect_decode_forward(boxes.clone(), grid.clone(), BoxFormat::Xyxy);
        let grid = tight_as(grid, DType::F32);
        let gt_boxes = tight_as(gt_boxes, DType::F32);
        let [gt_idx, fg, score_sum, labels] = assign(
            scores.clone(),
            pred_px,
            grid.clone(),
            gt_boxes.clone(),
            gt_labels,
            gt_mask,
            cfg.tal,
            int_dtype.into(),
        );

        let weight = tight_as(score_sum.clone(), DType::F32);
        let (_, box_chunks) = bbox::forward_split(b, a);
        let box_partial = empty(&scores, Shape::new([b, box_chunks, 3]), DType::F32);
        bbox::launch_bbox_loss_forward(&boxes, &grid, &gt_boxes, &gt_idx, &weight, &box_partial, cfg.image);
        let (rows, cls_chunks) = bce::forward_split(b, c, a);
        let cls_partial = empty(&scores, Shape::new([rows, cls_chunks]), DType::F32);
        bce::launch_bce_onehot_forward(&scores, &labels, &score_sum, &cls_partial);
        let items = empty(&scores, Shape::new([3]), dtype);
        let w_sum = empty(&scores, Shape::new([1]), dtype);
        launch_loss_items_forward(&box_partial, &cls_partial, &items, &w_sum, cfg.batch_gains(b));
        BranchPrims { items, w_sum, gt_idx, fg, score_sum, labels }
    }

    fn branch_loss_backward(
        boxes: CubeTensor<R>,
        scores: CubeTensor<R>,
        saved: BranchSaved<Self>,
        d_items: CubeTensor<R>,
        cfg: BranchConfig,
    ) -> (CubeTensor<R>, CubeTensor<R>) {
        if !kernel_path(&scores, &saved.gt_boxes, &cfg) {
            return compose_backward::<Self>(boxes, scores, saved, d_items, cfg);
        }
        let dtype = scores.dtype;
        let b = scores.meta.shape()[0];
        let d_items = tight_as(d_items, dtype);
        let w_sum = tight_as(saved.w_sum, dtype);
        let d_box = empty(&scores, Shape::new([3]), DType::F32);
        let d_cls = empty(&scores, Shape::new([1]), dtype);
        launch_loss_items_backward(&d_items, &w_sum, &d_box, &d_cls, cfg.batch_gains(b));

        let grid = tight_as(saved.grid, DType::F32);
        let gt_boxes = tight_as(saved.gt_boxes, DType::F32);
        let idx_dtype = saved.gt_idx.dtype;
        let gt_idx = tight_as(saved.gt_idx, idx_dtype);
        let weight = tight_as(saved.score_sum.clone(), DType::F32);
        let d_boxes = empty(&boxes, boxes.meta.shape().clone(), boxes.dtype);
        bbox::launch_bbox_loss_backward(&boxes, &grid, &gt_boxes, &gt_idx, &weight, &d_box, &d_boxes, cfg.image);

        let labels_dtype = saved.labels.dtype;
        let labels = tight_as(saved.labels, labels_dtype);
        let score_sum = tight_as(saved.score_sum, dtype);
        let d_scores = empty(&scores, scores.meta.shape().clone(), dtype);
        bce::launch_bce_onehot_backward(&scores, &labels, &score_sum, &d_cls, &d_scores);
        (d_boxes, d_scores)
    }
}
