//! The reference implementation of the detect-decode op in Burn tensor ops (the default bodies of the backend trait).
//!
//! Shapes: `dist: [B, 4, A]` (any float dtype), `anchors: [3, A]` (rows ax, ay, stride), `boxes: [B, 4, A]`
//! (dtype of `dist`). The op is linear in `dist`, so the backward needs only the anchors' strides.
use burn::tensor::{backend::Backend, ops::FloatTensor, DType, Tensor};

use crate::tensor_util::{compute_dtype, float};

use super::BoxFormat;

/// `(anchor points [1, 2, A], strides [1, 1, A])` in dtype `dtype`.
fn split_anchors<B: Backend>(anchors: FloatTensor<B>, dtype: DType) -> (Tensor<B, 3>, Tensor<B, 3>) {
    let anchors = float::<B, 2>(anchors).cast(dtype);
    let points = anchors.clone().narrow(0, 0, 2).unsqueeze_dim::<3>(0);
    let strides = anchors.narrow(0, 2, 1).unsqueeze_dim::<3>(0);
    (points, strides)
}

/// Reference forward from tensor ops, ultralytics' operation order (`x1y1 = a − lt`, `x2y2 = a + rb`,
/// `c = (x1y1 + x2y2) / 2`, `wh = x2y2 − x1y1`, then `· stride`), computed in F32 (F64 stays F64).
pub fn reference_forward<B: Backend>(
    dist: FloatTensor<B>,
    anchors: FloatTensor<B>,
    format: BoxFormat,
) -> FloatTensor<B> {
    let dist = float::<B, 3>(dist);
    let dtype = dist.dtype();
    let cd = compute_dtype(dtype);
    let dist = dist.cast(cd);
    let (points, strides) = split_anchors::<B>(anchors, cd);
    let lt = dist.clone().narrow(1, 0, 2);
    let rb = dist.narrow(1, 2, 2);
    let x1y1 = points.clone() - lt;
    let x2y2 = points + rb;
    let boxes = match format {
        BoxFormat::Xyxy => Tensor::cat(vec![x1y1, x2y2], 1),
        BoxFormat::Xywh => {
            let c = (x1y1.clone() + x2y2.clone()) / 2.0;
            let wh = x2y2 - x1y1;
            Tensor::cat(vec![c, wh], 1)
        }
    };
    (boxes * strides).cast(dtype).into_primitive().tensor()
}

/// Reference backward: xyxy `d(l, t) = −s·g(x1, y1)`, `d(r, b) = s·g(x2, y2)`; xywh
/// `d(l, t) = s·(−g(cx, cy)/2 + g(w, h))`, `d(r, b) = s·(g(cx, cy)/2 + g(w, h))`.
pub fn reference_backward<B: Backend>(
    anchors: FloatTensor<B>,
    d_boxes: FloatTensor<B>,
    format: BoxFormat,
) -> FloatTensor<B> {
    let g = float::<B, 3>(d_boxes);
    let dtype = g.dtype();
    let cd = compute_dtype(dtype);
    let (_, strides) = split_anchors::<B>(anchors, cd);
    let g = g.cast(cd) * strides;
    let g01 = g.clone().narrow(1, 0, 2);
    let g23 = g.narrow(1, 2, 2);
    let d = match format {
        BoxFormat::Xyxy => Tensor::cat(vec![-g01, g23], 1),
        BoxFormat::Xywh => {
            let half = g01 / 2.0;
            Tensor::cat(vec![g23.clone() - half.clone(), g23 + half], 1)
        }
    };
    d.cast(dtype).into_primitive().tensor()
}
