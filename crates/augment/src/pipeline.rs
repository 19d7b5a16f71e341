//! The whole `v8_transforms` pipeline for one dataset item.

use std::sync::Arc;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::mix::mixup_ratio;
use crate::{
    cutmix, flip_lr, flip_ud, hsv_gains, mixup, mosaic4_lazy, mosaic_center, random_hsv, random_perspective,
    random_perspective_mosaic, swap_rb, AugmentConfig, AugmentError, Sample,
};

/// A dataset as the transforms see it: ultralytics' `BaseDataset.get_image_and_label(index)`.
///
/// `load` returns the image already resized by [`crate::load_resize`] with its labels in pixels of that image
/// ([`Sample::from_normalized_xywh`]). `Error` must absorb this crate's errors (`From<AugmentError>`).
pub trait SampleSource {
    /// Why a sample could not be loaded.
    type Error: From<AugmentError>;
    /// Number of items (`len(dataset)`).
    fn len(&self) -> usize;
    /// Whether there are no items.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Item `index` (`get_image_and_label(index)`), `index < len()`.
    fn load(&self, index: usize) -> Result<Sample, Self::Error>;
    /// [`SampleSource::load`] as a shared sample: the pipeline only reads what it loads, so a source that keeps
    /// its samples (ultralytics' RAM buffer) can hand them out without a copy. Defaults to `Arc::new(load(index))`.
    fn load_shared(&self, index: usize) -> Result<Arc<Sample>, Self::Error> {
        self.load(index).map(Arc::new)
    }
    /// One mosaic partner of item `index` (ultralytics `Mosaic.get_indexes` draws 3, one `random.choices` each),
    /// drawn with `rng`, `< len()`. Default: uniform over `0..len()` (ultralytics with `cache="ram"`, where
    /// `buffer_enabled` is off). A source can restrict it to recently loaded items, as ultralytics' buffer does
    /// (`random.choices(list(dataset.buffer), k=3)`); the result must depend only on `index` and `rng` for the
    /// pipeline to stay deterministic. An out-of-range result is an error of [`TrainTransform::apply`].
    fn mosaic_partner(&self, index: usize, rng: &mut ChaCha8Rng) -> usize {
        let _ = index;
        rng.random_range(0..self.len())
    }
}

/// Ultralytics' training transform: `v8_transforms(dataset, imgsz, hyp)` for detection.
///
/// Order of operations and random draws per item (each `p`-gated step draws `u ~ U[0, 1)` first and runs when
/// `!(u > p)`, like `BaseMixTransform.__call__`):
///
/// 1. `Mosaic(p=mosaic)`: 3 partner indices from [`SampleSource::mosaic_partner`] (uniform over `0..src.len()` by
///    default; ultralytics: from its buffer of recently loaded images, see the crate docs), centre
///    ([`mosaic_center`]), [`mosaic4`]. Otherwise the item as loaded.
/// 2. `RandomPerspective(size=(imgsz, imgsz))` ([`random_perspective`]): always applied. Without a mosaic the loaded
///    image (long side `imgsz`) is warped directly — 8.4.190 has no `LetterBox` pre-transform here; `C` centres the
///    image and `T` translates to the output, which equals the letterbox of older releases up to half a pixel.
/// 3. `MixUp(p=mixup)`: another item, uniform over the dataset (`BaseMixTransform.get_indexes`), through steps
///    1-2, blended with `r ~ Beta(32, 32)` ([`mixup`]).
/// 4. `CutMix(p=cutmix)`: another item, uniform over the dataset, through steps 1-2, [`cutmix`].
/// 5. `RandomHSV(hsv_h, hsv_s, hsv_v)` when any gain is non-zero ([`hsv_gains`], [`random_hsv`]).
/// 6. `RandomFlip(vertical, p=flipud)`, then `RandomFlip(horizontal, p=fliplr)`: `random.random() < p`.
/// 7. `Format(bgr=bgr)`: with probability `bgr` the output stays BGR (`random.uniform(0, 1) > bgr` turns BGR to RGB in
///    ultralytics; our images are RGB, so the complement swaps to BGR).
///
/// The output image is `imgsz x imgsz`, boxes `xyxy` in its pixels (clipped, filtered by `box_candidates`).
/// `Albumentations` (ultralytics applies it only when the `albumentations` package is installed) and `CopyPaste`
/// (needs segments; `copy_paste=0` by default) are not part of this pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainTransform {
    pub cfg: AugmentConfig,
    pub imgsz: usize,
}

fn gate(rng: &mut ChaCha8Rng, p: f64) -> bool {
    let u: f64 = rng.random();
    u <= p
}

impl TrainTransform {
    /// A transform for `imgsz` with the given configuration.
    pub fn new(cfg: AugmentConfig, imgsz: usize) -> Self {
        Self { cfg, imgsz }
    }

    /// The pipeline for dataset item `index` (see the type docs). Deterministic for a given `rng` state.
    /// Errors: the configuration ([`AugmentConfig::validate`]), `imgsz == 0`, an empty source, `index` out of range,
    /// invalid samples, and whatever `src.load` returns.
    pub fn apply<S: SampleSource>(&self, src: &S, index: usize, rng: &mut ChaCha8Rng) -> Result<Sample, S::Error> {
        self.cfg.validate()?;
        if self.imgsz == 0 {
            return Err(AugmentError::InvalidArgument("TrainTransform: imgsz must be > 0".into()).into());
        }
        if src.is_empty() {
            return Err(AugmentError::EmptySource.into());
        }
        if index >= src.len() {
            let msg = format!("TrainTransform: index {index} out of range for {} samples", src.len());
            return Err(AugmentError::InvalidArgument(msg).into());
        }
        let mut s = self.pre_transform(src, index, rng)?;
        if gate(rng, self.cfg.mixup) {
            let j = rng.random_range(0..src.len());
            let other = self.pre_transform(src, j, rng)?;
            let r = mixup_ratio(rng);
            s = mixup(&s, &other, r)?;
        }
        if gate(rng, self.cfg.cutmix) {
            let j = rng.random_range(0..src.len());
            let other = self.pre_transform(src, j, rng)?;
            s = cutmix(&s, &other, rng)?;
        }
        let c = &self.cfg;
        if c.hsv_h != 0.0 || c.hsv_s != 0.0 || c.hsv_v != 0.0 {
            let r = hsv_gains(rng, c.hsv_h, c.hsv_s, c.hsv_v);
            random_hsv(&mut s.img, r);
        }
        if rng.random::<f64>() < c.flipud {
            flip_ud(&mut s);
        }
        if rng.random::<f64>() < c.fliplr {
            flip_lr(&mut s);
        }
        if c.bgr > 0.0 && rng.random::<f64>() <= c.bgr {
            swap_rb(&mut s.img);
        }
        Ok(s)
    }

    /// `Compose([Mosaic, RandomPerspective])` for one item (the `pre_transform` that MixUp/CutMix reuse).
    fn pre_transform<S: SampleSource>(&self, src: &S, index: usize, rng: &mut ChaCha8Rng) -> Result<Sample, S::Error> {
        let base = src.load_shared(index)?;
        base.validate()?;
        let size = [self.imgsz, self.imgsz];
        if gate(rng, self.cfg.mosaic) {
            let idx: [usize; 3] = std::array::from_fn(|_| src.mosaic_partner(index, rng));
            if let Some(&j) = idx.iter().find(|&&j| j >= src.len()) {
                let msg = format!("TrainTransform: mosaic partner {j} out of range for {} samples", src.len());
                return Err(AugmentError::InvalidArgument(msg).into());
            }
            let others = [src.load_shared(idx[0])?, src.load_shared(idx[1])?, src.load_shared(idx[2])?];
            let (xc, yc) = mosaic_center(rng, self.imgsz);
            // the canvas is read row by row by the warp, never drawn (same sample as `mosaic4` + the warp)
            let mosaic = mosaic4_lazy([&base, &others[0], &others[1], &others[2]], self.imgsz, xc, yc)?;
            Ok(random_perspective_mosaic(&mosaic, &self.cfg, size, rng)?)
        } else {
            Ok(random_perspective(&base, &self.cfg, size, rng)?)
        }
    }
}
