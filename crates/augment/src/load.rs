//! `BaseDataset.load_image`'s resize.

use image::RgbImage;

use crate::sample::check_image;
use crate::AugmentError;

/// A loaded, resized image (ultralytics `load_image`'s `(im, hw_original, hw_resized)`).
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// The resized image.
    pub img: RgbImage,
    /// Original `[h, w]` (`hw_original`, ultralytics `ori_shape`).
    pub orig_hw: [usize; 2],
    /// Per-axis scale `[new_w / w0, new_h / h0]` mapping original pixel coordinates to `img`'s. (Ultralytics keeps
    /// the labels normalised and multiplies them by the resized `w, h`; [`crate::Sample::from_normalized_xywh`]
    /// on `img` does exactly that.)
    pub scale_xy: [f64; 2],
}

/// `BaseDataset.load_image(i)` (8.4.190, `rect_mode=True`, `resize_short=False`, which is what
/// `get_image_and_label` calls, for training and validation alike) after the decode:
/// `r = imgsz / max(h0, w0)`; if `r != 1`: `w, h = min(ceil(w0 * r), imgsz), min(ceil(h0 * r), imgsz)` and
/// `cv2.resize(im, (w, h), interpolation=cv2.INTER_LINEAR)` (bit-exact: the bytes of
/// [`yolo26_imageio::preprocess::resize_linear`], whose 3-channel fast path is the one implementation).
///
/// 8.4.190 uses `INTER_LINEAR` for both up- and down-scaling and whether or not it augments (older releases
/// used `INTER_AREA` when not augmenting), so there is no `augment` switch. Small images are enlarged.
pub fn load_resize(img: RgbImage, imgsz: usize) -> Result<Loaded, AugmentError> {
    check_image("load_resize input", &img)?;
    if imgsz == 0 {
        return Err(AugmentError::InvalidArgument("load_resize: imgsz must be > 0".into()));
    }
    let (w0, h0) = (img.width() as usize, img.height() as usize);
    let r = imgsz as f64 / w0.max(h0) as f64;
    if r == 1.0 {
        return Ok(Loaded { img, orig_hw: [h0, w0], scale_xy: [1.0, 1.0] });
    }
    let w = ((w0 as f64 * r).ceil() as usize).min(imgsz);
    let h = ((h0 as f64 * r).ceil() as usize).min(imgsz);
    let img = yolo26_imageio::preprocess::resize_linear(&img, w as u32, h as u32);
    Ok(Loaded { img, orig_hw: [h0, w0], scale_xy: [w as f64 / w0 as f64, h as f64 / h0 as f64] })
}
