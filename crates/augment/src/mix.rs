//! `MixUp` and `CutMix`.

use rand::Rng;
use rand_distr::{Beta, Distribution};

use crate::sample::clip_boxes;
use crate::{AugmentError, Sample};

fn same_size(a: &Sample, b: &Sample, what: &str) -> Result<(), AugmentError> {
    a.validate()?;
    b.validate()?;
    if a.img.dimensions() != b.img.dimensions() {
        return Err(AugmentError::InvalidArgument(format!(
            "{what}: images differ in size ({:?} vs {:?})",
            a.img.dimensions(),
            b.img.dimensions()
        )));
    }
    Ok(())
}

/// `MixUp.apply_image` + `apply_instances` for a given ratio `r` (ultralytics draws `r = np.random.beta(32, 32)`):
/// `img = (img1 * r + img2 * (1 - r)).astype(uint8)` (f64, truncation), labels of `a` then `b` concatenated.
pub fn mixup(a: &Sample, b: &Sample, r: f64) -> Result<Sample, AugmentError> {
    same_size(a, b, "mixup")?;
    if !(0.0..=1.0).contains(&r) {
        return Err(AugmentError::InvalidArgument(format!("mixup: ratio {r} outside [0, 1]")));
    }
    let mut img = a.img.clone();
    for (o, &q) in img.iter_mut().zip(b.img.iter()) {
        *o = (*o as f64 * r + q as f64 * (1.0 - r)) as u8;
    }
    let boxes = a.boxes.iter().chain(&b.boxes).copied().collect();
    let cls = a.cls.iter().chain(&b.cls).copied().collect();
    Ok(Sample { img, boxes, cls })
}

/// The Beta(32, 32) ratio of `MixUp.get_params`.
pub(crate) fn mixup_ratio(rng: &mut impl Rng) -> f64 {
    Beta::new(32.0, 32.0).expect("Beta(32, 32) parameters are valid").sample(rng)
}

/// `ultralytics.utils.metrics.bbox_ioa(box1, box2, iou=False, eps=1e-7)` in float32: `[i][j]` = intersection of
/// `box1[i]` and `box2[j]` over the area of `box2[j]`.
pub fn bbox_ioa(box1: &[[f32; 4]], box2: &[[f32; 4]]) -> Vec<Vec<f32>> {
    box1.iter()
        .map(|a| {
            box2.iter()
                .map(|b| {
                    let iw = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
                    let ih = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
                    iw * ih / ((b[2] - b[0]) * (b[3] - b[1]) + 1e-7)
                })
                .collect()
        })
        .collect()
}

/// `CutMix._rand_bbox(width, height)` with `beta = 1`: `lam ~ Beta(1, 1)`, `cut = int(size * sqrt(1 - lam))`,
/// centre `randint(width)`, `randint(height)`, corners `clip(c -/+ cut // 2, 0, size)`; returned as float32 `xyxy`
/// (the `np.asarray(..., dtype=np.float32)` of `get_params`).
pub fn cutmix_area(rng: &mut impl Rng, width: u32, height: u32) -> [f32; 4] {
    let lam: f64 = Beta::new(1.0, 1.0).expect("Beta(1, 1) parameters are valid").sample(rng);
    let cut_ratio = (1.0 - lam).sqrt();
    let (w, h) = (width as i64, height as i64);
    let cut_w = (w as f64 * cut_ratio) as i64;
    let cut_h = (h as f64 * cut_ratio) as i64;
    let cx = rng.random_range(0..w.max(1));
    let cy = rng.random_range(0..h.max(1));
    let x1 = (cx - cut_w.div_euclid(2)).clamp(0, w);
    let y1 = (cy - cut_h.div_euclid(2)).clamp(0, h);
    let x2 = (cx + cut_w.div_euclid(2)).clamp(0, w);
    let y2 = (cy + cut_h.div_euclid(2)).clamp(0, h);
    [x1 as f32, y1 as f32, x2 as f32, y2 as f32]
}

/// `CutMix(p=1, beta=1, num_areas=3)` on `a` with the second image `b` (same size; ultralytics passes it through the
/// same mosaic + perspective pre-transform): draw 3 candidate areas ([`cutmix_area`]), keep those that overlap no
/// box of `a` (`bbox_ioa(areas, a).sum(1) <= 0`), choose one uniformly (`np.random.choice`); take the boxes of `b`
/// whose IoA with it is `>= 0.1`; paste `b`'s pixels of the area into `a` and append those boxes clipped to the area.
/// Returns `a` unchanged when no area is free or no box of `b` qualifies (`params["skip"]`).
pub fn cutmix(a: &Sample, b: &Sample, rng: &mut impl Rng) -> Result<Sample, AugmentError> {
    same_size(a, b, "cutmix")?;
    let (w, h) = a.img.dimensions();
    let areas: Vec<[f32; 4]> = (0..3).map(|_| cutmix_area(rng, w, h)).collect();
    let ioa1 = bbox_ioa(&areas, &a.boxes);
    let free: Vec<usize> = (0..areas.len()).filter(|&i| ioa1[i].iter().sum::<f32>() <= 0.0).collect();
    if free.is_empty() {
        return Ok(a.clone());
    }
    let area = areas[free[rng.random_range(0..free.len())]];
    let ioa2 = bbox_ioa(&[area], &b.boxes);
    let take: Vec<usize> = (0..b.boxes.len()).filter(|&j| ioa2[0][j] >= 0.1).collect();
    if take.is_empty() {
        return Ok(a.clone());
    }
    let [x1, y1, x2, y2] = area.map(|v| v as usize);
    let mut out = a.clone();
    let stride = w as usize * 3;
    let dst: &mut [u8] = &mut out.img;
    for y in y1..y2 {
        let r = y * stride + x1 * 3..y * stride + x2 * 3;
        dst[r.clone()].copy_from_slice(&b.img.as_raw()[r]);
    }
    let (fx1, fy1) = (x1 as f32, y1 as f32);
    let mut boxes2: Vec<[f32; 4]> =
        take.iter().map(|&j| b.boxes[j]).map(|q| [q[0] - fx1, q[1] - fy1, q[2] - fx1, q[3] - fy1]).collect();
    clip_boxes(&mut boxes2, (x2 - x1) as f32, (y2 - y1) as f32);
    out.boxes.extend(boxes2.iter().map(|q| [q[0] + fx1, q[1] + fy1, q[2] + fx1, q[3] + fy1]));
    out.cls.extend(take.iter().map(|&j| b.cls[j]));
    Ok(out)
}
