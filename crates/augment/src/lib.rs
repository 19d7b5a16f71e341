//! Ultralytics 8.4 training augmentation on host images, with exact box bookkeeping.
//!
//! This crate reproduces the training transform chain that ultralytics 8.4.190 builds in
//! `ultralytics.data.augment.v8_transforms` (called by `YOLODataset.build_transforms` when `augment=True`), for
//! detection (boxes only: no segments, keypoints, OBB, semantic masks or text labels):
//!
//! ```text
//! Mosaic(p=mosaic) -> RandomPerspective(size=(imgsz, imgsz)) -> MixUp(p=mixup) -> CutMix(p=cutmix)
//!   -> [Albumentations: a no-op without the albumentations package] -> RandomHSV -> RandomFlip(vertical, p=flipud)
//!   -> RandomFlip(horizontal, p=fliplr) -> Format(bgr=bgr)
//! ```
//!
//! # Public API
//!
//! * [`Sample`] `{ img: RgbImage, boxes: Vec<[f32; 4]>, cls: Vec<u32> }`: one labelled image, boxes `xyxy` in
//!   pixels of `img` (ultralytics `labels["img"]` + `labels["instances"]` in `xyxy`, `normalized=False` +
//!   `labels["cls"]`). [`Sample::from_normalized_xywh`] builds one from YOLO label rows exactly as ultralytics
//!   denormalises them.
//! * [`load_resize(img, imgsz) -> Result<Loaded, AugmentError>`](load_resize): `BaseDataset.load_image`'s resize
//!   (long side to `imgsz`, `math.ceil`, `cv2.INTER_LINEAR`), with the per-axis scale for the boxes.
//! * [`AugmentConfig`]: the augmentation hyper-parameters of `ultralytics/cfg/default.yaml` (`Default`, serde).
//! * [`SampleSource`] (`len`, `load(index) -> Result<Sample, Self::Error>`, `load_shared` for an `Arc`,
//!   `mosaic_partner` for the mosaic partner policy) and
//!   [`TrainTransform`] `{ cfg, imgsz }` with
//!   [`TrainTransform::apply(&self, src, index, rng) -> Result<Sample, S::Error>`](TrainTransform::apply): the
//!   whole `v8_transforms` pipeline for one dataset item, deterministic for a given `ChaCha8Rng` state.
//! * The individual transforms: [`mosaic4`], [`mosaic_center`], [`random_perspective`], [`perspective_params`],
//!   [`perspective_matrix`], [`random_perspective_with`], [`apply_bboxes`], [`box_candidates`], [`random_hsv`],
//!   [`hsv_gains`], [`bgr_to_hsv`], [`hsv_to_bgr`], [`flip_lr`], [`flip_ud`], [`letterbox_sample`], [`mixup`],
//!   [`cutmix`], [`warp_affine`], [`warp_perspective`].
//! * [`plot_batch`] / [`render_batch`]: a labelled image grid like ultralytics' `plot_images` (`train_batch0.jpg`).
//!
//! # Layouts and conventions
//!
//! Images are `image::RgbImage`: 8-bit, HWC, **RGB** order (ultralytics works on BGR `np.ndarray`s; only the HSV
//! transform cares, and it swaps the channels internally). Boxes are `f32` like ultralytics' `float32` label arrays,
//! `[x1, y1, x2, y2]` in pixels. Randomness comes from one `rand_chacha::ChaCha8Rng` instead of Python's `random` and
//! NumPy's global generators: the *distributions* and the order of the draws follow ultralytics, the streams cannot.
//!
//! # Differences from ultralytics (documented, deliberate)
//!
//! * Mosaic partners: ultralytics draws the 3 other images from its recent-image buffer (`Mosaic.get_indexes`,
//!   `random.choices(dataset.buffer, k=3)`, buffer of `min(n, 8 * batch, 1000)` recently loaded indices, one per
//!   worker process, so its content depends on worker timing) unless `cache="ram"` (then uniformly over the
//!   dataset). [`TrainTransform::apply`] asks the source ([`SampleSource::mosaic_partner`]): uniform over
//!   `0..src.len()` by default; the data crate's training loader overrides it with a deterministic window of the
//!   epoch order's recent positions (see there). MixUp/CutMix partners are uniform, as ultralytics'
//!   `BaseMixTransform.get_indexes` (`random.randint(0, len(dataset) - 1)`).
//! * The final boxes stay `xyxy`; ultralytics flips in `xywh` and `Format` normalises `xywh`. Converting our `xyxy`
//!   to `xywh` afterwards can differ from ultralytics by one f32 ulp of the coordinate.
pub mod config;
pub mod error;
pub mod flip;
pub mod hsv;
pub mod letterbox;
pub mod load;
pub mod mix;
pub mod mosaic;
pub mod perspective;
pub mod pipeline;
pub mod plot;
pub mod sample;
pub mod warp;

mod fma;

pub use config::AugmentConfig;
pub use error::AugmentError;
pub use flip::{flip_lr, flip_ud, swap_rb};
pub use hsv::{bgr_to_hsv, hsv_gains, hsv_to_bgr, random_hsv, HsvLut};
pub use image::RgbImage;
pub use letterbox::letterbox_sample;
pub use load::{load_resize, Loaded};
pub use mix::{bbox_ioa, cutmix, cutmix_area, mixup};
pub use mosaic::{mosaic4, mosaic4_lazy, mosaic_center, LazyMosaic, MosaicCanvas};
pub use perspective::{
    apply_bboxes, box_candidates, perspective_matrix, perspective_params, random_perspective,
    random_perspective_mosaic, random_perspective_with, PerspectiveParams,
};
pub use pipeline::{SampleSource, TrainTransform};
pub use plot::{plot_batch, render_batch, GridLayout, COLORS};
pub use sample::Sample;
pub use warp::{warp_affine, warp_affine_rows, warp_perspective, RowSource};

/// Ultralytics' padding / border grey (`LetterBox(padding_value=114)`, the `borderValue=(114, 114, 114)` of
/// `RandomPerspective`, the fill of the mosaic canvas).
pub const PAD_VALUE: u8 = 114;
