//! [`TalBackend`] for [`Fusion`]: an opaque custom op in the fusion stream (five float inputs and the int
//! labels in; the int slot and two float tensors out); the config and index dtype travel in the op's closure.
use burn::tensor::{DType, IntDType, Shape};
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::{check_shapes, TalBackend, TalConfig};
use crate::fusion_util::{custom_op, Prim};

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
        let dtype = logits.dtype;
        let out = |dt: DType| (Shape::new([b, a]), dt);
        let outs = [out(DType::from(int_dtype)), out(dtype), out(dtype), out(gt_labels.dtype)];
        let inputs = [logits, boxes, anchors, gt_boxes, gt_labels, gt_mask];
        let [gt_idx, fg, norm, labels] =
            custom_op::<B, 6, 4>("task_aligned_assign", inputs, outs, move |[x, bx, an, gb, gl, gm]| {
                let (i, f, n, l) = B::task_aligned_assign(
                    x.float(),
                    bx.float(),
                    an.float(),
                    gb.float(),
                    gl.int(),
                    gm.float(),
                    cfg,
                    int_dtype,
                );
                [Prim::Int(i), Prim::Float(f), Prim::Float(n), Prim::Int(l)]
            });
        (gt_idx, fg, norm, labels)
    }
}
