//! Detect-decode forward kernel.
//!
//! # Math (ultralytics `dist2bbox(distance, anchor_points, xywh, dim=1) * stride`)
//!
//! For anchor `a` with centre `(ax, ay)` (grid units, cell + 0.5) and stride `s`, and raw distances
//! `(l, t, r, b)`:
//!
//! ```text
//! x1 = ax − l    y1 = ay − t    x2 = ax + r    y2 = ay + b
//! xyxy: (x1·s, y1·s, x2·s, y2·s)
//! xywh: ((x1 + x2)/2 · s, (y1 + y2)/2 · s, (x2 − x1)·s, (y2 − y1)·s)
//! ```
//!
//! (same operation order as ultralytics, in f32 whatever the storage dtype).
//!
//! # Work split
//!
//! 1-D grid over `B·A`; unit `i` = `(b, a) = (i / A, i % A)` reads the 4 channels at `(b·4 + c)·A + a`
//! (coalesced across units) and writes the 4 output channels.
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::UNITS;

/// `dist [B, 4, A]` (any strides: read in place), `anchors [3, A]` (f32) → `boxes [B, 4, A]` (contiguous);
/// `total = B·A`.
#[cube(launch_unchecked)]
pub fn decode_fwd_kernel<F: Float>(
    dist: &Tensor<F>,
    anchors: &Tensor<f32>,
    boxes: &mut Tensor<F>,
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
        let d0 = b * dist.stride(0) + a * dist.stride(2);
        let ds = dist.stride(1);
        let l = f32::cast_from(dist[d0]);
        let t = f32::cast_from(dist[d0 + ds]);
        let r = f32::cast_from(dist[d0 + 2 * ds]);
        let bt = f32::cast_from(dist[d0 + 3 * ds]);
        let ax = anchors[a];
        let ay = anchors[na + a];
        let s = anchors[2 * na + a];
        let x1 = ax - l;
        let y1 = ay - t;
        let x2 = ax + r;
        let y2 = ay + bt;
        if xywh {
            let half = f32::new(0.5);
            boxes[base] = F::cast_from((x1 + x2) * half * s);
            boxes[base + na] = F::cast_from((y1 + y2) * half * s);
            boxes[base + 2 * na] = F::cast_from((x2 - x1) * s);
            boxes[base + 3 * na] = F::cast_from((y2 - y1) * s);
        } else {
            boxes[base] = F::cast_from(x1 * s);
            boxes[base + na] = F::cast_from(y1 * s);
            boxes[base + 2 * na] = F::cast_from(x2 * s);
            boxes[base + 3 * na] = F::cast_from(y2 * s);
        }
    }
}

/// Launches [`decode_fwd_kernel`]: `dist` `[B, 4, A]` (any strides), `anchors` contiguous f32 `[3, A]`,
/// `boxes` contiguous `[B, 4, A]` of `dist`'s dtype (every element written). No launch when `B·A = 0`.
pub fn launch_decode_forward<R: CubeRuntime>(
    dist: &CubeTensor<R>,
    anchors: &CubeTensor<R>,
    boxes: &CubeTensor<R>,
    xywh: bool,
) {
    crate::cube_util::assert_tight("launch_decode_forward", &[anchors, boxes]);
    let [b, _, a] = dist.meta.shape().dims::<3>();
    let total = b * a;
    if total == 0 {
        return;
    }
    let client = dist.client.clone();
    let cube_dim = CubeDim::new_1d(UNITS);
    let cube_count = cubecl::calculate_cube_count_elemwise(&client, total, cube_dim);
    // SAFETY: every access is guarded by `i < total = B·A`; `dist` is read through its strides inside its
    // shape, the other tensors hold `4·B·A` resp. `3·A` elements.
    unsafe {
        decode_fwd_kernel::launch_unchecked::<R>(
            &client,
            cube_count,
            cube_dim,
            dist.clone().into_tensor_arg(),
            anchors.clone().into_tensor_arg(),
            boxes.clone().into_tensor_arg(),
            a as u32,
            total as u32,
            xywh,
            dist.dtype.into(),
        )
    }
}
