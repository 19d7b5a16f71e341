//! Detect-head box decoding as a Burn op: raw LTRB distances + anchor grid → boxes in pixels
//! (ultralytics `dist2bbox(distance, anchor_points, xywh, dim=1) * stride`), with a backward pass w.r.t.
//! the distances.
//!
//! - [`detect_decode`]: `dist [B, 4, A]` (channels `l, t, r, b` in grid units), `anchors [3, A]`
//!   (rows: anchor x, anchor y, stride) → `boxes [B, 4, A]` in pixels, [`BoxFormat::Xyxy`] or
//!   [`BoxFormat::Xywh`]. Differentiable w.r.t. `dist` on `Autodiff` backends; the anchors are constants.
//! - [`anchor_grid`] / [`anchor_grid_data`]: the `[3, A]` anchor tensor for a list of feature-map sizes and
//!   strides (ultralytics `make_anchors(feats, strides, 0.5)`, anchor points and stride tensor stacked).
//! - [`DetectDecodeBackend`]: the backend extension trait (CubeCL kernels on `CubeBackend`, custom op on
//!   `Fusion`, backward step on `Autodiff`, plain tensor ops elsewhere).

mod autodiff;
pub(crate) mod cube;
mod fusion;
pub(crate) mod kernels;
mod reference;

#[cfg(test)]
mod tests;

pub use reference::{reference_backward, reference_forward};

use burn::tensor::{backend::Backend, ops::FloatTensor, DType, Tensor, TensorData, TensorPrimitive};

/// Output box layout of [`detect_decode`] (channel order along dim 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoxFormat {
    /// `(x1, y1, x2, y2)`: `x1 = (ax − l)·s`, `y1 = (ay − t)·s`, `x2 = (ax + r)·s`, `y2 = (ay + b)·s`.
    Xyxy,
    /// `(cx, cy, w, h)`: `cx = ((ax − l) + (ax + r))/2 · s`, `w = ((ax + r) − (ax − l)) · s` (and y alike).
    Xywh,
}

impl BoxFormat {
    /// `true` for [`BoxFormat::Xywh`] (the kernels' comptime flag, ultralytics' `xywh` argument).
    pub fn is_xywh(self) -> bool {
        matches!(self, BoxFormat::Xywh)
    }
}

/// Decodes raw distances into boxes in pixels:
/// `dist2bbox(dist, anchor_points, xywh, dim=1) * stride` of ultralytics.
///
/// - `dist`: `[B, 4, A]`, channels `(l, t, r, b)` in grid units (any float dtype);
/// - `anchors`: `[3, A]` from [`anchor_grid`] (rows: anchor x, anchor y — cell centres `i + 0.5` — and the
///   stride of each anchor); F32 is the native dtype (others are cast);
/// - returns `[B, 4, A]` in `dist`'s dtype, `(x1, y1, x2, y2)` or `(cx, cy, w, h)` by `format`.
///
/// Differentiable w.r.t. `dist` (the anchors get no gradient).
pub fn detect_decode<B: DetectDecodeBackend>(
    dist: Tensor<B, 3>,
    anchors: Tensor<B, 2>,
    format: BoxFormat,
) -> Tensor<B, 3> {
    let [b, c, a] = dist.dims();
    let [r, a2] = anchors.dims();
    assert!(
        c == 4 && r == 3 && a == a2,
        "detect_decode: expected dist [B, 4, A] and anchors [3, A], got {:?} and {:?}",
        [b, c, a],
        [r, a2]
    );
    let out = B::detect_decode_forward(dist.into_primitive().tensor(), anchors.into_primitive().tensor(), format);
    Tensor::from_primitive(TensorPrimitive::Float(out))
}

/// Host data of the `[3, A]` anchor grid (f32) for feature maps of sizes `(h, w)` with the given strides,
/// in ultralytics `make_anchors` order: level by level, rows first, x fastest; anchor `(x + 0.5, y + 0.5)`.
/// Row 0: anchor x, row 1: anchor y, row 2: stride.
pub fn anchor_grid_data(sizes: &[(usize, usize)], strides: &[f32]) -> TensorData {
    assert_eq!(sizes.len(), strides.len(), "anchor_grid: one stride per feature map");
    let total: usize = sizes.iter().map(|(h, w)| h * w).sum();
    let mut v = vec![0.0f32; 3 * total];
    let mut i = 0;
    for (&(h, w), &s) in sizes.iter().zip(strides) {
        for y in 0..h {
            for x in 0..w {
                v[i] = x as f32 + 0.5;
                v[total + i] = y as f32 + 0.5;
                v[2 * total + i] = s;
                i += 1;
            }
        }
    }
    TensorData::new(v, [3, total])
}

/// The `[3, A]` anchor grid (F32) on `device`, see [`anchor_grid_data`]. Build it once per input size and
/// keep it (e.g. sizes `[(80, 80), (40, 40), (20, 20)]`, strides `[8., 16., 32.]` for a 640×640 input:
/// `A = 8400`).
pub fn anchor_grid<B: Backend>(sizes: &[(usize, usize)], strides: &[f32], device: &B::Device) -> Tensor<B, 2> {
    Tensor::from_data(anchor_grid_data(sizes, strides), (device, DType::F32))
}

/// Backend extension: detect-head box decoding and its gradient w.r.t. the distances.
pub trait DetectDecodeBackend: Backend {
    /// `boxes = dist2bbox(dist, anchors[0..2], xywh, dim=1) · anchors[2]` (see [`super::BoxFormat`]).
    fn detect_decode_forward(
        dist: FloatTensor<Self>,
        anchors: FloatTensor<Self>,
        format: BoxFormat,
    ) -> FloatTensor<Self> {
        reference_forward::<Self>(dist, anchors, format)
    }

    /// `d dist` (`[B, 4, A]`, dtype of `d_boxes`) from the upstream gradient `d_boxes` (`[B, 4, A]`).
    fn detect_decode_backward(
        anchors: FloatTensor<Self>,
        d_boxes: FloatTensor<Self>,
        format: BoxFormat,
    ) -> FloatTensor<Self> {
        reference_backward::<Self>(anchors, d_boxes, format)
    }
}

impl DetectDecodeBackend for burn::backend::Flex {}
