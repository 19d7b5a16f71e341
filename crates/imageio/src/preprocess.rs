//! Ultralytics-exact image preprocessing: letterbox (resize + pad), HWC→CHW, /255, and the inverse box mapping.
//!
//! Ultralytics equivalents (8.4.190):
//!
//! * [`Letterbox`] is `ultralytics.data.augment.LetterBox(new_shape, auto, scale_fill=False, scaleup, center,
//!   stride, padding_value=114, interpolation=cv2.INTER_LINEAR)`; [`Letterbox::predict`] is the instance that
//!   `BasePredictor.pre_transform` builds for a single image (or a batch of equally sized images) with a PyTorch
//!   model: `auto=True` (minimum rectangle, padding only up to a multiple of the stride), `scaleup=True`,
//!   `center=True`, pad value 114.
//! * [`Letterbox::apply`] is `pre_transform` + `BasePredictor.preprocess` for one image: letterbox the uint8 image,
//!   HWC→CHW, BGR→RGB (our input is already RGB, so nothing to flip), `.float().div_(255)` (an IEEE f32 division, as
//!   torch does on the CPU).
//! * [`Letterbox::apply_batch`] is `pre_transform` on a list: `auto` is used only when all images have the same
//!   shape (`same_shapes`), otherwise every image is padded to the full `new_shape` so the batch can be stacked.
//! * [`resize_linear`] is `cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR)` on an 8-bit 3-channel image,
//!   bit-exact (OpenCV's fixed-point path, see the function docs).
//! * [`LetterboxInfo::to_original`] is `ultralytics.utils.ops.scale_boxes(img1_shape, boxes, img0_shape)` (the call
//!   in `DetectionPredictor.postprocess`, `ratio_pad=None`) followed by its `clip_boxes`, in f32 like the torch
//!   tensors.
//!
//! All shapes are `[height, width]`, as in ultralytics.

pub use image::{Rgb, RgbImage};

/// Ultralytics' letterbox padding value (`LetterBox(padding_value=114)`).
pub const PAD_VALUE: u8 = 114;

/// OpenCV's `INTER_RESIZE_COEF_BITS`: the interpolation weights of the 8-bit bilinear resize are 11-bit fixed point.
const COEF_BITS: u32 = 11;
const COEF_SCALE: f32 = (1 << COEF_BITS) as f32;

/// Letterbox configuration; ultralytics `LetterBox` (without `scale_fill`, which predict never uses for `.pt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Letterbox {
    /// Target shape `[h, w]` (`LetterBox.new_shape`; the predictor passes `imgsz`).
    pub new_shape: [usize; 2],
    /// Model stride; with `auto` the padding is reduced modulo this (`LetterBox.stride`, 32 for YOLO26).
    pub stride: usize,
    /// Minimum rectangle: pad only up to a multiple of `stride` (`LetterBox.auto`).
    pub auto: bool,
    /// Allow enlarging small images (`LetterBox.scaleup`); `false` only ever shrinks.
    pub scaleup: bool,
    /// Centre the image, splitting the padding `round(d - 0.1)` / `round(d + 0.1)` (`LetterBox.center`); `false`
    /// puts it in the top-left corner and pads right/bottom only.
    pub center: bool,
    /// Value of the padded pixels in every channel (`LetterBox.padding_value`, 114).
    pub pad_value: u8,
}

/// Geometry of one letterboxed image; what is needed to map network-input coordinates back to the original image.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LetterboxInfo {
    /// Scale gain `r = min(new_h / h, new_w / w)` (capped at 1 when `!scaleup`), as f32. (The resized image is
    /// exactly `new_unpad`, so the per-axis gains `new_unpad / orig` may differ from `r` in the last digits.)
    pub ratio: f32,
    /// Padding `[left, top]` in pixels (integers stored as f32).
    pub pad: [f32; 2],
    /// Original image shape `[h, w]`.
    pub orig: [usize; 2],
    /// Letterboxed (network input) shape `[h, w]`.
    pub shape: [usize; 2],
    /// Shape `[h, w]` of the resized image inside the padding (ultralytics `new_unpad`, which is `(w, h)` there).
    pub new_unpad: [usize; 2],
    /// `true` when the letterbox was centred and not limited by `scaleup=false`, i.e. when ultralytics'
    /// `scale_boxes(shape, boxes, orig)` (which re-derives gain and padding from the two shapes) is the inverse that
    /// predict uses. [`LetterboxInfo::to_original`] then reproduces `scale_boxes` exactly; otherwise it inverts the
    /// actual letterbox parameters (the `ratio_pad` form of `scale_boxes`).
    pub scale_boxes_compatible: bool,
}

/// A letterboxed batch: `data` is `[n, 3, h, w]` f32 RGB in `[0, 1]`, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct LetterboxBatch {
    /// Pixel data, `n * 3 * h * w` values.
    pub data: Vec<f32>,
    /// `[n, 3, h, w]`.
    pub shape: [usize; 4],
    /// Per-image geometry, in input order.
    pub infos: Vec<LetterboxInfo>,
}

/// Python 3 `round()` of a float: to nearest, ties to even (an f64 → integer conversion).
fn py_round(x: f64) -> i64 {
    x.round_ties_even() as i64
}

impl Letterbox {
    /// The letterbox of ultralytics predict for a square `imgsz` (`LetterBox(imgsz, auto=True, stride=32)`).
    pub fn predict(imgsz: usize) -> Self {
        Self::predict_hw([imgsz, imgsz])
    }

    /// The letterbox of ultralytics predict for a `[h, w]` `imgsz` (`auto=True`, stride 32, pad 114).
    pub fn predict_hw(new_shape: [usize; 2]) -> Self {
        Self { new_shape, stride: 32, auto: true, scaleup: true, center: true, pad_value: PAD_VALUE }
    }

    /// Fixed-size letterbox (`auto=False`: always pad to the full `new_shape`), as used for batches of images with
    /// different shapes and for exported fixed-shape models.
    pub fn fixed(new_shape: [usize; 2]) -> Self {
        Self { auto: false, ..Self::predict_hw(new_shape) }
    }

    /// The letterbox geometry for an image of shape `orig = [h, w]` without touching pixels
    /// (ultralytics `LetterBox.get_params`). Panics on an empty image or target shape.
    pub fn info(&self, orig: [usize; 2]) -> LetterboxInfo {
        let [h, w] = orig;
        let [nh, nw] = self.new_shape;
        assert!(h > 0 && w > 0, "letterbox: empty image {orig:?}");
        assert!(nh > 0 && nw > 0, "letterbox: empty new_shape {:?}", self.new_shape);
        // r = min(new_shape[0] / shape[0], new_shape[1] / shape[1]); if not scaleup: r = min(r, 1.0)
        let r_full = (nh as f64 / h as f64).min(nw as f64 / w as f64);
        let r = if self.scaleup { r_full } else { r_full.min(1.0) };
        // new_unpad = max(round(shape[1] * r), 1), max(round(shape[0] * r), 1)
        let uw = py_round(w as f64 * r).max(1) as usize;
        let uh = py_round(h as f64 * r).max(1) as usize;
        // dw, dh = new_shape[1] - new_unpad[0], new_shape[0] - new_unpad[1] (may be negative: never here since
        // r <= new / old, but keep the Python semantics with i64 and a floor modulo)
        let mut dw = nw as i64 - uw as i64;
        let mut dh = nh as i64 - uh as i64;
        if self.auto {
            assert!(self.stride > 0, "letterbox: auto needs stride > 0");
            dw = dw.rem_euclid(self.stride as i64); // np.mod
            dh = dh.rem_euclid(self.stride as i64);
        }
        let (top, bottom, left, right) = if self.center {
            let (dwf, dhf) = (dw as f64 / 2.0, dh as f64 / 2.0);
            (py_round(dhf - 0.1), py_round(dhf + 0.1), py_round(dwf - 0.1), py_round(dwf + 0.1))
        } else {
            // top, bottom = 0, round(dh + 0.1)  (dh not halved)
            (0, py_round(dh as f64 + 0.1), 0, py_round(dw as f64 + 0.1))
        };
        let (top, bottom, left, right) = (top.max(0), bottom.max(0), left.max(0), right.max(0));
        LetterboxInfo {
            ratio: r as f32,
            pad: [left as f32, top as f32],
            orig,
            shape: [uh + (top + bottom) as usize, uw + (left + right) as usize],
            new_unpad: [uh, uw],
            scale_boxes_compatible: self.center && r == r_full,
        }
    }

    /// Letterbox `img` as uint8 RGB (ultralytics `LetterBox.__call__(image=...)`: `cv2.resize` with
    /// `INTER_LINEAR` when the size changes, then `cv2.copyMakeBorder(..., BORDER_CONSTANT, value=(114,)*3)`).
    pub fn apply_u8(&self, img: &RgbImage) -> (RgbImage, LetterboxInfo) {
        let info = self.info([img.height() as usize, img.width() as usize]);
        let [uh, uw] = info.new_unpad;
        let resized;
        let src = if [uh, uw] != info.orig {
            resized = resize_linear(img, uw as u32, uh as u32);
            &resized
        } else {
            img
        };
        let [oh, ow] = info.shape;
        let (left, top) = (info.pad[0] as usize, info.pad[1] as usize);
        let mut out = RgbImage::from_pixel(ow as u32, oh as u32, Rgb([self.pad_value; 3]));
        let row = uw * 3;
        let (sbuf, dbuf) = (src.as_raw(), &mut *out);
        for y in 0..uh {
            let d = ((top + y) * ow + left) * 3;
            dbuf[d..d + row].copy_from_slice(&sbuf[y * row..(y + 1) * row]);
        }
        (out, info)
    }

    /// Letterbox `img` into the network input: `[3, h, w]` f32 RGB, `value / 255` (ultralytics `pre_transform` +
    /// `preprocess` for one image; `info.shape` gives `h, w`).
    pub fn apply(&self, img: &RgbImage) -> (Vec<f32>, LetterboxInfo) {
        let (lb, info) = self.apply_u8(img);
        (to_chw_f32(&lb), info)
    }

    /// Letterbox a batch to one common shape (ultralytics `BasePredictor.pre_transform` + `preprocess` on a list):
    /// `auto` is kept only when every image has the same shape (`same_shapes`), otherwise all are padded to the full
    /// `new_shape`. Panics on an empty batch.
    pub fn apply_batch(&self, imgs: &[&RgbImage]) -> LetterboxBatch {
        assert!(!imgs.is_empty(), "letterbox: empty batch");
        let same_shapes = imgs.iter().all(|im| im.dimensions() == imgs[0].dimensions());
        let lb = Letterbox { auto: self.auto && same_shapes, ..*self };
        let mut data = Vec::new();
        let mut infos = Vec::with_capacity(imgs.len());
        for im in imgs {
            let (chw, info) = lb.apply(im);
            if let Some(first) = infos.first().map(|i: &LetterboxInfo| i.shape) {
                assert_eq!(first, info.shape, "letterbox: batch shapes differ");
            }
            data.extend_from_slice(&chw);
            infos.push(info);
        }
        let [h, w] = infos[0].shape;
        LetterboxBatch { data, shape: [imgs.len(), 3, h, w], infos }
    }
}

/// [`Letterbox::apply_batch`] with the predict letterbox of a square `imgsz` (stride 32).
pub fn letterbox_batch(imgs: &[&RgbImage], imgsz: usize) -> LetterboxBatch {
    Letterbox::predict(imgsz).apply_batch(imgs)
}

impl LetterboxInfo {
    /// Per-axis gains `(gain_x, gain_y)` and padding `(pad_x, pad_y)` that [`Self::to_original`] undoes.
    ///
    /// When [`Self::scale_boxes_compatible`]: exactly `scale_boxes` with `ratio_pad=None`:
    /// `gain = min(img1_h / img0_h, img1_w / img0_w)`, `new_h, new_w = max(round(x * gain), 1)`,
    /// `gain_y, gain_x = new_h / img0_h, new_w / img0_w`, `pad_x = round((img1_w - new_w) / 2 - 0.1)` (and `pad_y`).
    /// Otherwise the actual letterbox parameters: `new_unpad / orig` and `(left, top)`.
    pub fn box_transform(&self) -> ([f64; 2], [f64; 2]) {
        let [h0, w0] = [self.orig[0] as f64, self.orig[1] as f64];
        if self.scale_boxes_compatible {
            let [h1, w1] = [self.shape[0] as f64, self.shape[1] as f64];
            let gain = (h1 / h0).min(w1 / w0);
            let new_h = py_round(h0 * gain).max(1) as f64;
            let new_w = py_round(w0 * gain).max(1) as f64;
            let pad_x = py_round((w1 - new_w) / 2.0 - 0.1) as f64;
            let pad_y = py_round((h1 - new_h) / 2.0 - 0.1) as f64;
            ([new_w / w0, new_h / h0], [pad_x, pad_y])
        } else {
            let [uh, uw] = [self.new_unpad[0] as f64, self.new_unpad[1] as f64];
            ([uw / w0, uh / h0], [self.pad[0] as f64, self.pad[1] as f64])
        }
    }

    /// Map an `xyxy` box from network-input pixels to original-image pixels and clip it to the image (ultralytics
    /// `scale_boxes(img1_shape, boxes, img0_shape)` + `clip_boxes`, as `DetectionPredictor.postprocess` does; f32
    /// arithmetic like the CPU torch tensors: `(v - pad) / gain`, then `clamp(0, w)` / `clamp(0, h)`; NaN stays NaN).
    pub fn to_original(&self, xyxy: [f32; 4]) -> [f32; 4] {
        let ([gx, gy], [px, py]) = self.box_transform();
        let (gx, gy, px, py) = (gx as f32, gy as f32, px as f32, py as f32);
        let (w, h) = (self.orig[1] as f32, self.orig[0] as f32);
        let clamp = |v: f32, hi: f32| if v.is_nan() { v } else { v.max(0.0).min(hi) };
        [
            clamp((xyxy[0] - px) / gx, w),
            clamp((xyxy[1] - py) / gy, h),
            clamp((xyxy[2] - px) / gx, w),
            clamp((xyxy[3] - py) / gy, h),
        ]
    }
}

/// `[3, h, w]` f32 planes of an RGB image divided by 255 (ultralytics `im.permute(0, 3, 1, 2)`, BGR→RGB flip,
/// `.float().div_(255)`; the flip is a no-op for an RGB input).
pub fn to_chw_f32(img: &RgbImage) -> Vec<f32> {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let n = w * h;
    let mut out = vec![0f32; 3 * n];
    for (i, px) in img.as_raw().chunks_exact(3).enumerate() {
        out[i] = px[0] as f32 / 255.0;
        out[n + i] = px[1] as f32 / 255.0;
        out[2 * n + i] = px[2] as f32 / 255.0;
    }
    out
}

/// Read an image file as ultralytics' `imread` does (`cv2.imdecode(..., cv2.IMREAD_COLOR)`), in RGB order:
/// [`crate::read`].
pub fn load_rgb(path: impl AsRef<std::path::Path>) -> Result<RgbImage, crate::DecodeError> {
    crate::read(path)
}

/// One output coordinate of OpenCV's bilinear resize: source index, fractional part (f32, as OpenCV computes it).
/// `fx = (float)((dx + 0.5) * scale - 0.5); sx = cvFloor(fx); fx -= sx;` with `scale = 1. / ((double)dst / src)`.
fn cv_linear_coord(d: usize, scale: f64) -> (i64, f32) {
    let f = ((d as f64 + 0.5) * scale - 0.5) as f32;
    let s = f.floor() as i64;
    (s, f - s as f32)
}

/// `saturate_cast<short>(cbuf[k] * INTER_RESIZE_COEF_SCALE)`: f32 product, `cvRound` (nearest, ties to even).
fn cv_coef_pair(f: f32) -> (i32, i32) {
    (((1.0f32 - f) * COEF_SCALE).round_ties_even() as i32, (f * COEF_SCALE).round_ties_even() as i32)
}

/// OpenCV `cv2.resize(src, (dst_w, dst_h), interpolation=cv2.INTER_LINEAR)` for 8-bit 3-channel images, bit-exact
/// (checked against opencv-python 5.1.0; the generic fixed-point path is unchanged since OpenCV 4.x).
///
/// OpenCV's uint8 `INTER_LINEAR` (not `INTER_LINEAR_EXACT`, which uses a different fixed-point scheme) is a separable
/// fixed-point bilinear filter with half-pixel centres:
///
/// * coordinates: `scale = 1 / (dst / src)` in f64, `f = (float)((d + 0.5) * scale - 0.5)`, `s = floor(f)`,
///   `f -= s`; weights `round_half_even((1 - f) * 2048)`, `round_half_even(f * 2048)` (11-bit, f32 products);
/// * horizontal pass (exact i32): `D = S[sx] * a0 + S[sx + 1] * a1`, with `sx < 0` → `sx = 0, f = 0` and
///   `sx >= src_w - 1` → `sx = src_w - 1, f = 0` (border replicate);
/// * vertical pass: rows `clamp(sy, 0, h - 1)` and `clamp(sy + 1, 0, h - 1)` (the weights are *not* reset at the
///   border), then OpenCV's `VResizeLinearVec_32s8u` arithmetic (the scalar tail uses the same formula):
///   `((((b0 * (D0 >> 4)) >> 16) + ((b1 * (D1 >> 4)) >> 16) + 2) >> 2`, saturated to u8.
///
/// A 2x downscale in both axes is dispatched by OpenCV to `INTER_AREA`'s fast path (`(a + b + c + d + 2) >> 2`),
/// which equals the formula above for weights 1024/1024, so no special case is needed. IPP is not used by OpenCV for
/// 8-bit `INTER_LINEAR` (it is "not exact"). Returns a clone when the size does not change.
pub fn resize_linear(img: &RgbImage, dst_w: u32, dst_h: u32) -> RgbImage {
    let (sw, sh) = (img.width() as usize, img.height() as usize);
    let (dw, dh) = (dst_w as usize, dst_h as usize);
    if (sw, sh) == (dw, dh) {
        return img.clone();
    }
    let data = resize_linear_u8(img.as_raw(), sw, sh, 3, dw, dh);
    RgbImage::from_raw(dst_w, dst_h, data).expect("resize buffer size")
}

/// [`resize_linear`] on a raw interleaved `u8` buffer with `cn` channels (`src.len() == sw * sh * cn`): the same
/// `cv2.resize(INTER_LINEAR)` arithmetic (see [`resize_linear`]). 3 channels take a specialised path (flat tap table,
/// a vertical pass the compiler vectorises, AVX2 when the CPU has it), other channel counts the generic one; both
/// give the same bytes. Panics on an empty size or a buffer of the wrong length.
pub fn resize_linear_u8(src: &[u8], sw: usize, sh: usize, cn: usize, dw: usize, dh: usize) -> Vec<u8> {
    assert!(sw > 0 && sh > 0 && dw > 0 && dh > 0 && cn > 0, "resize: empty size");
    assert_eq!(src.len(), sw * sh * cn, "resize: buffer size");
    let (xtab, ytab) = linear_tabs(sw, sh, cn, dw, dh);
    if cn == 3 {
        resize3_dispatch(src, sw * 3, &xtab, &ytab, dw * 3)
    } else {
        resize_generic(src, sw * cn, cn, &xtab, &ytab, dw * cn)
    }
}

/// One output column: byte offsets of the two source pixels and their 11-bit weights.
#[derive(Clone, Copy)]
struct XTap {
    o0: usize,
    o1: usize,
    a0: i32,
    a1: i32,
}

/// One output row: the two (clipped) source rows and their 11-bit weights.
type YTap = (usize, usize, i32, i32);

/// OpenCV's horizontal and vertical tap tables for a `sw x sh -> dw x dh` resize with `cn` channels.
fn linear_tabs(sw: usize, sh: usize, cn: usize, dw: usize, dh: usize) -> (Vec<XTap>, Vec<YTap>) {
    let scale_x = 1.0 / (dw as f64 / sw as f64);
    let xtab = (0..dw)
        .map(|dx| {
            let (mut sx, mut fx) = cv_linear_coord(dx, scale_x);
            if sx < 0 {
                sx = 0;
                fx = 0.0;
            }
            if sx + 1 >= sw as i64 {
                sx = sw as i64 - 1;
                fx = 0.0;
            }
            let (a0, a1) = cv_coef_pair(fx);
            let sx = sx as usize;
            XTap { o0: sx * cn, o1: (sx + 1).min(sw - 1) * cn, a0, a1 }
        })
        .collect();
    let scale_y = 1.0 / (dh as f64 / sh as f64);
    let clip_row = |y: i64| y.clamp(0, sh as i64 - 1) as usize;
    let ytab = (0..dh)
        .map(|dy| {
            let (sy, fy) = cv_linear_coord(dy, scale_y);
            let (b0, b1) = cv_coef_pair(fy);
            (clip_row(sy), clip_row(sy + 1), b0, b1)
        })
        .collect();
    (xtab, ytab)
}

/// The 3-channel path, compiled for AVX2 when the CPU supports it (same code, same bytes).
fn resize3_dispatch(src: &[u8], stride: usize, xtab: &[XTap], ytab: &[YTap], row_len: usize) -> Vec<u8> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked at run time just above).
        return unsafe { resize3_avx2(src, stride, xtab, ytab, row_len) };
    }
    resize_rows(src, stride, xtab, ytab, row_len, hresize3)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn resize3_avx2(src: &[u8], stride: usize, xtab: &[XTap], ytab: &[YTap], row_len: usize) -> Vec<u8> {
    resize_rows(src, stride, xtab, ytab, row_len, hresize3)
}

/// Horizontal pass of one 3-channel source row: `D = S[sx] * a0 + S[sx + 1] * a1` per channel (exact i32).
#[inline(always)]
fn hresize3(row: &[u8], xtab: &[XTap], out: &mut [i32]) {
    for (t, o) in xtab.iter().zip(out.chunks_exact_mut(3)) {
        let (p, q) = (&row[t.o0..t.o0 + 3], &row[t.o1..t.o1 + 3]);
        o[0] = p[0] as i32 * t.a0 + q[0] as i32 * t.a1;
        o[1] = p[1] as i32 * t.a0 + q[1] as i32 * t.a1;
        o[2] = p[2] as i32 * t.a0 + q[2] as i32 * t.a1;
    }
}

/// The generic path: any channel count.
fn resize_generic(src: &[u8], stride: usize, cn: usize, xtab: &[XTap], ytab: &[YTap], row_len: usize) -> Vec<u8> {
    resize_rows(src, stride, xtab, ytab, row_len, |row: &[u8], xtab: &[XTap], out: &mut [i32]| {
        for (t, o) in xtab.iter().zip(out.chunks_exact_mut(cn)) {
            for (k, v) in o.iter_mut().enumerate() {
                *v = row[t.o0 + k] as i32 * t.a0 + row[t.o1 + k] as i32 * t.a1;
            }
        }
    })
}

/// The row loop shared by both paths: two cached horizontally-resized rows (OpenCV's ring of `ksize` rows), then
/// the vertical pass `((((b0 * (D0 >> 4)) >> 16) + ((b1 * (D1 >> 4)) >> 16) + 2) >> 2`, saturated to u8.
#[inline(always)]
fn resize_rows<H: Fn(&[u8], &[XTap], &mut [i32])>(
    src: &[u8],
    stride: usize,
    xtab: &[XTap],
    ytab: &[YTap],
    row_len: usize,
    hresize: H,
) -> Vec<u8> {
    let mut rows = [vec![0i32; row_len], vec![0i32; row_len]];
    let mut have = [usize::MAX; 2];
    let mut dst = vec![0u8; ytab.len() * row_len];
    for (out, &(y0, y1, b0, b1)) in dst.chunks_exact_mut(row_len).zip(ytab) {
        if have[0] != y0 {
            if have[1] == y0 {
                rows.swap(0, 1);
                have.swap(0, 1);
            } else {
                hresize(&src[y0 * stride..(y0 + 1) * stride], xtab, &mut rows[0]);
                have[0] = y0;
            }
        }
        if have[1] != y1 {
            if have[0] == y1 {
                let (r0, r1) = rows.split_at_mut(1);
                r1[0].copy_from_slice(&r0[0]);
            } else {
                hresize(&src[y1 * stride..(y1 + 1) * stride], xtab, &mut rows[1]);
            }
            have[1] = y1;
        }
        for ((o, &d0), &d1) in out.iter_mut().zip(&rows[0]).zip(&rows[1]) {
            let v = (((b0 * (d0 >> 4)) >> 16) + ((b1 * (d1 >> 4)) >> 16) + 2) >> 2;
            *o = v.clamp(0, 255) as u8;
        }
    }
    dst
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64: a dependency-free generator for the test images and sizes.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn range(&mut self, lo: usize, hi: usize) -> usize {
            lo + (self.next() % (hi - lo) as u64) as usize
        }
    }

    /// The 3-channel fast path gives the bytes of the generic path (itself checked against OpenCV by the fixture
    /// tests) on random images and sizes: up, down, 2x, 1-pixel edges, one axis unchanged.
    #[test]
    fn fast_rgb_path_equals_generic() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut sizes = vec![(1, 1, 5, 3), (7, 5, 1, 1), (64, 48, 32, 24), (20, 10, 20, 31)];
        for _ in 0..200 {
            let s = (rng.range(1, 120), rng.range(1, 120));
            sizes.push((s.0, s.1, rng.range(1, 160), rng.range(1, 160)));
        }
        for (sw, sh, dw, dh) in sizes {
            let src: Vec<u8> = (0..sw * sh * 3).map(|_| rng.next() as u8).collect();
            let (xtab, ytab) = linear_tabs(sw, sh, 3, dw, dh);
            let want = resize_generic(&src, sw * 3, 3, &xtab, &ytab, dw * 3);
            assert_eq!(resize_linear_u8(&src, sw, sh, 3, dw, dh), want, "{sw}x{sh} -> {dw}x{dh}");
            assert_eq!(resize_rows(&src, sw * 3, &xtab, &ytab, dw * 3, hresize3), want, "{sw}x{sh} -> {dw}x{dh}");
        }
    }

    /// Other channel counts: 1 and 4 channels equal the 3-channel result per channel plane.
    #[test]
    fn generic_path_matches_per_channel() {
        let mut rng = Rng(7);
        for _ in 0..40 {
            let (sw, sh, dw, dh) = (rng.range(1, 60), rng.range(1, 60), rng.range(1, 80), rng.range(1, 80));
            let src4: Vec<u8> = (0..sw * sh * 4).map(|_| rng.next() as u8).collect();
            let out4 = resize_linear_u8(&src4, sw, sh, 4, dw, dh);
            let src3: Vec<u8> = src4.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
            let out3 = resize_linear_u8(&src3, sw, sh, 3, dw, dh);
            let src1: Vec<u8> = src4.chunks_exact(4).map(|p| p[3]).collect();
            let out1 = resize_linear_u8(&src1, sw, sh, 1, dw, dh);
            for (i, p) in out4.chunks_exact(4).enumerate() {
                assert_eq!(&p[..3], &out3[i * 3..i * 3 + 3], "{sw}x{sh} -> {dw}x{dh}");
                assert_eq!(p[3], out1[i], "{sw}x{sh} -> {dw}x{dh}");
            }
        }
    }
}
