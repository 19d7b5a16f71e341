//! CIoU loss backward kernel: `d pred` and `d target` of `loss = 1 − CIoU`, alpha constant.
//!
//! # Math
//!
//! With the forward's notation and upstream gradient `g = ∂L/∂loss`, `loss = 1 − iou + rho2/c2 + v·alpha`:
//!
//! ```text
//! g_iou = −g      g_inter = g_iou·(1 + iou)/union      g_area = −g_iou·iou/union   (area = w·h, both boxes)
//! g_iw = g_inter·ih⁺ if iw ≥ 0 else 0                  g_ih = g_inter·iw⁺ if ih ≥ 0 else 0   (x⁺ = max(x, 0))
//! g_rho2 = g/c2   g_c2 = −g·rho2/c2²   g_cw = 2·cw·g_c2   g_ch = 2·ch·g_c2
//! g_at = 2·(4/π²)·g·alpha·(atan r2 − atan r1)    (r = w/h)
//! g_r1 = −g_at/(1 + r1²)   g_r2 = g_at/(1 + r2²)
//! g_w1 = g_area·h1 + g_r1/h1      g_h1 = g_area·w1 − g_r1·w1/h1²     (box 2 alike)
//! d b1.x1 = −g_w1 − s·g_iw − s'·g_cw − g_rho2·dx/2        d b2.x1 = −g_w2 − (1−s)·g_iw − (1−s')·g_cw + g_rho2·dx/2
//! d b1.x2 =  g_w1 + s·g_iw + s'·g_cw − g_rho2·dx/2        d b2.x2 =  g_w2 + (1−s)·g_iw + (1−s')·g_cw + g_rho2·dx/2
//! ```
//!
//! (`dx = b2.x1 + b2.x2 − b1.x1 − b1.x2`; y alike with `h`, `ih`, `ch`, `dy`.) `s`, `s'` are the share of
//! `b1`'s coordinate in the `min`/`max` it enters: 1 if it is the selected one, ½ on a tie, 0 otherwise
//! (PyTorch's `minimum`/`maximum` gradient), e.g. for `min(b1.x2, b2.x2)`: `s = [b1.x2 < b2.x2] + ½[b1.x2 = b2.x2]`.
//! The `iw ≥ 0` test is PyTorch's `clamp(min=0)` gradient (it passes at 0). `alpha` is the forward's
//! value (ultralytics computes it under `torch.no_grad()`).
//!
//! # Work split
//!
//! 1-D grid, one unit per box; recomputes the forward's intermediates from the 8 coordinates.
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::{EPS, TWO_V_SCALE, UNITS};

/// Share of `a` in `min(a, b)`: 1, ½ on a tie, 0.
#[cube]
fn min_share(a: f32, b: f32) -> f32 {
    let mut s = f32::new(0.0);
    if a < b {
        s = f32::new(1.0);
    }
    if a == b {
        s = f32::new(0.5);
    }
    s
}

/// Share of `a` in `max(a, b)`: 1, ½ on a tie, 0.
#[cube]
fn max_share(a: f32, b: f32) -> f32 {
    let mut s = f32::new(0.0);
    if a > b {
        s = f32::new(1.0);
    }
    if a == b {
        s = f32::new(0.5);
    }
    s
}

/// Gradients `(d b1.x1, d b1.y1, d b1.x2, d b1.y2, d b2.x1, d b2.y1, d b2.x2, d b2.y2)` of
/// `loss = 1 − CIoU(b1, b2)` for the upstream gradient `g` and the forward's `a` (alpha, a constant): the
/// formulas of the module doc in f32 (shared with the fused box loss of [`crate::bbox_loss`]).
#[cube]
#[allow(clippy::too_many_arguments)]
pub fn ciou_grads(
    px1: f32,
    py1: f32,
    px2: f32,
    py2: f32,
    tx1: f32,
    ty1: f32,
    tx2: f32,
    ty2: f32,
    a: f32,
    g: f32,
) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
    let eps = f32::new(EPS);
    let zero = f32::new(0.0);
    let one = f32::new(1.0);
    let two = f32::new(2.0);
    let half = f32::new(0.5);

    // Forward intermediates.
    let w1 = px2 - px1;
    let h1 = py2 - py1 + eps;
    let w2 = tx2 - tx1;
    let h2 = ty2 - ty1 + eps;
    let iw = min(px2, tx2) - max(px1, tx1);
    let ih = min(py2, ty2) - max(py1, ty1);
    let iwc = max(iw, zero);
    let ihc = max(ih, zero);
    let inter = iwc * ihc;
    let union = w1 * h1 + w2 * h2 - inter + eps;
    let iou = inter / union;
    let cw = max(px2, tx2) - min(px1, tx1);
    let ch = max(py2, ty2) - min(py1, ty1);
    let c2 = cw * cw + ch * ch + eps;
    let dx = tx1 + tx2 - px1 - px2;
    let dy = ty1 + ty2 - py1 - py2;
    let rho2 = (dx * dx + dy * dy) / f32::new(4.0);
    let r1 = w1 / h1;
    let r2 = w2 / h2;
    let at = r2.atan() - r1.atan();

    // Backward.
    let g_iou = -g;
    let g_inter = g_iou * (one + iou) / union;
    let g_area = -(g_iou * iou) / union;
    let mut g_iw = zero;
    if iw >= zero {
        g_iw = g_inter * ihc;
    }
    let mut g_ih = zero;
    if ih >= zero {
        g_ih = g_inter * iwc;
    }
    let g_rho2 = g / c2;
    let g_c2 = -g * rho2 / (c2 * c2);
    let g_cw = g_c2 * cw * two;
    let g_ch = g_c2 * ch * two;
    let g_at = g * a * at * f32::new(TWO_V_SCALE);
    let g_r1 = -g_at / (r1 * r1 + one);
    let g_r2 = g_at / (r2 * r2 + one);
    let g_w1 = g_area * h1 + g_r1 / h1;
    let g_h1 = g_area * w1 - g_r1 * w1 / (h1 * h1);
    let g_w2 = g_area * h2 + g_r2 / h2;
    let g_h2 = g_area * w2 - g_r2 * w2 / (h2 * h2);
    let hdx = g_rho2 * dx * half;
    let hdy = g_rho2 * dy * half;

    let s_ix2 = min_share(px2, tx2);
    let s_ix1 = max_share(px1, tx1);
    let s_ex2 = max_share(px2, tx2);
    let s_ex1 = min_share(px1, tx1);
    let s_iy2 = min_share(py2, ty2);
    let s_iy1 = max_share(py1, ty1);
    let s_ey2 = max_share(py2, ty2);
    let s_ey1 = min_share(py1, ty1);

    (
        -g_w1 - g_iw * s_ix1 - g_cw * s_ex1 - hdx,
        -g_h1 - g_ih * s_iy1 - g_ch * s_ey1 - hdy,
        g_w1 + g_iw * s_ix2 + g_cw * s_ex2 - hdx,
        g_h1 + g_ih * s_iy2 + g_ch * s_ey2 - hdy,
        -g_w2 - g_iw * (one - s_ix1) - g_cw * (one - s_ex1) + hdx,
        -g_h2 - g_ih * (one - s_iy1) - g_ch * (one - s_ey1) + hdy,
        g_w2 + g_iw * (one - s_ix2) + g_cw * (one - s_ex2) + hdx,
        g_h2 + g_ih * (one - s_iy2) + g_ch * (one - s_ey2) + hdy,
    )
}

/// `pred`, `target` `[M, 4]`, `alpha [M]` (f32), `d_loss [M]` → `d_pred`, `d_target` `[M, 4]`.
#[cube(launch_unchecked)]
pub fn ciou_bwd_kernel<F: Float>(
    pred: &Tensor<F>,
    target: &Tensor<F>,
    alpha: &Tensor<f32>,
    d_loss: &Tensor<F>,
    d_pred: &mut Tensor<F>,
    d_target: &mut Tensor<F>,
    num_boxes: u32,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i < num_boxes as usize {
        let base = i * 4;
        let (dp1, dp2, dp3, dp4, dt1, dt2, dt3, dt4) = ciou_grads(
            f32::cast_from(pred[base]),
            f32::cast_from(pred[base + 1]),
            f32::cast_from(pred[base + 2]),
            f32::cast_from(pred[base + 3]),
            f32::cast_from(target[base]),
            f32::cast_from(target[base + 1]),
            f32::cast_from(target[base + 2]),
            f32::cast_from(target[base + 3]),
            alpha[i],
            f32::cast_from(d_loss[i]),
        );
        d_pred[base] = F::cast_from(dp1);
        d_pred[base + 1] = F::cast_from(dp2);
        d_pred[base + 2] = F::cast_from(dp3);
        d_pred[base + 3] = F::cast_from(dp4);
        d_target[base] = F::cast_from(dt1);
        d_target[base + 1] = F::cast_from(dt2);
        d_target[base + 2] = F::cast_from(dt3);
        d_target[base + 3] = F::cast_from(dt4);
    }
}

/// Launches [`ciou_bwd_kernel`]: `pred`, `target` contiguous `[M, 4]`, `alpha` contiguous f32 `[M]`,
/// `d_loss` contiguous `[M]` of `pred`'s dtype; `d_pred`, `d_target` contiguous `[M, 4]` of that dtype
/// (every element written). No launch when `M = 0`.
pub fn launch_ciou_backward<R: CubeRuntime>(
    pred: &CubeTensor<R>,
    target: &CubeTensor<R>,
    alpha: &CubeTensor<R>,
    d_loss: &CubeTensor<R>,
    d_pred: &CubeTensor<R>,
    d_target: &CubeTensor<R>,
) {
    crate::cube_util::assert_tight("launch_ciou_backward", &[pred, target, alpha, d_loss, d_pred, d_target]);
    let m = pred.meta.shape()[0];
    if m == 0 {
        return;
    }
    let client = pred.client.clone();
    let cube_dim = CubeDim::new_1d(UNITS);
    let cube_count = cubecl::calculate_cube_count_elemwise(&client, m, cube_dim);
    // SAFETY: every access is guarded by `i < M`; the `[M, 4]` tensors hold `4·M` elements, the others `M`.
    unsafe {
        ciou_bwd_kernel::launch_unchecked::<R>(
            &client,
            cube_count,
            cube_dim,
            pred.clone().into_tensor_arg(),
            target.clone().into_tensor_arg(),
            alpha.clone().into_tensor_arg(),
            d_loss.clone().into_tensor_arg(),
            d_pred.clone().into_tensor_arg(),
            d_target.clone().into_tensor_arg(),
            m as u32,
            pred.dtype.into(),
        )
    }
}
