//! Kernels of the fused box loss (math in the module doc of [`crate::bbox_loss`]).
//!
//! # Work split
//!
//! Grid x over blocks of anchors, y over images. Forward: a unit takes `PER_UNIT` anchors (`u, u + units,
//! …`, coalesced), evaluates the CIoU ([`ciou_parts`]) and L1 terms of the weighted ones, and the cube
//! reduces its three sums in shared memory into `partial [B, chunks, 3]` (f32); the host sums the partials.
//! Backward: one unit per anchor writes its four `d dist` entries (zeros where `w = 0`), the CIoU gradient
//! from [`ciou_grads`] with alpha recomputed by [`ciou_parts`].
//!
//! Layouts: `dist [B, 4, A]` any strides (read in place); `anchors [3, A]`, `gt_boxes [B, G, 4]` f32,
//! `gt_idx [B, A]` int, `weight [B, A]` f32, `d_sums [3]` f32, `d_dist [B, 4, A]` — all contiguous.
use cubecl::prelude::*;

use burn::tensor::DType;
use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use crate::ciou::kernels::{backward::ciou_grads, forward::ciou_parts};

/// Units per cube.
pub const UNITS: usize = 256;

/// Anchors per unit in the forward.
pub const PER_UNIT: usize = 4;

/// Inputs of one anchor: `(l, t, r, b, ax, ay, s, q.x1, q.y1, q.x2, q.y2)`, `q` in grid units.
/// `sa` is the row stride of `anchors` (`A` when tight; the fused detection-loss kernels read pitched rows).
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn anchor_inputs<F: Float, I: Int>(
    dist: &Tensor<F>,
    anchors: &Tensor<f32>,
    gt_boxes: &Tensor<f32>,
    gt_idx: &Tensor<I>,
    b: usize,
    a: usize,
    na: usize,
    sa: usize,
    num_gt: usize,
) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
    let base = b * dist.stride(0) + a * dist.stride(2);
    let s1 = dist.stride(1);
    let l = f32::cast_from(dist[base]);
    let t = f32::cast_from(dist[base + s1]);
    let r = f32::cast_from(dist[base + 2 * s1]);
    let bt = f32::cast_from(dist[base + 3 * s1]);
    let ax = anchors[a];
    let ay = anchors[sa + a];
    let s = anchors[2 * sa + a];
    let g = clamp(i32::cast_from(gt_idx[b * na + a]), 0i32, num_gt as i32 - 1i32) as usize;
    let q = (b * num_gt + g) * 4;
    (l, t, r, bt, ax, ay, s, gt_boxes[q] / s, gt_boxes[q + 1] / s, gt_boxes[q + 2] / s, gt_boxes[q + 3] / s)
}

/// `|d·s/n − τ·s/n|` and its derivative w.r.t. `d` (`sign·s/n`, 0 at 0), ultralytics' operation order.
#[cube]
pub(crate) fn l1_term(d: f32, tau: f32, s: f32, n: f32) -> (f32, f32) {
    let diff = d * s / n - tau * s / n;
    let mut sign = f32::new(0.0);
    if diff > f32::new(0.0) {
        sign = f32::new(1.0);
    }
    if diff < f32::new(0.0) {
        sign = f32::new(-1.0);
    }
    (diff.abs(), sign * s / n)
}

/// Writes one anchor's gradient w.r.t. its raw distances `(l, t, r, b)` to `d_dist [B, 4, A]` (zeros where
/// `w = 0`): `∂/∂d [g_ciou·(1 − CIoU(p, q)) + g_abs·Σ_i |d_i·s/n_i − τ_i·s/n_i|]` with `g_ciou = k_ciou·w` and
/// `g_abs = k_l1·w / 4` (the L1 term is a mean over the four sides), the CIoU gradient from [`ciou_grads`]
/// with alpha recomputed by [`ciou_parts`]. Shared by [`bbox_loss_bwd_kernel`] and the loss branch's fused
/// anchor pass; `sa` as in [`anchor_inputs`].
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_box_grads<F: Float, I: Int>(
    dist: &Tensor<F>,
    anchors: &Tensor<f32>,
    gt_boxes: &Tensor<f32>,
    gt_idx: &Tensor<I>,
    d_dist: &mut Tensor<F>,
    b: usize,
    a: usize,
    na: usize,
    sa: usize,
    num_gt: usize,
    img_w: f32,
    img_h: f32,
    w: f32,
    k_ciou: f32,
    k_l1: f32,
) {
    let zero = f32::new(0.0);
    let mut dl = zero;
    let mut dt = zero;
    let mut dr = zero;
    let mut db = zero;
    if w != zero {
        let (l, t, r, bt, ax, ay, s, qx1, qy1, qx2, qy2) =
            anchor_inputs::<F, I>(dist, anchors, gt_boxes, gt_idx, b, a, na, sa, num_gt);
        let (px1, py1, px2, py2) = (ax - l, ay - t, ax + r, ay + bt);
        let (_ciou, alpha) = ciou_parts(px1, py1, px2, py2, qx1, qy1, qx2, qy2);
        let g_ciou = k_ciou * w;
        let g_abs = k_l1 * w / f32::new(4.0);
        let (gx1, gy1, gx2, gy2, _t1, _t2, _t3, _t4) =
            ciou_grads(px1, py1, px2, py2, qx1, qy1, qx2, qy2, alpha, g_ciou);
        let (_e0, d0) = l1_term(l, ax - qx1, s, img_w);
        let (_e1, d1) = l1_term(t, ay - qy1, s, img_h);
        let (_e2, d2) = l1_term(r, qx2 - ax, s, img_w);
        let (_e3, d3) = l1_term(bt, qy2 - ay, s, img_h);
        dl = -gx1 + g_abs * d0;
        dt = -gy1 + g_abs * d1;
        dr = gx2 + g_abs * d2;
        db = gy2 + g_abs * d3;
    }
    let o = b * 4 * na + a;
    d_dist[o] = F::cast_from(dl);
    d_dist[o + na] = F::cast_from(dt);
    d_dist[o + 2 * na] = F::cast_from(dr);
    d_dist[o + 3 * na] = F::cast_from(db);
}

/// `dist`, `anchors`, `gt_boxes`, `gt_idx`, `weight` → `partial [B, chunks, 3]` (f32 sums).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments, clippy::assign_op_pattern)]
pub fn bbox_loss_fwd_kernel<F: Float, I: Int>(
    dist: &Tensor<F>,
    anchors: &Tensor<f32>,
    gt_boxes: &Tensor<f32>,
    gt_idx: &Tensor<I>,
    weight: &Tensor<f32>,
    partial: &mut Tensor<f32>,
    num_anchors: u32,
    num_gt: u32,
    img_w: f32,
    img_h: f32,
    #[comptime] units: usize,
    #[comptime] per_unit: usize,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let tid = UNIT_POS_X as usize;
    let b = CUBE_POS_Y as usize;
    let na = num_anchors as usize;
    let mut box_sum = f32::new(0.0);
    let mut l1_sum = f32::new(0.0);
    let mut w_sum = f32::new(0.0);
    let first = CUBE_POS_X as usize * units * per_unit;
    for k in 0..per_unit {
        let a = first + k * units + tid;
        if a < na {
            let w = weight[b * na + a];
            if w != f32::new(0.0) {
                let (l, t, r, bt, ax, ay, s, qx1, qy1, qx2, qy2) =
                    anchor_inputs::<F, I>(dist, anchors, gt_boxes, gt_idx, b, a, na, na, num_gt as usize);
                let (ciou, _alpha) = ciou_parts(ax - l, ay - t, ax + r, ay + bt, qx1, qy1, qx2, qy2);
                let (e0, _d0) = l1_term(l, ax - qx1, s, img_w);
                let (e1, _d1) = l1_term(t, ay - qy1, s, img_h);
                let (e2, _d2) = l1_term(r, qx2 - ax, s, img_w);
                let (e3, _d3) = l1_term(bt, qy2 - ay, s, img_h);
                box_sum = box_sum + w * (f32::new(1.0) - ciou);
                l1_sum = l1_sum + w * ((e0 + e1 + e2 + e3) / f32::new(4.0));
                w_sum = w_sum + w;
            }
        }
    }
    let mut sh = SharedMemory::<f32>::new(units * 3);
    sh[tid] = box_sum;
    sh[units + tid] = l1_sum;
    sh[2 * units + tid] = w_sum;
    sync_cube();
    let mut half = (units / 2).runtime();
    while half > 0 {
        if tid < half {
            sh[tid] = sh[tid] + sh[tid + half];
            sh[units + tid] = sh[units + tid] + sh[units + tid + half];
            sh[2 * units + tid] = sh[2 * units + tid] + sh[2 * units + tid + half];
        }
        sync_cube();
        half /= 2;
    }
    if tid < 3 {
        partial[(b * CUBE_COUNT_X as usize + CUBE_POS_X as usize) * 3 + tid] = sh[tid * units];
    }
}

/// `dist`, `anchors`, `gt_boxes`, `gt_idx`, `weight`, `d_sums [3]` → `d_dist [B, 4, A]` (contiguous).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn bbox_loss_bwd_kernel<F: Float, I: Int>(
    dist: &Tensor<F>,
    anchors: &Tensor<f32>,
    gt_boxes: &Tensor<f32>,
    gt_idx: &Tensor<I>,
    weight: &Tensor<f32>,
    d_sums: &Tensor<f32>,
    d_dist: &mut Tensor<F>,
    num_anchors: u32,
    num_gt: u32,
    img_w: f32,
    img_h: f32,
    #[define(F, I)] _dtypes: [StorageType; 2],
) {
    let b = CUBE_POS_Y as usize;
    let na = num_anchors as usize;
    let a = CUBE_POS_X as usize * CUBE_DIM_X as usize + UNIT_POS_X as usize;
    if a < na {
        let w = weight[b * na + a];
        write_box_grads::<F, I>(
            dist,
            anchors,
            gt_boxes,
            gt_idx,
            d_dist,
            b,
            a,
            na,
            na,
            num_gt as usize,
            img_w,
            img_h,
            w,
            d_sums[0],
            d_sums[1],
        );
    }
}

/// `(B, chunks)`: the forward's partial layout `[B, chunks, 3]` for `A` anchors.
pub fn forward_split(b: usize, a: usize) -> (usize, usize) {
    (b, a.div_ceil(UNITS * PER_UNIT).max(1))
}

/// Shapes `(B, A, G)`, after checking the inputs (dtypes included).
fn check<R: CubeRuntime>(
    what: &str,
    dist: &CubeTensor<R>,
    anchors: &CubeTensor<R>,
    gt_boxes: &CubeTensor<R>,
    gt_idx: &CubeTensor<R>,
    weight: &CubeTensor<R>,
) -> (usize, usize, usize) {
    crate::cube_util::assert_tight(what, &[anchors, gt_boxes, gt_idx, weight]);
    super::check_shapes(
        dist.meta.shape(),
        anchors.meta.shape(),
        gt_boxes.meta.shape(),
        gt_idx.meta.shape(),
        weight.meta.shape(),
    );
    for (t, name) in [(anchors, "anchors"), (gt_boxes, "gt_boxes"), (weight, "weight")] {
        assert_eq!(t.dtype, DType::F32, "{what}: {name} must be F32");
    }
    let [b, _, a] = dist.meta.shape().dims::<3>();
    (b, a, gt_boxes.meta.shape()[1])
}

/// Launches [`bbox_loss_fwd_kernel`] into `partial` (f32, contiguous `[B, chunks, 3]` of [`forward_split`],
/// every element written). `dist` may be strided; the rest contiguous, `anchors`/`gt_boxes`/`weight` F32.
/// Requires `G ≥ 1` (with `G = 0` every weight is 0: the caller returns zeros without launching).
pub fn launch_bbox_loss_forward<R: CubeRuntime>(
    dist: &CubeTensor<R>,
    anchors: &CubeTensor<R>,
    gt_boxes: &CubeTensor<R>,
    gt_idx: &CubeTensor<R>,
    weight: &CubeTensor<R>,
    partial: &CubeTensor<R>,
    image: [f32; 2],
) {
    let (b, a, g) = check("launch_bbox_loss_forward", dist, anchors, gt_boxes, gt_idx, weight);
    crate::cube_util::assert_tight("launch_bbox_loss_forward", &[partial]);
    let (_, chunks) = forward_split(b, a);
    assert_eq!(partial.meta.shape().dims::<3>(), [b, chunks, 3], "launch_bbox_loss_forward: partial");
    assert_eq!(partial.dtype, DType::F32, "launch_bbox_loss_forward: partial dtype");
    assert!(g >= 1 && b * a > 0, "launch_bbox_loss_forward: needs G ≥ 1 and B·A > 0");
    // SAFETY: anchors are checked against `A`, images are the grid's y extent `B`; `dist` is read through its
    // strides inside its shape; GT slots are clamped to `[0, G)`; partials at `(b·chunks + x)·3 + i`.
    unsafe {
        bbox_loss_fwd_kernel::launch_unchecked::<R>(
            &dist.client,
            CubeCount::Static(chunks as u32, b as u32, 1),
            CubeDim::new_1d(UNITS as u32),
            dist.clone().into_tensor_arg(),
            anchors.clone().into_tensor_arg(),
            gt_boxes.clone().into_tensor_arg(),
            gt_idx.clone().into_tensor_arg(),
            weight.clone().into_tensor_arg(),
            partial.clone().into_tensor_arg(),
            a as u32,
            g as u32,
            image[0],
            image[1],
            UNITS,
            PER_UNIT,
            [dist.dtype.into(), gt_idx.dtype.into()],
        )
    }
}

/// Launches [`bbox_loss_bwd_kernel`] into `d_dist` (contiguous `[B, 4, A]`, dtype of `dist`, every element
/// written); `d_sums` contiguous F32 `[3]`. Same input requirements as [`launch_bbox_loss_forward`].
#[allow(clippy::too_many_arguments)]
pub fn launch_bbox_loss_backward<R: CubeRuntime>(
    dist: &CubeTensor<R>,
    anchors: &CubeTensor<R>,
    gt_boxes: &CubeTensor<R>,
    gt_idx: &CubeTensor<R>,
    weight: &CubeTensor<R>,
    d_sums: &CubeTensor<R>,
    d_dist: &CubeTensor<R>,
    image: [f32; 2],
) {
    let (b, a, g) = check("launch_bbox_loss_backward", dist, anchors, gt_boxes, gt_idx, weight);
    crate::cube_util::assert_tight("launch_bbox_loss_backward", &[d_sums, d_dist]);
    assert_eq!(d_dist.meta.shape().dims::<3>(), [b, 4, a], "launch_bbox_loss_backward: d_dist");
    assert_eq!(d_dist.dtype, dist.dtype, "launch_bbox_loss_backward: d_dist dtype");
    assert_eq!(d_sums.meta.shape().dims::<1>(), [3], "launch_bbox_loss_backward: d_sums");
    assert_eq!(d_sums.dtype, DType::F32, "launch_bbox_loss_backward: d_sums dtype");
    assert!(g >= 1 && b * a > 0, "launch_bbox_loss_backward: needs G ≥ 1 and B·A > 0");
    // SAFETY: as the forward; `d_dist` written at `b·4·A + k·A + a` inside `[B, 4, A]`.
    unsafe {
        bbox_loss_bwd_kernel::launch_unchecked::<R>(
            &dist.client,
            CubeCount::Static(a.div_ceil(UNITS) as u32, b as u32, 1),
            CubeDim::new_1d(UNITS as u32),
            dist.clone().into_tensor_arg(),
            anchors.clone().into_tensor_arg(),
            gt_boxes.clone().into_tensor_arg(),
            gt_idx.clone().into_tensor_arg(),
            weight.clone().into_tensor_arg(),
            d_sums.clone().into_tensor_arg(),
            d_dist.clone().into_tensor_arg(),
            a as u32,
            g as u32,
            image[0],
            image[1],
            [dist.dtype.into(), gt_idx.dtype.into()],
        )
    }
}

/// One representative specialisation of each kernel (f32 storage) for the source snapshots of
/// [`crate::snapshot`] (defined, never launched).
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, I32, R, S, T};
    vec![
        kernel_def!(
            "bbox_loss_forward_f32",
            bbox_loss_fwd_kernel::BboxLossFwdKernel<R>,
            units = UNITS,
            [T, T, T, T, T, T, S, S, S, S, UNITS, PER_UNIT, [F32, I32]]
        ),
        kernel_def!(
            "bbox_loss_backward_f32",
            bbox_loss_bwd_kernel::BboxLossBwdKernel<R>,
            units = UNITS,
            [T, T, T, T, T, T, T, S, S, S, S, [F32, I32]]
        ),
    ]
}
