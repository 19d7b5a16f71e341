//! `Mosaic._mosaic4`: four images on a `2 imgsz x 2 imgsz` canvas.

use image::RgbImage;

use crate::sample::{check_image, clip_boxes, positive_area, uniform};
use crate::warp::RowSource;
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
/// [`mosaic4_lazy`] is the same without drawing the canvas.
pub fn mosaic4(tiles: [&Sample; 4], imgsz: usize, xc: i64, yc: i64) -> Result<Sample, AugmentError> {
    let m = mosaic4_lazy(tiles, imgsz, xc, yc)?;
    Ok(Sample { img: m.canvas.to_image(), boxes: m.boxes, cls: m.cls })
}

/// [`mosaic4`] with the canvas left undrawn: its labels, and the tiles with their places ([`MosaicCanvas`]), which
/// `random_perspective` reads row by row (`crate::random_perspective_mosaic`). The `2s x 2s x 3` canvas (4.9 MB
/// at 640) is neither filled, copied into nor faulted in.
pub fn mosaic4_lazy<'a>(
    tiles: [&'a Sample; 4],
    imgsz: usize,
    xc: i64,
    yc: i64,
) -> Result<LazyMosaic<'a>, AugmentError> {
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
    let side = 2 * imgsz;
    let mut canvas = MosaicCanvas { side, tiles: Vec::with_capacity(4) };
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
        if let Some(r) = Region::new([side, side], [x1a, y1a, x2a, y2a], [w as usize, h as usize], [x1b, y1b, x2b, y2b])
        {
            canvas.tiles.push((&t.img, r));
        }
        let (padw, padh) = ((x1a - x1b) as f32, (y1a - y1b) as f32);
        boxes.extend(t.boxes.iter().map(|b| [b[0] + padw, b[1] + padh, b[2] + padw, b[3] + padh]));
        cls.extend_from_slice(&t.cls);
    }
    let side_f = side as f32;
    clip_boxes(&mut boxes, side_f, side_f);
    let keep = positive_area(&boxes);
    let mut it = keep.iter();
    boxes.retain(|_| *it.next().unwrap_or(&false));
    let mut it = keep.iter();
    cls.retain(|_| *it.next().unwrap_or(&false));
    Ok(LazyMosaic { canvas, boxes, cls })
}

/// A mosaic whose canvas is not drawn ([`mosaic4_lazy`]): the labels of [`mosaic4`]'s sample and the canvas.
#[derive(Clone, Debug)]
pub struct LazyMosaic<'a> {
    pub canvas: MosaicCanvas<'a>,
    /// `xyxy` boxes in canvas pixels (clipped, zero-area boxes removed), as [`mosaic4`]'s.
    pub boxes: Vec<[f32; 4]>,
    pub cls: Vec<u32>,
}

/// The `2s x 2s` mosaic canvas as tiles and their places: pixel `(x, y)` is the last tile's pixel whose region holds
/// it, else [`PAD_VALUE`] (what [`mosaic4`]'s fill and copies in tile order produce).
#[derive(Clone, Debug)]
pub struct MosaicCanvas<'a> {
    side: usize,
    tiles: Vec<(&'a RgbImage, Region)>,
}

/// The part of a tile copied to the canvas: `w x h` pixels from `(bx, by)` of the tile to `(ax, ay)` of the canvas.
#[derive(Clone, Copy, Debug)]
struct Region {
    ax: usize,
    ay: usize,
    bx: usize,
    by: usize,
    w: usize,
    h: usize,
}

impl Region {
    /// `dst[y1a:y2a, x1a:x2a] = src[y1b:y2b, x1b:x2b]` with NumPy slice semantics on non-negative bounds: each
    /// slice clamped to its array (`[w, h]`), the common extent copied (NumPy would raise on a shape mismatch,
    /// which the mosaic layout never produces for tiles no larger than the canvas). `None` when nothing is copied.
    fn new(dst: [usize; 2], a: [i64; 4], src: [usize; 2], b: [i64; 4]) -> Option<Self> {
        let clamp = |v: i64, hi: usize| v.clamp(0, hi as i64) as usize;
        let (ax1, ay1, ax2, ay2) = (clamp(a[0], dst[0]), clamp(a[1], dst[1]), clamp(a[2], dst[0]), clamp(a[3], dst[1]));
        let (bx1, by1, bx2, by2) = (clamp(b[0], src[0]), clamp(b[1], src[1]), clamp(b[2], src[0]), clamp(b[3], src[1]));
        let w = ax2.saturating_sub(ax1).min(bx2.saturating_sub(bx1));
        let h = ay2.saturating_sub(ay1).min(by2.saturating_sub(by1));
        (w > 0 && h > 0).then_some(Region { ax: ax1, ay: ay1, bx: bx1, by: by1, w, h })
    }
}

impl MosaicCanvas<'_> {
    /// The drawn canvas (ultralytics' `img4`).
    pub fn to_image(&self) -> RgbImage {
        let n = self.side * self.side * 3;
        let mut buf = vec![PAD_VALUE; n];
        let stride = self.side * 3;
        for (img, r) in &self.tiles {
            let sstride = img.width() as usize * 3;
            let src = img.as_raw();
            for y in 0..r.h {
                let d = (r.ay + y) * stride + r.ax * 3;
                let s = (r.by + y) * sstride + r.bx * 3;
                buf[d..d + r.w * 3].copy_from_slice(&src[s..s + r.w * 3]);
            }
        }
        let side = self.side as u32;
        RgbImage::from_raw(side, side, buf).expect("canvas buffer is side * side * 3")
    }
}

impl RowSource for MosaicCanvas<'_> {
    fn dims(&self) -> (usize, usize) {
        (self.side, self.side)
    }

    #[inline(always)]
    fn row_f32(&self, y: usize, x0: usize, out: &mut [f32]) {
        let x1 = x0 + out.len() / 3;
        out.fill(PAD_VALUE as f32);
        for (img, r) in &self.tiles {
            let (lo, hi) = (x0.max(r.ax), x1.min(r.ax + r.w));
            if y < r.ay || y >= r.ay + r.h || lo >= hi {
                continue;
            }
            let s = ((r.by + y - r.ay) * img.width() as usize + r.bx + lo - r.ax) * 3;
            let src = &img.as_raw()[s..s + (hi - lo) * 3];
            for (o, &v) in out[(lo - x0) * 3..(hi - x0) * 3].iter_mut().zip(src) {
                *o = v as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::{random_perspective, random_perspective_mosaic, AugmentConfig};

    fn tile(rng: &mut ChaCha8Rng, max: u32) -> Sample {
        let (w, h) = (rng.random_range(1..max), rng.random_range(1..max));
        let img = RgbImage::from_fn(w, h, |_, _| image::Rgb(rng.random()));
        let labels: Vec<(u32, [f32; 4])> = (0..rng.random_range(0..4))
            .map(|c| (c, [rng.random_range(0.2..0.8), rng.random_range(0.2..0.8), 0.3, 0.2]))
            .collect();
        Sample::from_normalized_xywh(img, &labels).unwrap()
    }

    /// The undrawn canvas reads as the drawn one (any row, any column range), and the warp of the undrawn mosaic
    /// gives `random_perspective(&mosaic4(..))`'s sample for the same draws: the defaults (axis-aligned, read row
    /// by row) and rotation / shear / perspective (drawn first); tiles smaller and larger than the canvas.
    #[test]
    fn lazy_mosaic_equals_drawn() {
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let configs = [
            AugmentConfig::default(),
            AugmentConfig { degrees: 10.0, ..AugmentConfig::default() },
            AugmentConfig { shear: 5.0, ..AugmentConfig::default() },
            AugmentConfig { perspective: 0.0005, ..AugmentConfig::default() },
            AugmentConfig { scale: 0.9, translate: 0.3, ..AugmentConfig::default() },
        ];
        for case in 0..60 {
            let s = rng.random_range(8..48usize);
            let max = if case % 5 == 0 { 3 * s as u32 } else { s as u32 + 1 };
            let tiles: [Sample; 4] = std::array::from_fn(|_| tile(&mut rng, max));
            let refs = [&tiles[0], &tiles[1], &tiles[2], &tiles[3]];
            let (xc, yc) = mosaic_center(&mut rng, s);
            let drawn = mosaic4(refs, s, xc, yc).unwrap();
            let lazy = mosaic4_lazy(refs, s, xc, yc).unwrap();
            assert_eq!((&lazy.boxes, &lazy.cls), (&drawn.boxes, &drawn.cls));
            assert_eq!(lazy.canvas.to_image(), drawn.img);
            let side = 2 * s;
            for _ in 0..20 {
                let (y, x0) = (rng.random_range(0..side), rng.random_range(0..side));
                let x1 = rng.random_range(x0 + 1..=side);
                let mut row = vec![-1f32; (x1 - x0) * 3];
                lazy.canvas.row_f32(y, x0, &mut row);
                let want: Vec<f32> =
                    drawn.img.as_raw()[(y * side + x0) * 3..(y * side + x1) * 3].iter().map(|&v| v as f32).collect();
                assert_eq!(row, want, "case {case}, row {y}, columns {x0}..{x1}");
            }
            let cfg = &configs[case % configs.len()];
            let seed = rng.random::<u64>();
            let size = [s, s + case % 3];
            let got = random_perspective_mosaic(&lazy, cfg, size, &mut ChaCha8Rng::seed_from_u64(seed)).unwrap();
            let want = random_perspective(&drawn, cfg, size, &mut ChaCha8Rng::seed_from_u64(seed)).unwrap();
            assert_eq!(got, want, "case {case}, config {}", case % configs.len());
        }
    }
}
