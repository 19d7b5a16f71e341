//! Loss items of one detection-loss branch from the block partial sums of the box loss
//! ([`crate::bbox_loss`]) and the one-hot BCE ([`crate::bce_onehot`]), or of the fused anchor pass
//! ([`super::det_loss`]): the final reduction, ultralytics' normalisation, the gains and the branch's share of
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
//! `d S_l1 = g_l1·k·d items[2]`, `d S_cls = g_cls·k·d items[1]`, `d W = 0` ([`crate::branch_loss::items_backward`]; on the
//! kernel path it is computed inside the anchor-pass backward of [`super::det_loss`], with
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
//! ([`crate::branch_loss::items_from_sums`]).
//!
//! One cube of [`UNITS`] units; unit `u` sums the partials `u, u + UNITS, …` of both inputs, a
//! shared-memory tree reduces the four sums, unit 0 writes `items`, `w_sum`, `total` and `terms`. The backward
//! (a scaling) is folded into the anchor-pass backward of [`super::det_loss`].
use cubecl::prelude::*;

use burn::tensor::DType;
use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

/// Units of the single cube of the forward.
pub const UNITS: usize = 256;

/// `box_partial [3n]`, `cls_partial [m]` (f32) → `items [3]`, `w_sum [1]`, `total [1]` (`mix·Σ items`) and
/// `terms [3]` (`mix·items`), float `F`.
#[cube(launch_unchecked)]
#[allow(clippy::assign_op_pattern, clippy::too_many_arguments)]
pub fn loss_items_fwd_kernel<F: Float>(
    box_partial: &Tensor<f32>,
    cls_partial: &Tensor<f32>,
    items: &mut Tensor<F>,
    w_sum: &mut Tensor<F>,
    total: &mut Tensor<F>,
    terms: &mut Tensor<F>,
    num_box: u32,
    num_cls: u32,
    g_box: f32,
    g_cls: f32,
    g_l1: f32,
    mix: f32,
    #[comptime] units: usize,
    #[define(F)] _dtype: StorageType,
) {
    let tid = UNIT_POS_X as usize;
    let mut s_box = f32::new(0.0);
    let mut s_l1 = f32::new(0.0);
    let mut s_w = f32::new(0.0);
    let mut s_cls = f32::new(0.0);
    let mut i = tid;
    while i < num_box as usize {
        s_box = s_box + box_partial[3 * i];
        s_l1 = s_l1 + box_partial[3 * i + 1];
        s_w = s_w + box_partial[3 * i + 2];
        i += units;
    }
    let mut j = tid;
    while j < num_cls as usize {
        s_cls = s_cls + cls_partial[j];
        j += units;
    }
    let mut sh = SharedMemory::<f32>::new(units * 4);
    sh[tid] = s_box;
    sh[units + tid] = s_l1;
    sh[2 * units + tid] = s_w;
    sh[3 * units + tid] = s_cls;
    sync_cube();
    let mut half = (units / 2).runtime();
    while half > 0 {
        if tid < half {
            #[unroll]
            for r in 0..4usize {
                sh[r * units + tid] = sh[r * units + tid] + sh[r * units + tid + half];
            }
        }
        sync_cube();
        half /= 2;
    }
    if tid == 0 {
        let w = sh[2 * units];
        let k = f32::new(1.0) / max(w, f32::new(1.0));
        let i0 = g_box * sh[0] * k;
        let i1 = g_cls * sh[3 * units] * k;
        let i2 = g_l1 * sh[units] * k;
        items[0] = F::cast_from(i0);
        items[1] = F::cast_from(i1);
        items[2] = F::cast_from(i2);
        w_sum[0] = F::cast_from(w);
        terms[0] = F::cast_from(mix * i0);
        terms[1] = F::cast_from(mix * i1);
        terms[2] = F::cast_from(mix * i2);
        total[0] = F::cast_from(mix * (i0 + i1 + i2));
    }
}

/// The outputs of [`launch_loss_items_forward`]: one float dtype, contiguous, all written.
pub struct ItemsOut<'a, R: CubeRuntime> {
    /// `[3]` `(box, cls, l1)`.
    pub items: &'a CubeTensor<R>,
    /// `[1]` `W`.
    pub w_sum: &'a CubeTensor<R>,
    /// `[1]` `mix·(box + cls + l1)`.
    pub total: &'a CubeTensor<R>,
    /// `[3]` `mix·items`.
    pub terms: &'a CubeTensor<R>,
}

/// Launches [`loss_items_fwd_kernel`]: `box_partial` f32 `[.., 3]` (any rank, contiguous, element count a
/// multiple of 3), `cls_partial` f32 (contiguous) → [`ItemsOut`]. `gains = (g_box, g_cls, g_l1)`, batch size
/// included; `mix` weighs the branch in `total` and `terms`.
pub fn launch_loss_items_forward<R: CubeRuntime>(
    box_partial: &CubeTensor<R>,
    cls_partial: &CubeTensor<R>,
    out: ItemsOut<'_, R>,
    gains: [f32; 3],
    mix: f32,
) {
    let ItemsOut { items, w_sum, total, terms } = out;
    crate::cube_util::assert_tight(
        "launch_loss_items_forward",
        &[box_partial, cls_partial, items, w_sum, total, terms],
    );
    let nb = box_partial.meta.shape().num_elements();
    assert!(
        nb.is_multiple_of(3),
        "launch_loss_items_forward: box_partial must hold (box, l1, w) triplets, got {nb} values"
    );
    for (t, name) in [(box_partial, "box_partial"), (cls_partial, "cls_partial")] {
        assert_eq!(t.dtype, DType::F32, "launch_loss_items_forward: {name} must be F32");
    }
    assert_eq!(items.meta.shape().num_elements(), 3, "launch_loss_items_forward: items must be [3]");
    assert_eq!(w_sum.meta.shape().num_elements(), 1, "launch_loss_items_forward: w_sum must be [1]");
    assert_eq!(total.meta.shape().num_elements(), 1, "launch_loss_items_forward: total must be [1]");
    assert_eq!(terms.meta.shape().num_elements(), 3, "launch_loss_items_forward: terms must be [3]");
    for t in [w_sum, total, terms] {
        assert_eq!(t.dtype, items.dtype, "launch_loss_items_forward: items, w_sum, total and terms share a dtype");
    }
    // SAFETY: unit reads stay below `3·(nb/3)` and `cls` elements; `items`/`terms` have 3 elements, `w_sum`/`total` 1.
    unsafe {
        loss_items_fwd_kernel::launch_unchecked::<R>(
            &items.client,
            CubeCount::Static(1, 1, 1),
            CubeDim::new_1d(UNITS as u32),
            box_partial.clone().into_tensor_arg(),
            cls_partial.clone().into_tensor_arg(),
            items.clone().into_tensor_arg(),
            w_sum.clone().into_tensor_arg(),
            total.clone().into_tensor_arg(),
            terms.clone().into_tensor_arg(),
            (nb / 3) as u32,
            cls_partial.meta.shape().num_elements() as u32,
            gains[0],
            gains[1],
            gains[2],
            mix,
            UNITS,
            items.dtype.into(),
        )
    }
}
