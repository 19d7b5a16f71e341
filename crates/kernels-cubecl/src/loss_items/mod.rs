//! Loss items of one detection-loss branch from the block partial sums of the box loss
//! ([`crate::bbox_loss`]) and the one-hot BCE ([`crate::bce_onehot`]), or of the fused anchor pass
//! ([`crate::det_loss`]): the final reduction, ultralytics' normalisation, the gains and the branch's share of
//! the total loss in one launch.
//!
//! # Math (ultralytics `v8DetectionLoss.loss`, after the three sums)
//!
//! ```text
//! (S_box, S_l1, W) = Σ box partials            (Σ w·(1 − CIoU), Σ w·L1, Σ w)
//! S_cls            = Σ BCE partials
//! k                = 1 / max(W, 1)             (target_scores_sum.clamp(min=1))
//! items            = (g_box·S_box·k, g_cls·S_cls·k, g_l1·S_l1·k),   w_sum = W
//! terms            = mix·items,   total = mix·(items[0] + items[1] + items[2])
//! ```
//!
//! `g_*` are the loss gains times the batch size (ultralytics returns `loss * batch_size`). `W` depends only
//! on the assignment (no gradient), so the backward is a scaling: `d S_box = g_box·k·d items[0]`,
//! `d S_l1 = g_l1·k·d items[2]`, `d S_cls = g_cls·k·d items[1]`, `d W = 0` ([`items_backward`]; on the
//! kernel path it is computed inside the anchor-pass backward of [`crate::det_loss`], with
//! `d items[i] = mix·d total`). `mix` is the branch weight of YOLO26's `E2ELoss` (1 for a lone branch).
//!
//! # Layouts
//!
//! `box_partial`: f32, contiguous, `n` triplets `(box, l1, w)` (the `[B, chunks, 3]` of
//! [`crate::bbox_loss::cube::raw::forward_split`]); `cls_partial`: f32, contiguous, any length (the
//! `[rows, chunks]` of [`crate::bce_onehot::cube::raw::forward_split`]); `items [3]`, `w_sum [1]`, `total [1]`
//! and `terms [3]` in the loss dtype.
//!
//! This is a raw launch (no Burn op of its own): the YOLO26 loss branch op composes it with the anchor-pass
//! kernels on `CubeBackend`; other backends compute the same from the sums with tensor ops
//! ([`items_from_sums`]).

pub(crate) mod kernels;

#[cfg(test)]
mod tests;

use burn::tensor::{backend::Backend, Tensor};

/// Units of the single cube of the forward.
pub const UNITS: usize = 256;

/// `(items [3], w_sum [1])` from `box_sums [3] = (S_box, S_l1, W)` and `cls_sum [1]` with tensor ops (any
/// backend; the reference of the kernels). `gains = (g_box, g_cls, g_l1)`, batch size included.
pub fn items_from_sums<B: Backend>(
    box_sums: Tensor<B, 1>,
    cls_sum: Tensor<B, 1>,
    gains: [f32; 3],
) -> (Tensor<B, 1>, Tensor<B, 1>) {
    let w = box_sums.clone().narrow(0, 2, 1);
    let k = w.clone().clamp_min(1.0).recip();
    let item = |s: Tensor<B, 1>, g: f32| s * k.clone() * g;
    let items = Tensor::cat(
        vec![
            item(box_sums.clone().narrow(0, 0, 1), gains[0]),
            item(cls_sum, gains[1]),
            item(box_sums.narrow(0, 1, 1), gains[2]),
        ],
        0,
    );
    (items, w)
}

/// The backward of [`items_from_sums`] with tensor ops: `d_items [3]`, `w_sum [1]` → `(d_box_sums [3], d_cls
/// [1])` (`d W = 0`: the weights come from the assignment).
pub fn items_backward<B: Backend>(
    d_items: Tensor<B, 1>,
    w_sum: Tensor<B, 1>,
    gains: [f32; 3],
) -> (Tensor<B, 1>, Tensor<B, 1>) {
    let k = w_sum.clamp_min(1.0).recip();
    let d = |i: usize, g: f32| d_items.clone().narrow(0, i, 1) * k.clone() * g;
    let d_box = Tensor::cat(vec![d(0, gains[0]), d(2, gains[2]), d_items.clone().narrow(0, 0, 1).zeros_like()], 0);
    (d_box, d(1, gains[1]))
}
