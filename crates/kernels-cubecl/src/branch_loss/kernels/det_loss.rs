//! The anchor pass of a YOLO26 detection-loss branch (ultralytics `v8DetectionLoss.loss` after the
//! assignment, `reg_max = 1`) as one kernel forward and one kernel backward: the box terms of
//! [`crate::bbox_loss`] (CIoU and L1 on image-normalised LTRB distances, weighted by the target score) and
//! the one-hot BCE of [`crate::bce_onehot`] read the same anchor, so one unit per anchor does both. Together
//! with the items reduction of [`super::loss_items`] a branch's loss after the assignment is two launches
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
//! (`total = mix·(items₀ + items₁ + items₂)`, [`super::loss_items`]). Arithmetic in f32 with fast math
//! (hardware `exp`/`ln`, as [`crate::bce_onehot`]).
//!
//! # Layouts
//!
//! `dist [B, 4, A]` and `logits [B, C, A]` any strides (the head's outputs are read in place), `anchors [3, A]`
//! F32 with unit stride along `A` (pitched rows are read in place), `gt_boxes [B, G, 4]` F32, `gt_idx` and
//! `labels [B, A]` int, `score [B, A]` in the dtype of the logits — all contiguous. Outputs: the forward's
//! block partial sums `box_partial [B, chunks, 3]` `(S_box, S_l1, W)` and `cls_partial [B, chunks]` (f32), what
//! [`super::loss_items::launch_loss_items_forward`] takes; the backward's `d_dist [B, 4, A]` and
//! `d_logits [B, C, A]` (contiguous).
//!
//! These are raw launches for `CubeBackend` (no Burn op of their own): the YOLO26 loss branch op composes them;
//! other backends run [`crate::bbox_loss`] and [`crate::bce_onehot`], whose sums and gradients these match.
//!
//! # Work split
//!
//! Grid `(⌈A / units⌉, B)`: unit `u` of cube `x` owns anchor `a = x·units + u` of image `b`.
//! Forward: the unit walks the `C` class rows of its anchor (four independent loads per step, as
//! [`crate::bce_onehot`]) and, where its weight is non-zero, evaluates the CIoU and L1 terms (as
//! [`crate::bbox_loss`]); a shared-memory tree reduces the four sums of the cube into `box_partial
//! [B, chunks, 3]` and `cls_partial [B, chunks]`. Backward: the unit writes its four `d dist` entries and its
//! `C` entries of `d logits`, with the scalar factors `k·gain·mix·d_total` computed in the unit from
//! `w_sum` and `d_total` (no separate scaling launch).
use cubecl::prelude::*;

use burn::tensor::DType;
use burn_cubecl::{tensor::CubeTensor, CubeRuntime};
use cubecl::ir::FastMath;

use crate::bbox_loss::kernels::{anchor_inputs, l1_term, write_box_grads};
use crate::bce_onehot::kernels::{class_bce_zero_sum, write_class_grads};
use crate::ciou::kernels::forward::ciou_parts;

/// Units per cube (one anchor each).
pub const UNITS: usize = 256;

/// `dist [B, 4, A]`, `logits [B, C, A]` (strided), `anchors [3, A]` (rows may be pitched), `gt_boxes [B, G, 4]`,
/// `gt_idx`, `labels`, `score [B, A]` → `box_partial [B, chunks, 3]`, `cls_partial [B, chunks]` (f32 sums).
#[cube(launch_unchecked, fast_math = FastMath::ReducedPrecision | FastMath::NotNaN | FastMath::NotInf)]
#[allow(clippy::too_many_arguments, clippy::assign_op_pattern)]
pub fn det_loss_fwd_kernel<F: Float, I: Int, L: Int>(
    dist: &Tensor<F>,
    logits: &Tensor<F>,
    anchors: &Tensor<f32>,
    gt_boxes: &Tensor<f32>,
    gt_idx: &Tensor<I>,
    labels: &Tensor<L>,
    score: &Tensor<F>,
    box_partial: &mut Tensor<f32>,
    cls_partial: &mut Tensor<f32>,
    num_anchors: u32,
    num_gt: u32,
    num_classes: u32,
    img_w: f32,
    img_h: f32,
    #[comptime] units: usize,
    #[define(F, I, L)] _dtypes: [StorageType; 3],
) {
    let tid = UNIT_POS_X as usize;
    let b = CUBE_POS_Y as usize;
    let na = num_anchors as usize;
    let nc = num_classes as usize;
    let a = CUBE_POS_X as usize * units + tid;
    let zero = f32::new(0.0);
    let mut cls_sum = zero;
    let mut box_sum = zero;
    let mut l1_sum = zero;
    let mut w_sum = zero;
    if a < na {
        // one-hot BCE: Σ_c bce(x, 0) − x_label·w
        let s1 = logits.stride(1);
        let base = b * logits.stride(0) + a * logits.stride(2);
        cls_sum = class_bce_zero_sum::<F>(logits, base, s1, nc);
        let w = f32::cast_from(score[b * na + a]);
        let label = i32::cast_from(labels[b * na + a]);
        if label >= 0 && label < nc as i32 {
            cls_sum = cls_sum - f32::cast_from(logits[base + label as usize * s1]) * w;
        }
        // box terms of a weighted anchor
        if w != zero {
            let (l, t, r, bt, ax, ay, s, qx1, qy1, qx2, qy2) =
                anchor_inputs::<F, I>(dist, anchors, gt_boxes, gt_idx, b, a, na, anchors.stride(0), num_gt as usize);
            let (ciou, _alpha) = ciou_parts(ax - l, ay - t, ax + r, ay + bt, qx1, qy1, qx2, qy2);
            let (e0, _d0) = l1_term(l, ax - qx1, s, img_w);
            let (e1, _d1) = l1_term(t, ay - qy1, s, img_h);
            let (e2, _d2) = l1_term(r, qx2 - ax, s, img_w);
            let (e3, _d3) = l1_term(bt, qy2 - ay, s, img_h);
            box_sum = w * (f32::new(1.0) - ciou);
            l1_sum = w * ((e0 + e1 + e2 + e3) / f32::new(4.0));
            w_sum = w;
        }
    }
    let mut sh = SharedMemory::<f32>::new(units * 4);
    sh[tid] = box_sum;
    sh[units + tid] = l1_sum;
    sh[2 * units + tid] = w_sum;
    sh[3 * units + tid] = cls_sum;
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
    let chunk = b * CUBE_COUNT_X as usize + CUBE_POS_X as usize;
    if tid < 3 {
        box_partial[chunk * 3 + tid] = sh[tid * units];
    }
    if tid == 3 {
        cls_partial[chunk] = sh[3 * units];
    }
}

/// The backward of [`det_loss_fwd_kernel`] composed with the items scaling: `w_sum [1]`, `d_total [1]` (float
/// `F`) and the host scalars `gains = (g_box, g_cls, g_l1)`, `mix` → `d_dist [B, 4, A]`, `d_logits [B, C, A]`
/// (contiguous, every element written).
#[cube(
    launch_unchecked,
    fast_math = FastMath::ReducedPrecision
        | FastMath::NotNaN
        | FastMath::NotInf
        | FastMath::AllowReciprocal
        | FastMath::UnsignedZero
)]
#[allow(clippy::too_many_arguments)]
pub fn det_loss_bwd_kernel<F: Float, I: Int, L: Int>(
    dist: &Tensor<F>,
    logits: &Tensor<F>,
    anchors: &Tensor<f32>,
    gt_boxes: &Tensor<f32>,
    gt_idx: &Tensor<I>,
    labels: &Tensor<L>,
    score: &Tensor<F>,
    w_sum: &Tensor<F>,
    d_total: &Tensor<F>,
    d_dist: &mut Tensor<F>,
    d_logits: &mut Tensor<F>,
    num_anchors: u32,
    num_gt: u32,
    num_classes: u32,
    img_w: f32,
    img_h: f32,
    g_box: f32,
    g_cls: f32,
    g_l1: f32,
    mix: f32,
    #[define(F, I, L)] _dtypes: [StorageType; 3],
) {
    let b = CUBE_POS_Y as usize;
    let na = num_anchors as usize;
    let nc = num_classes as usize;
    let a = CUBE_POS_X as usize * CUBE_DIM_X as usize + UNIT_POS_X as usize;
    if a < na {
        // d items = mix·d_total (each item enters the total once); k = 1 / max(W, 1)
        let d = mix * f32::cast_from(d_total[0]) / max(f32::cast_from(w_sum[0]), f32::new(1.0));
        let w = f32::cast_from(score[b * na + a]);

        // box and L1 terms
        write_box_grads::<F, I>(
            dist,
            anchors,
            gt_boxes,
            gt_idx,
            d_dist,
            b,
            a,
            na,
            anchors.stride(0),
            num_gt as usize,
            img_w,
            img_h,
            w,
            g_box * d,
            g_l1 * d,
        );

        // one-hot BCE: g·σ(x) for every class, then g·(σ(x_label) − w) at the label
        let g = g_cls * d;
        let s1 = logits.stride(1);
        let base = b * logits.stride(0) + a * logits.stride(2);
        let out = b * nc * na + a;
        let label = i32::cast_from(labels[b * na + a]);
        write_class_grads::<F>(logits, d_logits, base, s1, out, na, nc, label, w, g);
    }
}

/// `(B, chunks)`: the forward's partial layouts `[B, chunks, 3]` and `[B, chunks]` for `A` anchors.
pub fn forward_split(b: usize, a: usize) -> (usize, usize) {
    (b, a.div_ceil(UNITS).max(1))
}

/// The inputs both kernels read, checked: shapes `(B, C, A, G)`.
pub struct AnchorPass<'a, R: CubeRuntime> {
    /// `[B, 4, A]` raw LTRB distances (any strides), float `F`.
    pub dist: &'a CubeTensor<R>,
    /// `[B, C, A]` class logits (any strides), float `F`.
    pub logits: &'a CubeTensor<R>,
    /// `[3, A]` anchor x, y (grid units) and stride, F32, unit stride along `A` (rows may be pitched).
    pub anchors: &'a CubeTensor<R>,
    /// `[B, G, 4]` xyxy pixels, F32, contiguous.
    pub gt_boxes: &'a CubeTensor<R>,
    /// `[B, A]` assigned GT slot, int, contiguous.
    pub gt_idx: &'a CubeTensor<R>,
    /// `[B, A]` target class, int, contiguous (outside `[0, C)`: no class target).
    pub labels: &'a CubeTensor<R>,
    /// `[B, A]` target score `w` (float `F`, contiguous).
    pub score: &'a CubeTensor<R>,
    /// Input image `[W, H]` in pixels (the L1 normalisation).
    pub image: [f32; 2],
}

impl<R: CubeRuntime> Clone for AnchorPass<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R: CubeRuntime> Copy for AnchorPass<'_, R> {}

impl<R: CubeRuntime> AnchorPass<'_, R> {
    fn check(&self, what: &str) -> [usize; 4] {
        let [b, c, a] = self.logits.meta.shape().dims::<3>();
        assert_eq!(self.dist.meta.shape().dims::<3>(), [b, 4, a], "{what}: dist must be [B, 4, A]");
        assert_eq!(self.anchors.meta.shape().dims::<2>(), [3, a], "{what}: anchors must be [3, A]");
        assert_eq!(self.anchors.meta.strides()[1], 1, "{what}: anchors need unit stride along A");
        let g = self.gt_boxes.meta.shape()[1];
        assert_eq!(self.gt_boxes.meta.shape().dims::<3>(), [b, g, 4], "{what}: gt_boxes must be [B, G, 4]");
        for (t, name) in [(self.gt_idx, "gt_idx"), (self.labels, "labels"), (self.score, "score")] {
            assert_eq!(t.meta.shape().dims::<2>(), [b, a], "{what}: {name} must be [B, A]");
        }
        for (t, name) in [(self.anchors, "anchors"), (self.gt_boxes, "gt_boxes")] {
            assert_eq!(t.dtype, DType::F32, "{what}: {name} must be F32");
        }
        for (t, name) in [(self.dist, "dist"), (self.score, "score")] {
            assert_eq!(t.dtype, self.logits.dtype, "{what}: {name} must have the dtype of logits");
        }
        crate::cube_util::assert_tight(what, &[self.gt_boxes, self.gt_idx, self.labels, self.score]);
        assert!(g >= 1 && b * a > 0, "{what}: needs G ≥ 1 and B·A > 0");
        assert!(b <= 65_535, "{what}: at most 65 535 images per call (grid y), got {b}");
        [b, c, a, g]
    }

    fn dtypes(&self) -> [StorageType; 3] {
        [self.logits.dtype.into(), self.gt_idx.dtype.into(), self.labels.dtype.into()]
    }
}

/// Launches [`det_loss_fwd_kernel`] into `box_partial` (`[B, chunks, 3]`) and `cls_partial` (`[B, chunks]`),
/// f32, contiguous, every element written (`chunks` from [`forward_split`]).
pub fn launch_det_loss_forward<R: CubeRuntime>(
    p: AnchorPass<'_, R>,
    box_partial: &CubeTensor<R>,
    cls_partial: &CubeTensor<R>,
) {
    let what = "launch_det_loss_forward";
    let [b, c, a, g] = p.check(what);
    let (_, chunks) = forward_split(b, a);
    crate::cube_util::assert_tight(what, &[box_partial, cls_partial]);
    assert_eq!(box_partial.meta.shape().dims::<3>(), [b, chunks, 3], "{what}: box_partial");
    assert_eq!(cls_partial.meta.shape().dims::<2>(), [b, chunks], "{what}: cls_partial");
    for t in [box_partial, cls_partial] {
        assert_eq!(t.dtype, DType::F32, "{what}: partials must be F32");
    }
    // SAFETY: anchors are checked against `A`, images are the grid's y extent `B`; strided inputs are read
    // through their strides inside their shapes; GT slots are clamped to `[0, G)`; the label row is read only
    // when in `[0, C)`; partials at `b·chunks + x` (times 3 plus `< 3`).
    unsafe {
        det_loss_fwd_kernel::launch_unchecked::<R>(
            &p.logits.client,
            CubeCount::Static(chunks as u32, b as u32, 1),
            CubeDim::new_1d(UNITS as u32),
            p.dist.clone().into_tensor_arg(),
            p.logits.clone().into_tensor_arg(),
            p.anchors.clone().into_tensor_arg(),
            p.gt_boxes.clone().into_tensor_arg(),
            p.gt_idx.clone().into_tensor_arg(),
            p.labels.clone().into_tensor_arg(),
            p.score.clone().into_tensor_arg(),
            box_partial.clone().into_tensor_arg(),
            cls_partial.clone().into_tensor_arg(),
            a as u32,
            g as u32,
            c as u32,
            p.image[0],
            p.image[1],
            UNITS,
            p.dtypes(),
        )
    }
}

/// Launches [`det_loss_bwd_kernel`]: `w_sum [1]` (the items kernel's), `d_total [1]` (both of the dtype of
/// `logits`), `gains = (g_box, g_cls, g_l1)` (batch size included) and the branch weight `mix` → `d_dist`
/// (`[B, 4, A]`) and `d_logits` (`[B, C, A]`), contiguous, the dtype of `logits`, every element written.
pub fn launch_det_loss_backward<R: CubeRuntime>(
    p: AnchorPass<'_, R>,
    w_sum: &CubeTensor<R>,
    d_total: &CubeTensor<R>,
    d_dist: &CubeTensor<R>,
    d_logits: &CubeTensor<R>,
    gains: [f32; 3],
    mix: f32,
) {
    let what = "launch_det_loss_backward";
    let [b, c, a, g] = p.check(what);
    crate::cube_util::assert_tight(what, &[w_sum, d_total, d_dist, d_logits]);
    assert_eq!(w_sum.meta.shape().num_elements(), 1, "{what}: w_sum must hold one value");
    assert_eq!(d_total.meta.shape().num_elements(), 1, "{what}: d_total must hold one value");
    assert_eq!(d_dist.meta.shape().dims::<3>(), [b, 4, a], "{what}: d_dist");
    assert_eq!(d_logits.meta.shape().dims::<3>(), [b, c, a], "{what}: d_logits");
    for t in [w_sum, d_total, d_dist, d_logits] {
        assert_eq!(t.dtype, p.logits.dtype, "{what}: w_sum, d_total and the gradients take the dtype of logits");
    }
    // SAFETY: as the forward; `d_dist` written at `b·4·A + k·A + a`, `d_logits` at `(b·C + c)·A + a`.
    unsafe {
        det_loss_bwd_kernel::launch_unchecked::<R>(
            &p.logits.client,
            CubeCount::Static(a.div_ceil(UNITS) as u32, b as u32, 1),
            CubeDim::new_1d(UNITS as u32),
            p.dist.clone().into_tensor_arg(),
            p.logits.clone().into_tensor_arg(),
            p.anchors.clone().into_tensor_arg(),
            p.gt_boxes.clone().into_tensor_arg(),
            p.gt_idx.clone().into_tensor_arg(),
            p.labels.clone().into_tensor_arg(),
            p.score.clone().into_tensor_arg(),
            w_sum.clone().into_tensor_arg(),
            d_total.clone().into_tensor_arg(),
            d_dist.clone().into_tensor_arg(),
            d_logits.clone().into_tensor_arg(),
            a as u32,
            g as u32,
            c as u32,
            p.image[0],
            p.image[1],
            gains[0],
            gains[1],
            gains[2],
            mix,
            p.dtypes(),
        )
    }
}
