//! The anchor pass of a YOLO26 detection-loss branch (ultralytics `v8DetectionLoss.loss` after the
//! assignment, `reg_max = 1`) as one kernel forward and one kernel backward: the box terms of
//! [`crate::bbox_loss`] (CIoU and L1 on image-normalised LTRB distances, weighted by the target score) and
//! the one-hot BCE of [`crate::bce_onehot`] read the same anchor, so one unit per anchor does both. Together
//! with the items reduction of [`crate::loss_items`] a branch's loss after the assignment is two launches
//! forward and one backward (the separate ops take five and three).
//!
//! # Math
//!
//! Anchor `a` of image `b` with raw distances `d = (l, t, r, b)` (grid units), anchor `(ax, ay, s)`, target
//! score `w`, assigned box `q` (pixels, divided by `s`), target class `y` and logits `x_c`:
//!
//! ```text
//! forward : S_box += w·(1 − CIoU(p, q)),   S_l1 += w·mean_i |d_i·s/n_i − τ_i·s/n_i|,   W += w
//!           S_cls += Σ_c [max(x_c, 0) + ln(1 + e^{−|x_c|})] − x_y·w            (y ∈ [0, C), else no target)
//! backward: D = mix·d_total / max(W, 1)
//!           d d  = ∂/∂d of g_box·D·w·(1 − CIoU) + g_l1·D·w·L1                   (0 where w = 0)
//!           d x_c = g_cls·D·(σ(x_c) − w·[c = y])
//! ```
//!
//! with `p = (ax − l, ay − t, ax + r, ay + b)`, `τ = (ax − q.x1, ay − q.y1, q.x2 − ax, q.y2 − ay)`, `n = (W_img,
//! H_img, W_img, H_img)`, the gains `g` (batch size included) and `mix` the branch's weight in the total
//! (`total = mix·(items₀ + items₁ + items₂)`, [`crate::loss_items`]). Arithmetic in f32 with fast math
//! (hardware `exp`/`ln`, as [`crate::bce_onehot`]).
//!
//! # Layouts
//!
//! `dist [B, 4, A]` and `logits [B, C, A]` any strides (the head's outputs are read in place), `anchors [3, A]`
//! F32 with unit stride along `A` (pitched rows are read in place), `gt_boxes [B, G, 4]` F32, `gt_idx` and
//! `labels [B, A]` int, `score [B, A]` in the dtype of the logits — all contiguous. Outputs: the forward's
//! block partial sums `box_partial [B, chunks, 3]` `(S_box, S_l1, W)` and `cls_partial [B, chunks]` (f32), what
//! [`crate::loss_items::kernels::launch_loss_items_forward`] takes; the backward's `d_dist [B, 4, A]` and
//! `d_logits [B, C, A]` (contiguous).
//!
//! These are raw launches for `CubeBackend` (no Burn op of their own): the YOLO26 loss branch op composes them;
//! other backends run [`crate::bbox_loss`] and [`crate::bce_onehot`], whose sums and gradients these match.

pub(crate) mod kernels;

#[cfg(test)]
mod tests;
