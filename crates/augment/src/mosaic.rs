//! `Mosaic._mosaic4`: four images on a `2 imgsz x 2 imgsz` canvas.

use image::RgbImage;

use crate::sample::{check_image, clip_boxes, positive_area, uniform};
use crate::{AugmentError, Sample, PAD_VALUE};

/// Draw the mosaic centre `(xc, yc)` as `Mosaic.get_params` does: with `border = -imgsz // 2` (Python floor
/// division), `yc, xc = (int(random.uniform(-x, 2 * imgsz + x)) for x in border)` — `yc` is drawn first; `int()`
/// truncates. For imgsz 640 both lie in `[320, 960)`.
pub fn mosaic_center(rng: &mut impl rand::Rng, imgsz: usize) -> (i64, i64) {
    let s = imgsz as i64;
    let border = (-s).div_euclid(2) as f64;
    let lo = -border;
    let hi = 2.0 * s as f64 + border;
    let yc = uniform(rng, lo, hi) as i64;
    let xc = uniform(rng, lo, hi) as i64;
    (xc, yc)
}

/// `Mosaic` with `n=4` for a given centre `(xc, yc)` (pixels of the `2s x 2s` canvas, `s = imgsz`): `get_params`'
/// layout, `apply_image` (canvas filled with 114, each tile copied `img4[y1a:y2a, x1a:x2a] = img[y1b:y2b, x1b:x2b]`),
/// `apply_instances` (`_update_labels`: boxes shifted by `padw = x1a - x1b`, `padh = y1a - y1b`) and `_cat_labels`
/// (concatenate in order 0..4, `Instances.clip(2s, 2s)`, `remove_zero_area_boxes`).
///
/// `tiles[0]` is the dataset item itself (top left), `tiles[1..4]` the partners (top right, bottom left, bottom
/// right). Python's negative-slice semantics never occur here (all indices are clamped to the canvas), except
/// that a tile bigger than the canvas is cropped from its far corner exactly as NumPy would.
pub fn mosaic4(tiles: [&Sample; 4], imgsz: usize, xc: i64, yc: i64) -> Result<Sample, AugmentError> {
    if imgsz == 0 {
        return Err(AugmentError::InvalidArgument("mosaic4: imgsz must be > 0".into()));
    }
    let s = imgsz as i64;
    if !(0..=2 * s).contains(&xc) || !(0..=2 * s).contains(&yc) {
        return Err(AugmentError::InvalidArgument(format!("mosaic4: centre ({xc}, {yc}) outside [0, {}]", 2 * s)));
    }
    for t in tiles {
        t.validate()?;
        check_image("mosaic tile", &t.img)?;
    }
    let side = (2 * s) as u32;
    let n = side as usize * side as usize * 3;
    let mut canvas = RgbImage::from_raw(side, side, vec![PAD_VALUE; n]).expect("canvas buffer is side * side * 3");
    let mut boxes = Vec::new();
    let mut cls = Vec::new();
    for (i, t) in tiles.iter().enumerate() {
        let (w, h) = (t.img.width() as i64, t.img.height() as i64);
        let (x1a, y1a, x2a, y2a, x1b, y1b, x2b, y2b);
        match i {
            0 => {
                (x1a, y1a, x2a, y2a) = ((xc - w).max(0), (yc - h).max(0), xc, yc);
                (x1b, y1b, x2b, y2b) = (w - (x2a - x1a), h - (y2a - y1a), w, h);
            }
            1 => {
                (x1a, y1a, x2a, y2a) = (xc, (yc - h).max(0), (xc + w).min(2 * s), yc);
                (x1b, y1b, x2b, y2b) = (0, h - (y2a - y1a), w.min(x2a - x1a), h);
            }
            2 => {
                (x1a, y1a, x2a, y2a) = ((xc - w).max(0), yc, xc, (2 * s).min(yc + h));
                (x1b, y1b, x2b, y2b) = (w - (x2a - x1a), 0, w, (y2a - y1a).min(h));
            }
            _ => {
                (x1a, y1a, x2a, y2a) = (xc, yc, (xc + w).min(2 * s), (2 * s).min(yc + h));
                (x1b, y1b, x2b, y2b) = (0, 0, w.min(x2a - x1a), (y2a - y1a).min(h));
            }
        }
        copy_region(&mut canvas, [x1a, y1a, x2a, y2a], &t.img, [x1b, y1b, x2b, y2b]);
        let (padw, padh) = ((x1a - x1b) as f32, (y1a - y1b) as f32);
        boxes.extend(t.boxes.iter().map(|b| [b[0] + padw, b[1] + padh, b[2] + padw, b[3] + padh]));
        cls.extend_from_slice(&t.cls);
    }
    let side_f = side as f32;
    clip_boxes(&mut boxes, side_f, side_f);
    let mut out = Sample { img: canvas, boxes, cls };
    let keep = positive_area(&out.boxes);
    out.retain(&keep);
    Ok(out)
}

/// `dst[y1a:y2a, x1a:x2a] = src[y1b:y2b, x1b:x2b]` with NumPy slice semantics on non-negative bounds: each slice
/// is clamped to its array, and the assignment copies the common extent (NumPy would raise on a shape mismatch,
/// which the mosaic layout never produces for tiles no larger than the canvas).
fn copy_region(dst: &mut RgbImage, a: [i64; 4], src: &RgbImage, b: [i64; 4]) {
    let clamp = |v: i64, hi: u32| v.clamp(0, hi as i64) as usize;
    let (ax1, ay1, ax2, ay2) =
        (clamp(a[0], dst.width()), clamp(a[1], dst.height()), clamp(a[2], dst.width()), clamp(a[3], dst.height()));
    let (bx1, by1, bx2, by2) =
        (clamp(b[0], src.width()), clamp(b[1], src.height()), clamp(b[2], src.width()), clamp(b[3], src.height()));
    let w = ax2.saturating_sub(ax1).min(bx2.saturating_sub(bx1));
    let h = ay2.saturating_sub(ay1).min(by2.saturating_sub(by1));
    if w == 0 || h == 0 {
        return;
    }
    let (dstride, sstride) = (dst.width() as usize * 3, src.width() as usize * 3);
    let sbuf = src.as_raw();
    let dbuf: &mut [u8] = dst;
    for y in 0..h {
        let d = (ay1 + y) * dstride + ax1 * 3;
        let s = (by1 + y) * sstride + bx1 * 3;
        dbuf[d..d + w * 3].copy_from_slice(&sbuf[s..s + w * 3]);
    }
}
