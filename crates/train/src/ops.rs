//! The two element-wise building blocks of the loss, kept as small standalone functions so the CubeCL kernels
//! (`kernels-cubecl`) can replace them later: Complete-IoU of box pairs and binary cross-entropy with logits.
//! Plain tensor ops: every backend runs them, gradients come from Autodiff.

use burn::prelude::*;

/// ultralytics `bbox_iou(box1, box2, xywh=False, CIoU=True, eps=1e-7)`.
///
/// `box1`, `box2`: `[..., 4]` xyxy (same shape, any rank ≥ 1, no broadcasting) → `[..., 1]` CIoU
/// `= IoU − ρ²/c² − α·v`. As in ultralytics `α = v / (1 − IoU + v + eps)` is a constant for autodiff
/// (`torch.no_grad()`), `eps` is added to both heights and to the union and enclosing diagonal.
pub fn ciou<B: Backend, const D: usize>(box1: Tensor<B, D>, box2: Tensor<B, D>) -> Tensor<B, D> {
    const EPS: f64 = 1e-7;
    let c = |t: &Tensor<B, D>, i: usize| t.clone().narrow(D - 1, i, 1);
    let (b1x1, b1y1, b1x2, b1y2) = (c(&box1, 0), c(&box1, 1), c(&box1, 2), c(&box1, 3));
    let (b2x1, b2y1, b2x2, b2y2) = (c(&box2, 0), c(&box2, 1), c(&box2, 2), c(&box2, 3));
    let w1 = b1x2.clone() - b1x1.clone();
    let h1 = b1y2.clone() - b1y1.clone() + EPS;
    let w2 = b2x2.clone() - b2x1.clone();
    let h2 = b2y2.clone() - b2y1.clone() + EPS;

    let iw = (b1x2.clone().min_pair(b2x2.clone()) - b1x1.clone().max_pair(b2x1.clone())).clamp_min(0.0);
    let ih = (b1y2.clone().min_pair(b2y2.clone()) - b1y1.clone().max_pair(b2y1.clone())).clamp_min(0.0);
    let inter = iw * ih;
    let union = w1.clone() * h1.clone() + w2.clone() * h2.clone() - inter.clone() + EPS;
    let iou = inter / union;

    let cw = b1x2.clone().max_pair(b2x2.clone()) - b1x1.clone().min_pair(b2x1.clone());
    let ch = b1y2.clone().max_pair(b2y2.clone()) - b1y1.clone().min_pair(b2y1.clone());
    let c2 = cw.powi_scalar(2) + ch.powi_scalar(2) + EPS;
    let rho2 = ((b2x1 + b2x2 - b1x1 - b1x2).powi_scalar(2) + (b2y1 + b2y2 - b1y1 - b1y2).powi_scalar(2)) / 4.0;
    let v =
        ((w2 / h2).atan() - (w1 / h1).atan()).powi_scalar(2) * (4.0 / (std::f64::consts::PI * std::f64::consts::PI));
    let alpha = (v.clone() / (iou.clone().neg() + 1.0 + v.clone() + EPS)).detach();
    iou - (rho2 / c2 + v * alpha)
}

/// Per-box CIoU loss `1 − CIoU(pred, target)` (the `(1.0 - iou)` of ultralytics `BboxLoss.forward`).
/// `pred`, `target`: `[..., 4]` xyxy in the same units → `[..., 1]`.
pub fn ciou_loss<B: Backend, const D: usize>(pred: Tensor<B, D>, target: Tensor<B, D>) -> Tensor<B, D> {
    ciou(pred, target).neg() + 1.0
}

/// Element-wise `torch.nn.BCEWithLogitsLoss(reduction="none")`:
/// `max(x, 0) − x·y + log(1 + exp(−|x|))` (numerically stable; gradient `sigmoid(x) − y`).
pub fn bce_with_logits<B: Backend, const D: usize>(logits: Tensor<B, D>, targets: Tensor<B, D>) -> Tensor<B, D> {
    let softplus_neg_abs = logits.clone().abs().neg().exp().log1p();
    logits.clone().clamp_min(0.0) - logits * targets + softplus_neg_abs
}
