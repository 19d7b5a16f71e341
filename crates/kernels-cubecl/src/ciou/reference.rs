//! The reference implementation of the CIoU loss in Burn tensor ops (the default bodies of the backend trait).
//!
//! Shapes: `pred`, `target`: `[M, 4]` xyxy (one dtype), `loss`: `[M]` (dtype of `pred`), `alpha`: `[M]`
//! (F32 from the kernels; the reference keeps F64 for F64 inputs), the CIoU trade-off parameter saved by
//! the forward for the backward.
use burn::tensor::{backend::Backend, ops::FloatTensor, Tensor};

use super::CIOU_EPS;
use crate::tensor_util::{compute_dtype, float};

/// `4 / π²`.
pub(crate) const V_SCALE: f64 = 4.0 / (std::f64::consts::PI * std::f64::consts::PI);

fn cols<B: Backend>(t: Tensor<B, 2>) -> [Tensor<B, 2>; 4] {
    [0, 1, 2, 3].map(|i| t.clone().narrow(1, i, 1))
}

/// Weight of `a` in `min(a, b)`: 1 where `a < b`, ½ where `a = b`, 0 elsewhere (PyTorch's tie rule).
fn min_weight<B: Backend>(a: &Tensor<B, 2>, b: &Tensor<B, 2>) -> Tensor<B, 2> {
    a.zeros_like().mask_fill(a.clone().lower(b.clone()), 1.0).mask_fill(a.clone().equal(b.clone()), 0.5)
}

/// Weight of `a` in `max(a, b)`: 1 where `a > b`, ½ where `a = b`, 0 elsewhere.
fn max_weight<B: Backend>(a: &Tensor<B, 2>, b: &Tensor<B, 2>) -> Tensor<B, 2> {
    a.zeros_like().mask_fill(a.clone().greater(b.clone()), 1.0).mask_fill(a.clone().equal(b.clone()), 0.5)
}

/// `min(a, b)` with PyTorch's gradient (ties split half/half); the value is exactly `min(a, b)`.
fn min_t<B: Backend>(a: Tensor<B, 2>, b: Tensor<B, 2>) -> Tensor<B, 2> {
    let w = min_weight(&a, &b);
    a * w.clone() + b * (w.neg() + 1.0)
}

/// `max(a, b)` with PyTorch's gradient (ties split half/half); the value is exactly `max(a, b)`.
fn max_t<B: Backend>(a: Tensor<B, 2>, b: Tensor<B, 2>) -> Tensor<B, 2> {
    let w = max_weight(&a, &b);
    a * w.clone() + b * (w.neg() + 1.0)
}

/// `x.clamp(min=0)` with PyTorch's gradient (passes where `x ≥ 0`).
fn clamp0<B: Backend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
    x.clone().mask_fill(x.lower_elem(0.0), 0.0)
}

fn sq<B: Backend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
    x.clone() * x
}

/// The ultralytics formula in tensor ops, on `[M, 4]` xyxy boxes of any float dtype (computed in that
/// dtype): returns `(1 − CIoU [M], alpha [M])`. `alpha` is detached (as under `torch.no_grad()`), so on an
/// `Autodiff` backend this function's own gradient is the one PyTorch computes for the ultralytics code
/// (the tests use it in F64 as the gradient reference).
pub fn ciou_formula<B: Backend>(pred: Tensor<B, 2>, target: Tensor<B, 2>) -> (Tensor<B, 1>, Tensor<B, 1>) {
    let eps = CIOU_EPS as f64;
    let [b1_x1, b1_y1, b1_x2, b1_y2] = cols(pred);
    let [b2_x1, b2_y1, b2_x2, b2_y2] = cols(target);
    let w1 = b1_x2.clone() - b1_x1.clone();
    let h1 = b1_y2.clone() - b1_y1.clone() + eps;
    let w2 = b2_x2.clone() - b2_x1.clone();
    let h2 = b2_y2.clone() - b2_y1.clone() + eps;

    let inter = clamp0(min_t(b1_x2.clone(), b2_x2.clone()) - max_t(b1_x1.clone(), b2_x1.clone()))
        * clamp0(min_t(b1_y2.clone(), b2_y2.clone()) - max_t(b1_y1.clone(), b2_y1.clone()));
    let union = w1.clone() * h1.clone() + w2.clone() * h2.clone() - inter.clone() + eps;
    let iou = inter / union;

    let cw = max_t(b1_x2.clone(), b2_x2.clone()) - min_t(b1_x1.clone(), b2_x1.clone());
    let ch = max_t(b1_y2.clone(), b2_y2.clone()) - min_t(b1_y1.clone(), b2_y1.clone());
    let c2 = sq(cw) + sq(ch) + eps;
    let rho2 = (sq(b2_x1 + b2_x2 - b1_x1 - b1_x2) + sq(b2_y1 + b2_y2 - b1_y1 - b1_y2)) / 4.0;
    let v = sq((w2 / h2).atan() - (w1 / h1).atan()) * V_SCALE;
    let alpha = (v.clone() / (iou.clone().neg() + 1.0 + v.clone() + eps)).detach();
    let ciou = iou - (rho2 / c2 + v * alpha.clone());
    let loss = ciou.neg() + 1.0;
    (loss.squeeze_dim::<1>(1), alpha.squeeze_dim::<1>(1))
}

/// Reference forward: [`ciou_formula`] computed in F32 (F64 stays F64), `loss` cast back to `pred`'s dtype.
pub fn reference_forward<B: Backend>(pred: FloatTensor<B>, target: FloatTensor<B>) -> (FloatTensor<B>, FloatTensor<B>) {
    let pred = float::<B, 2>(pred);
    let dtype = pred.dtype();
    let cd = compute_dtype(dtype);
    let (loss, alpha) = ciou_formula(pred.cast(cd), float::<B, 2>(target).cast(cd));
    (loss.cast(dtype).into_primitive().tensor(), alpha.into_primitive().tensor())
}

/// Reference backward: the hand-derived gradient (the same math as the backward kernel, see
/// `kernels/backward.rs`) in tensor ops, computed in F32 (F64 stays F64).
pub fn reference_backward<B: Backend>(
    pred: FloatTensor<B>,
    target: FloatTensor<B>,
    alpha: FloatTensor<B>,
    d_loss: FloatTensor<B>,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let eps = CIOU_EPS as f64;
    let pred = float::<B, 2>(pred);
    let dtype = pred.dtype();
    let cd = compute_dtype(dtype);
    let [px1, py1, px2, py2] = cols(pred.cast(cd));
    let [tx1, ty1, tx2, ty2] = cols(float::<B, 2>(target).cast(cd));
    let alpha = float::<B, 1>(alpha).cast(cd).unsqueeze_dim::<2>(1);
    let g = float::<B, 1>(d_loss).cast(cd).unsqueeze_dim::<2>(1);

    let w1 = px2.clone() - px1.clone();
    let h1 = py2.clone() - py1.clone() + eps;
    let w2 = tx2.clone() - tx1.clone();
    let h2 = ty2.clone() - ty1.clone() + eps;
    let iw = px2.clone().min_pair(tx2.clone()) - px1.clone().max_pair(tx1.clone());
    let ih = py2.clone().min_pair(ty2.clone()) - py1.clone().max_pair(ty1.clone());
    let iwc = clamp0(iw.clone());
    let ihc = clamp0(ih.clone());
    let inter = iwc.clone() * ihc.clone();
    let union = w1.clone() * h1.clone() + w2.clone() * h2.clone() - inter.clone() + eps;
    let iou = inter / union.clone();
    let cw = px2.clone().max_pair(tx2.clone()) - px1.clone().min_pair(tx1.clone());
    let ch = py2.clone().max_pair(ty2.clone()) - py1.clone().min_pair(ty1.clone());
    let c2 = sq(cw.clone()) + sq(ch.clone()) + eps;
    let dx = tx1.clone() + tx2.clone() - px1.clone() - px2.clone();
    let dy = ty1.clone() + ty2.clone() - py1.clone() - py2.clone();
    let rho2 = (sq(dx.clone()) + sq(dy.clone())) / 4.0;
    let r1 = w1.clone() / h1.clone();
    let r2 = w2.clone() / h2.clone();
    let at = r2.clone().atan() - r1.clone().atan();

    // loss = 1 − iou + rho2/c2 + v·alpha
    let g_iou = g.clone().neg();
    let g_inter = g_iou.clone() * (iou.clone() + 1.0) / union.clone();
    let g_area = g_iou * iou.neg() / union;
    let g_iw = (g_inter.clone() * ihc).mask_fill(iw.clone().lower_elem(0.0), 0.0);
    let g_ih = (g_inter * iwc).mask_fill(ih.clone().lower_elem(0.0), 0.0);
    let g_rho2 = g.clone() / c2.clone();
    let g_c2 = g.clone().neg() * rho2 / sq(c2);
    let g_cw = g_c2.clone() * cw * 2.0;
    let g_ch = g_c2 * ch * 2.0;
    let g_at = g * alpha * at * (2.0 * V_SCALE);
    let g_r1 = g_at.clone().neg() / (sq(r1) + 1.0);
    let g_r2 = g_at / (sq(r2) + 1.0);
    let g_w1 = g_area.clone() * h1.clone() + g_r1.clone() / h1.clone();
    let g_h1 = g_area.clone() * w1.clone() - g_r1 * w1 / sq(h1);
    let g_w2 = g_area.clone() * h2.clone() + g_r2.clone() / h2.clone();
    let g_h2 = g_area * w2.clone() - g_r2 * w2 / sq(h2);
    let half_dx = g_rho2.clone() * dx / 2.0;
    let half_dy = g_rho2 * dy / 2.0;

    // Tie weights of the pred coordinate in each min/max.
    let s_ix2 = min_weight(&px2, &tx2);
    let s_ix1 = max_weight(&px1, &tx1);
    let s_ex2 = max_weight(&px2, &tx2);
    let s_ex1 = min_weight(&px1, &tx1);
    let s_iy2 = min_weight(&py2, &ty2);
    let s_iy1 = max_weight(&py1, &ty1);
    let s_ey2 = max_weight(&py2, &ty2);
    let s_ey1 = min_weight(&py1, &ty1);
    let one = |s: Tensor<B, 2>| s.neg() + 1.0;

    let d_px1 = g_w1.clone().neg() - g_iw.clone() * s_ix1.clone() - g_cw.clone() * s_ex1.clone() - half_dx.clone();
    let d_px2 = g_w1 + g_iw.clone() * s_ix2.clone() + g_cw.clone() * s_ex2.clone() - half_dx.clone();
    let d_tx1 = g_w2.clone().neg() - g_iw.clone() * one(s_ix1) - g_cw.clone() * one(s_ex1) + half_dx.clone();
    let d_tx2 = g_w2 + g_iw * one(s_ix2) + g_cw * one(s_ex2) + half_dx;
    let d_py1 = g_h1.clone().neg() - g_ih.clone() * s_iy1.clone() - g_ch.clone() * s_ey1.clone() - half_dy.clone();
    let d_py2 = g_h1 + g_ih.clone() * s_iy2.clone() + g_ch.clone() * s_ey2.clone() - half_dy.clone();
    let d_ty1 = g_h2.clone().neg() - g_ih.clone() * one(s_iy1) - g_ch.clone() * one(s_ey1) + half_dy.clone();
    let d_ty2 = g_h2 + g_ih * one(s_iy2) + g_ch * one(s_ey2) + half_dy;

    let d_pred = Tensor::cat(vec![d_px1, d_py1, d_px2, d_py2], 1);
    let d_target = Tensor::cat(vec![d_tx1, d_ty1, d_tx2, d_ty2], 1);
    (d_pred.cast(dtype).into_primitive().tensor(), d_target.cast(dtype).into_primitive().tensor())
}
