//! CIoU loss forward kernel.
//!
//! # Math (ultralytics `bbox_iou(b1, b2, xywh=False, CIoU=True, eps=1e-7)`, same operation order)
//!
//! For `b1 = pred = (x1, y1, x2, y2)` and `b2 = target`:
//!
//! ```text
//! w1 = b1.x2 − b1.x1          h1 = b1.y2 − b1.y1 + eps        (w2, h2 alike)
//! inter = max(min(b1.x2, b2.x2) − max(b1.x1, b2.x1), 0) · max(min(b1.y2, b2.y2) − max(b1.y1, b2.y1), 0)
//! union = w1·h1 + w2·h2 − inter + eps                 iou = inter / union
//! cw = max(b1.x2, b2.x2) − min(b1.x1, b2.x1)          ch alike        c2 = cw² + ch² + eps
//! rho2 = ((b2.x1 + b2.x2 − b1.x1 − b1.x2)² + (b2.y1 + b2.y2 − b1.y1 − b1.y2)²) / 4
//! v = 4/π² · (atan(w2/h2) − atan(w1/h1))²             alpha = v / (1 − iou + v + eps)   (no gradient)
//! loss = 1 − (iou − (rho2/c2 + v·alpha))
//! ```
//!
//! The kernel writes `loss` (dtype `F`) and `alpha` (f32, saved for the backward kernel, which recomputes
//! the other intermediates from the 8 coordinates: cheaper than storing them).
//!
//! # Work split
//!
//! 1-D grid, one unit per box.
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::{EPS, UNITS, V_SCALE};

/// `(CIoU, alpha)` of the boxes `b1`, `b2` (xyxy), the formula of the module doc in f32 (shared with the
/// task-aligned assigner's metrics kernel).
#[cube]
#[allow(clippy::too_many_arguments)]
pub fn ciou_parts(
    b1_x1: f32,
    b1_y1: f32,
    b1_x2: f32,
    b1_y2: f32,
    b2_x1: f32,
    b2_y1: f32,
    b2_x2: f32,
    b2_y2: f32,
) -> (f32, f32) {
    let eps = f32::new(EPS);
    let zero = f32::new(0.0);
    let one = f32::new(1.0);

    let w1 = b1_x2 - b1_x1;
    let h1 = b1_y2 - b1_y1 + eps;
    let w2 = b2_x2 - b2_x1;
    let h2 = b2_y2 - b2_y1 + eps;

    let iw = max(min(b1_x2, b2_x2) - max(b1_x1, b2_x1), zero);
    let ih = max(min(b1_y2, b2_y2) - max(b1_y1, b2_y1), zero);
    let inter = iw * ih;
    let union = w1 * h1 + w2 * h2 - inter + eps;
    let iou = inter / union;

    let cw = max(b1_x2, b2_x2) - min(b1_x1, b2_x1);
    let ch = max(b1_y2, b2_y2) - min(b1_y1, b2_y1);
    let c2 = cw * cw + ch * ch + eps;
    let dx = b2_x1 + b2_x2 - b1_x1 - b1_x2;
    let dy = b2_y1 + b2_y2 - b1_y1 - b1_y2;
    let rho2 = (dx * dx + dy * dy) / f32::new(4.0);

    let at = (w2 / h2).atan() - (w1 / h1).atan();
    let v = f32::new(V_SCALE) * (at * at);
    let a = v / (one - iou + v + eps);
    (iou - (rho2 / c2 + v * a), a)
}

/// `pred`, `target` `[M, 4]` → `loss [M]` (dtype `F`), `alpha [M]` (f32).
#[cube(launch_unchecked)]
pub fn ciou_fwd_kernel<F: Float>(
    pred: &Tensor<F>,
    target: &Tensor<F>,
    loss: &mut Tensor<F>,
    alpha: &mut Tensor<f32>,
    num_boxes: u32,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i < num_boxes as usize {
        let base = i * 4;
        let (ciou, a) = ciou_parts(
            f32::cast_from(pred[base]),
            f32::cast_from(pred[base + 1]),
            f32::cast_from(pred[base + 2]),
            f32::cast_from(pred[base + 3]),
            f32::cast_from(target[base]),
            f32::cast_from(target[base + 1]),
            f32::cast_from(target[base + 2]),
            f32::cast_from(target[base + 3]),
        );
        let one = f32::new(1.0);
        loss[i] = F::cast_from(one - ciou);
        alpha[i] = a;
    }
}

/// Launches [`ciou_fwd_kernel`]: `pred`, `target` contiguous `[M, 4]`; `loss` contiguous `[M]` of their
/// dtype and `alpha` contiguous f32 `[M]` (every element written). No launch when `M = 0`.
pub fn launch_ciou_forward<R: CubeRuntime>(
    pred: &CubeTensor<R>,
    target: &CubeTensor<R>,
    loss: &CubeTensor<R>,
    alpha: &CubeTensor<R>,
) {
    crate::cube_util::assert_tight("launch_ciou_forward", &[pred, target, loss, alpha]);
    let m = pred.meta.shape()[0];
    if m == 0 {
        return;
    }
    let client = pred.client.clone();
    let cube_dim = CubeDim::new_1d(UNITS);
    let cube_count = cubecl::calculate_cube_count_elemwise(&client, m, cube_dim);
    // SAFETY: every access is guarded by `i < M`; `pred`/`target` hold `4·M` elements, `loss`/`alpha` `M`.
    unsafe {
        ciou_fwd_kernel::launch_unchecked::<R>(
            &client,
            cube_count,
            cube_dim,
            pred.clone().into_tensor_arg(),
            target.clone().into_tensor_arg(),
            loss.clone().into_tensor_arg(),
            alpha.clone().into_tensor_arg(),
            m as u32,
            pred.dtype.into(),
        )
    }
}
