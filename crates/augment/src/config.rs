//! Augmentation hyper-parameters (`ultralytics/cfg/default.yaml`).

use serde::{Deserialize, Serialize};

use crate::AugmentError;

/// The augmentation settings of `ultralytics/cfg/default.yaml` (8.4.190) that `v8_transforms` reads from `hyp`.
///
/// `Default` is default.yaml. Missing keys deserialize to their defaults (`#[serde(default)]`), so a YAML/JSON
/// fragment with only the overrides works. Setting `mosaic`, `mixup` and `cutmix` to 0 is ultralytics'
/// `YOLODataset.close_mosaic` (which also zeroes `copy_paste`, not implemented here).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AugmentConfig {
    /// HSV hue gain, fraction (`hsv_h`, 0.015): `RandomHSV(hgain)`.
    pub hsv_h: f64,
    /// HSV saturation gain, fraction (`hsv_s`, 0.7): `RandomHSV(sgain)`.
    pub hsv_s: f64,
    /// HSV value gain, fraction (`hsv_v`, 0.4): `RandomHSV(vgain)`.
    pub hsv_v: f64,
    /// Rotation range in degrees, ± (`degrees`, 0.0): `RandomPerspective(degrees)`.
    pub degrees: f64,
    /// Translation, fraction of the output size, ± (`translate`, 0.1): `RandomPerspective(translate)`.
    pub translate: f64,
    /// Scale gain, ± (`scale`, 0.5; the scale is drawn from `[1 - scale, 1 + scale]`): `RandomPerspective(scale)`.
    pub scale: f64,
    /// Shear in degrees, ± (`shear`, 0.0): `RandomPerspective(shear)`.
    pub shear: f64,
    /// Perspective fraction, ± (`perspective`, 0.0, range 0..0.001): `RandomPerspective(perspective)`; non-zero
    /// switches the warp from `cv2.warpAffine` to `cv2.warpPerspective`.
    pub perspective: f64,
    /// Probability of a vertical flip (`flipud`, 0.0): `RandomFlip(direction="vertical", p=flipud)`.
    pub flipud: f64,
    /// Probability of a horizontal flip (`fliplr`, 0.5): `RandomFlip(direction="horizontal", p=fliplr)`.
    pub fliplr: f64,
    /// Probability of keeping the channels in BGR order (`bgr`, 0.0): `Format(bgr)`.
    pub bgr: f64,
    /// Probability of a 4-image mosaic (`mosaic`, 1.0): `Mosaic(p=mosaic, n=4)`.
    pub mosaic: f64,
    /// Probability of MixUp (`mixup`, 0.0): `MixUp(p=mixup)`.
    pub mixup: f64,
    /// Probability of CutMix (`cutmix`, 0.0): `CutMix(p=cutmix)`.
    pub cutmix: f64,
}

impl Default for AugmentConfig {
    fn default() -> Self {
        Self {
            hsv_h: 0.015,
            hsv_s: 0.7,
            hsv_v: 0.4,
            degrees: 0.0,
            translate: 0.1,
            scale: 0.5,
            shear: 0.0,
            perspective: 0.0,
            flipud: 0.0,
            fliplr: 0.5,
            bgr: 0.0,
            mosaic: 1.0,
            mixup: 0.0,
            cutmix: 0.0,
        }
    }
}

impl AugmentConfig {
    /// The close-mosaic configuration (`YOLODataset.close_mosaic`): `mosaic = mixup = cutmix = 0`.
    pub fn close_mosaic(&self) -> Self {
        Self { mosaic: 0.0, mixup: 0.0, cutmix: 0.0, ..self.clone() }
    }

    /// Check every value: all finite, probabilities in `[0, 1]` (ultralytics asserts this for `Mosaic` and
    /// `RandomFlip`), gains and ranges non-negative, `translate` in `[0, 1]`, `scale` in `[0, 1)`... so that
    /// a drawn scale stays positive.
    pub fn validate(&self) -> Result<(), AugmentError> {
        let fields: [(&'static str, f64); 14] = [
            ("hsv_h", self.hsv_h),
            ("hsv_s", self.hsv_s),
            ("hsv_v", self.hsv_v),
            ("degrees", self.degrees),
            ("translate", self.translate),
            ("scale", self.scale),
            ("shear", self.shear),
            ("perspective", self.perspective),
            ("flipud", self.flipud),
            ("fliplr", self.fliplr),
            ("bgr", self.bgr),
            ("mosaic", self.mosaic),
            ("mixup", self.mixup),
            ("cutmix", self.cutmix),
        ];
        for (name, value) in fields {
            if !value.is_finite() {
                return Err(AugmentError::InvalidConfig { name, value, reason: "must be finite" });
            }
            if value < 0.0 {
                return Err(AugmentError::InvalidConfig { name, value, reason: "must be >= 0" });
            }
        }
        for (name, value) in [
            ("flipud", self.flipud),
            ("fliplr", self.fliplr),
            ("bgr", self.bgr),
            ("mosaic", self.mosaic),
            ("mixup", self.mixup),
            ("cutmix", self.cutmix),
            ("translate", self.translate),
        ] {
            if value > 1.0 {
                return Err(AugmentError::InvalidConfig { name, value, reason: "must be <= 1" });
            }
        }
        if self.scale >= 1.0 {
            let reason = "must be < 1 (the drawn scale 1 - scale .. 1 + scale must stay positive)";
            return Err(AugmentError::InvalidConfig { name: "scale", value: self.scale, reason });
        }
        if self.shear >= 90.0 {
            return Err(AugmentError::InvalidConfig { name: "shear", value: self.shear, reason: "must be < 90" });
        }
        Ok(())
    }
}
