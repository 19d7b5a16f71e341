//! `LetterBox` on a labelled sample.

use yolo26_imageio::preprocess::{Letterbox, LetterboxInfo};

use crate::sample::check_image;
use crate::{AugmentError, Sample, PAD_VALUE};

/// Ultralytics `LetterBox(new_shape, auto, scale_fill=False, scaleup, center, stride, padding_value=114)` applied
/// to `labels` (image and boxes). `new_shape` is `[h, w]`.
///
/// The image goes through [`yolo26_imageio::preprocess::Letterbox::apply_u8`] (`cv2.resize(INTER_LINEAR)`
/// bit-exact + `cv2.copyMakeBorder`); the boxes through `LetterBox._update_labels`: multiply by the f32 ratio `r`
/// (not by `new_unpad / shape`), then add `(left, top)`. The validation loader of ultralytics uses
/// `LetterBox(new_shape=imgsz, scaleup=False)` (`auto=False`, `center=True`). Returns the letterbox geometry too.
pub fn letterbox_sample(
    s: &Sample,
    new_shape: [usize; 2],
    auto: bool,
    scaleup: bool,
    center: bool,
    stride: usize,
) -> Result<(Sample, LetterboxInfo), AugmentError> {
    check_image("letterbox input", &s.img)?;
    if new_shape[0] == 0 || new_shape[1] == 0 {
        return Err(AugmentError::InvalidArgument(format!("letterbox: empty new_shape {new_shape:?}")));
    }
    if auto && stride == 0 {
        return Err(AugmentError::InvalidArgument("letterbox: auto needs stride > 0".into()));
    }
    let lb = Letterbox { new_shape, stride, auto, scaleup, center, pad_value: PAD_VALUE };
    let (img, info) = lb.apply_u8(&s.img);
    let r = info.ratio;
    let [left, top] = info.pad;
    let boxes = s.boxes.iter().map(|b| [b[0] * r + left, b[1] * r + top, b[2] * r + left, b[3] * r + top]).collect();
    Ok((Sample { img, boxes, cls: s.cls.clone() }, info))
}
