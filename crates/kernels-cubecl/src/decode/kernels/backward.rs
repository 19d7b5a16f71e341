//! Detect-decode backward kernel (gradient w.r.t. the distances; the anchors are constants).
//!
//! # Math
//!
//! The forward is linear in `(l, t, r, b)`. With upstream gradients `g` of the 4 output channels and
//! stride `s`:
//!
//! ```text
//! xyxy: dl = −s·g_x1    dt = −s·g_y1    dr = s·g_x2    db = s·g_y2
//! xywh: dl = s·g_w − s·g_cx/2    dt = s·g_h − s·g_cy/2    dr = s·g_w + s·g_cx/2    db = s·g_h + s·g_cy/2
//! ```
//!
//! # Work split
//!
//! As the forward: one unit per `(b, a)`, 1-D grid over `B·A`.
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::UNITS;

/// `anchors [3, A]` (f32), `d_boxes [B, 4, A]` → `d_dist [B, 4, A]`; `total = B·A`.
#[cube(launch_unchecked)]
pub fn decode_bwd_kernel<F: Float>(
    anchors: &Tensor<f32>,
    d_boxes: &Tensor<F>,
    d_dist: &mut Tensor<F>,
    num_anchors: u32,
    total: u32,
    #[comptime] xywh: bool,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i < total as usize {
        let na = num_anchors as usize;
        let b = i / na;
        let a = i % na;
        let base = b * 4 * na + a;
        let s = anchors[2 * na + a];
        let g0 = f32::cast_from(d_boxes[base]) * s;
        let g1 = f32::cast_from(d_boxes[base + na]) * s;
        let g2 = f32::cast_from(d_boxes[base + 2 * na]) * s;
        let g3 = f32::cast_from(d_boxes[base + 3 * na]) * s;
        if xywh {
            let h0 = g0 * f32::new(0.5);
            let h1 = g1 * f32::new(0.5);
            d_dist[base] = F::cast_from(g2 - h0);
            d_dist[base + na] = F::cast_from(g3 - h1);
            d_dist[base + 2 * na] = F::cast_from(g2 + h0);
            d_dist[base + 3 * na] = F::cast_from(g3 + h1);
        } else {
            d_dist[base] = F::cast_from(-g0);
            d_dist[base + na] = F::cast_from(-g1);
            d_dist[base + 2 * na] = F::cast_from(g2);
            d_dist[base + 3 * na] = F::cast_from(g3);
        }
    }
}

/// Launches [`decode_bwd_kernel`]: `anchors` contiguous f32 `[3, A]`, `d_boxes` and `d_dist` contiguous
/// `[B, 4, A]` of one dtype (every element of `d_dist` written). No launch when `B·A = 0`.
pub fn launch_decode_backward<R: CubeRuntime>(
    anchors: &CubeTensor<R>,
    d_boxes: &CubeTensor<R>,
    d_dist: &CubeTensor<R>,
    xywh: bool,
) {
    crate::cube_util::assert_tight("launch_decode_backward", &[anchors, d_boxes, d_dist]);
    let [b, _, a] = d_boxes.meta.shape().dims::<3>();
    let total = b * a;
    if total == 0 {
        return;
    }
    let client = d_boxes.client.clone();
    let cube_dim = CubeDim::new_1d(UNITS);
    let cube_count = cubecl::calculate_cube_count_elemwise(&client, total, cube_dim);
    // SAFETY: every access is guarded by `i < total = B·A`; the tensors hold `4·B·A` resp. `3·A` elements.
    unsafe {
        decode_bwd_kernel::launch_unchecked::<R>(
            &client,
            cube_count,
            cube_dim,
            anchors.clone().into_tensor_arg(),
            d_boxes.clone().into_tensor_arg(),
            d_dist.clone().into_tensor_arg(),
            a as u32,
            total as u32,
            xywh,
            d_boxes.dtype.into(),
        )
    }
}
