//! One labelled image.

use image::RgbImage;

use crate::AugmentError;

/// One labelled image: ultralytics' `labels` dict after `Instances.convert_bbox("xyxy")` + `denormalize`.
///
/// * `img`: 8-bit RGB, HWC (`labels["img"]`, which is BGR in ultralytics).
/// * `boxes[i]`: `[x1, y1, x2, y2]` in pixels of `img` (`labels["instances"].bboxes`, float32, `xyxy`,
///   `normalized=False`).
/// * `cls[i]`: class id of `boxes[i]` (`labels["cls"][:, 0]`); `boxes.len() == cls.len()`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub img: RgbImage,
    pub boxes: Vec<[f32; 4]>,
    pub cls: Vec<u32>,
}

impl Sample {
    /// A sample from YOLO label rows `(cls, [x_center, y_center, w, h])` normalised to `[0, 1]`, denormalised
    /// exactly as ultralytics does it (`Instances.convert_bbox("xyxy")`, i.e. `xywh2xyxy` in float32: `x1 = x - w / 2`,
    /// then `Instances.denormalize(w, h)`: a float32 multiply by the image width/height).
    pub fn from_normalized_xywh(img: RgbImage, labels: &[(u32, [f32; 4])]) -> Result<Self, AugmentError> {
        let (w, h) = (img.width() as f32, img.height() as f32);
        let mut boxes = Vec::with_capacity(labels.len());
        let mut cls = Vec::with_capacity(labels.len());
        for &(c, [x, y, bw, bh]) in labels {
            let (dw, dh) = (bw / 2.0, bh / 2.0);
            boxes.push([(x - dw) * w, (y - dh) * h, (x + dw) * w, (y + dh) * h]);
            cls.push(c);
        }
        let s = Self { img, boxes, cls };
        s.validate()?;
        Ok(s)
    }

    /// Boxes as normalised `[x_center, y_center, w, h]` (ultralytics `Format(bbox_format="xywh", normalize=True)`:
    /// `xyxy2xywh` then divide by the image width/height), paired with the class ids.
    pub fn normalized_xywh(&self) -> Vec<(u32, [f32; 4])> {
        let (w, h) = (self.img.width() as f32, self.img.height() as f32);
        self.boxes
            .iter()
            .zip(&self.cls)
            .map(|(b, &c)| {
                (c, [(b[0] + b[2]) / 2.0 / w, (b[1] + b[3]) / 2.0 / h, (b[2] - b[0]) / w, (b[3] - b[1]) / h])
            })
            .collect()
    }

    /// Check the invariants: a non-empty image, `boxes.len() == cls.len()`, finite coordinates.
    pub fn validate(&self) -> Result<(), AugmentError> {
        if self.img.width() == 0 || self.img.height() == 0 {
            return Err(AugmentError::EmptyImage {
                what: "sample",
                width: self.img.width(),
                height: self.img.height(),
            });
        }
        if self.boxes.len() != self.cls.len() {
            return Err(AugmentError::LabelCount { boxes: self.boxes.len(), cls: self.cls.len() });
        }
        if let Some((index, b)) = self.boxes.iter().enumerate().find(|(_, b)| b.iter().any(|v| !v.is_finite())) {
            return Err(AugmentError::NonFiniteBox { index, value: *b });
        }
        Ok(())
    }

    /// Keep the labels where `keep[i]` is true (ultralytics `instances[i]`, `cls[i]` with a boolean index).
    pub(crate) fn retain(&mut self, keep: &[bool]) {
        let mut k = keep.iter();
        self.boxes.retain(|_| *k.next().unwrap_or(&false));
        let mut k = keep.iter();
        self.cls.retain(|_| *k.next().unwrap_or(&false));
    }
}

/// Clip boxes to `[0, w] x [0, h]` (ultralytics `Instances.clip(w, h)` on `xyxy` float32 boxes; NaN stays NaN).
pub(crate) fn clip_boxes(boxes: &mut [[f32; 4]], w: f32, h: f32) {
    let c = |v: f32, hi: f32| if v.is_nan() { v } else { v.max(0.0).min(hi) };
    for b in boxes {
        *b = [c(b[0], w), c(b[1], h), c(b[2], w), c(b[3], h)];
    }
}

/// `Instances.remove_zero_area_boxes`' mask: `(x2 - x1) * (y2 - y1) > 0` in float32.
pub(crate) fn positive_area(boxes: &[[f32; 4]]) -> Vec<bool> {
    boxes.iter().map(|b| (b[2] - b[0]) * (b[3] - b[1]) > 0.0).collect()
}

/// Check that an image is not empty.
pub(crate) fn check_image(what: &'static str, img: &RgbImage) -> Result<(), AugmentError> {
    if img.width() == 0 || img.height() == 0 {
        return Err(AugmentError::EmptyImage { what, width: img.width(), height: img.height() });
    }
    Ok(())
}

/// `a + (b - a) * U[0, 1)`: Python's `random.uniform(a, b)` (and `np.random.uniform`) formula.
pub(crate) fn uniform(rng: &mut impl rand::Rng, a: f64, b: f64) -> f64 {
    a + (b - a) * rng.random::<f64>()
}
