//! The built-in synthetic detection dataset `synthetic[:N][@SEED]` (no ultralytics equivalent; it is written out
//! in the ultralytics layout by [`write_ultralytics`] so that ultralytics can train/validate on identical pixels).
//!
//! * `synthetic` = `synthetic:1000@0`; `synthetic:N` = N training images, seed 0; `synthetic:N@S` seed S.
//! * `synthetic-easy[:N][@SEED]`: the same with [`Recipe::Easy`] (3 classes, large objects, plain backgrounds):
//!   what a model learns from scratch in minutes on a CPU.
//! * Training split: images `0..N` of split 0. Validation split: `max(1, N / 5)` images of split 1 — the same
//!   dataset seed with a different derived image seed ([`image_rng`]), so no validation image equals a training one.
//! * Classes: [`Recipe::names`] (8 [`CLASS_NAMES`], or their first 3 for the easy recipe). Image `i` is a pure function of `(seed, split, i)`, see [`render`] for the
//!   recipe and the occlusion rule.

mod raster;
mod render;

use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub use raster::{Shape, Span};
pub use render::{
    image_rng, render, render_recipe, render_with_mask, Recipe, Rendered, CLASS_NAMES, EASY_CLASSES, KEEP_FRACTION,
    MIN_VISIBLE,
};

use crate::labels::Labels;
use crate::scan::write_atomic;
use crate::DataError;

/// Split index of the training split in [`image_rng`].
pub const TRAIN_SPLIT: u32 = 0;
/// Split index of the validation split in [`image_rng`].
pub const VAL_SPLIT: u32 = 1;

/// A parsed `synthetic[-easy][:N][@SEED]` spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticSpec {
    /// Which dataset (`synthetic` or `synthetic-easy`).
    pub recipe: Recipe,
    /// Training images.
    pub n: usize,
    /// Dataset seed (`@SEED`, default 0).
    pub seed: u64,
}

impl SyntheticSpec {
    /// Training images of a bare `synthetic`.
    pub const DEFAULT_N: usize = 1000;

    /// Parse `synthetic`, `synthetic:N`, `synthetic@S`, `synthetic:N@S` and the same with `synthetic-easy`.
    /// `Ok(None)` when `s` is not a synthetic spec (does not start with `synthetic` or `synthetic-easy` followed by
    /// nothing, `:` or `@`); an error for a malformed one.
    pub fn parse(s: &str) -> Result<Option<Self>, DataError> {
        let (recipe, rest) = match (s.strip_prefix("synthetic-easy"), s.strip_prefix("synthetic")) {
            (Some(rest), _) => (Recipe::Easy, rest),
            (None, Some(rest)) => (Recipe::Full, rest),
            (None, None) => return Ok(None),
        };
        if !(rest.is_empty() || rest.starts_with(':') || rest.starts_with('@')) {
            return Ok(None);
        }
        let bad = |what: &str| {
            DataError::Spec(format!(
                "'{s}': {what}; expected synthetic[-easy][:N][@SEED], e.g. synthetic:500@7 or synthetic-easy:400"
            ))
        };
        let (n_part, seed_part) = match rest.split_once('@') {
            Some((a, b)) => (a, Some(b)),
            None => (rest, None),
        };
        let n = match n_part.strip_prefix(':') {
            Some(n) => n.parse::<usize>().map_err(|_| bad("N is not a positive integer"))?,
            None if n_part.is_empty() => Self::DEFAULT_N,
            None => return Err(bad("unexpected text before '@'")),
        };
        if n == 0 {
            return Err(bad("N must be at least 1"));
        }
        let seed = match seed_part {
            Some(p) => p.parse::<u64>().map_err(|_| bad("SEED is not an unsigned integer"))?,
            None => 0,
        };
        Ok(Some(Self { recipe, n, seed }))
    }

    /// Validation images: `max(1, n / 5)`.
    pub fn val_n(&self) -> usize {
        (self.n / 5).max(1)
    }
}

/// `(width, height, boxes, classes)` of a written image.
type WrittenImage = (u32, u32, Vec<[u32; 4]>, Vec<u32>);

/// Normalised labels of a rendered image (`cx = (x1 + x2) / 2 / w` etc., computed in f64, stored as f32).
pub fn labels_of(r: &Rendered) -> Labels {
    let (w, h) = (r.img.width() as f64, r.img.height() as f64);
    Labels { cls: r.cls.clone(), boxes: r.boxes.iter().map(|b| xywhn(b, w, h).map(|v| v as f32)).collect() }
}

fn xywhn(b: &[u32; 4], w: f64, h: f64) -> [f64; 4] {
    let [x1, y1, x2, y2] = b.map(f64::from);
    [(x1 + x2) / 2.0 / w, (y1 + y2) / 2.0 / h, (x2 - x1) / w, (y2 - y1) / h]
}

/// The label file text of a rendered image: `class cx cy w h` with 6 decimals per value, one object per line.
pub fn label_text(r: &Rendered) -> String {
    let (w, h) = (r.img.width() as f64, r.img.height() as f64);
    let mut s = String::new();
    for (b, c) in r.boxes.iter().zip(&r.cls) {
        let v = xywhn(b, w, h);
        s += &format!("{c} {:.6} {:.6} {:.6} {:.6}\n", v[0], v[1], v[2], v[3]);
    }
    s
}

fn png_bytes(img: &image::RgbImage, path: &Path) -> Result<Vec<u8>, DataError> {
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    use image::ImageEncoder;
    let mut out = Vec::new();
    PngEncoder::new_with_quality(&mut out, CompressionType::Fast, FilterType::Adaptive)
        .write_image(img.as_raw(), img.width(), img.height(), image::ExtendedColorType::Rgb8)
        .map_err(|e| DataError::Decode { path: path.to_path_buf(), msg: format!("PNG encoding failed: {e}") })?;
    Ok(out)
}

fn mkdir(p: &Path) -> Result<(), DataError> {
    std::fs::create_dir_all(p).map_err(|e| DataError::io(p, e))
}

/// Write the synthetic dataset in the ultralytics layout under `out_dir` and return the `data.yaml` path:
/// `images/{train,val}/NNNNNN.png` (lossless PNG: ultralytics decodes identical pixels), `labels/{train,val}/
/// NNNNNN.txt` ([`label_text`]), `data.yaml` (`path` = the absolute `out_dir`, `train: images/train`,
/// `val: images/val`, `names` as a dict), and `val_coco.json` (COCO instances of the val split: image id = the
/// file's index `0..`, i.e. `int(stem)` as ultralytics' and our `--save-json` name images, `file_name` `NNNNNN.png`, category ids `1..=nc`, `bbox` = `[x1, y1, w, h]` pixels of the tight box,
/// `area = w * h`, `iscrowd = 0`). Train images are split 0 indices `0..train_n`, val images split 1 indices
/// `0..val_n`, so `write_ultralytics(dir, Recipe::Full, n, max(1, n / 5), s)` holds exactly the images of
/// `synthetic:n@s` (`Recipe::Easy`: of `synthetic-easy:n@s`, with its 3 class names).
/// Every file is written atomically; rendering and encoding run in parallel (rayon).
pub fn write_ultralytics(
    out_dir: &Path,
    recipe: Recipe,
    train_n: usize,
    val_n: usize,
    seed: u64,
) -> Result<PathBuf, DataError> {
    mkdir(out_dir)?;
    let root = std::fs::canonicalize(out_dir).map_err(|e| DataError::io(out_dir, e))?;
    let mut coco_images = Vec::new();
    let mut coco_anns = Vec::new();
    for (split_name, split, n) in [("train", TRAIN_SPLIT, train_n), ("val", VAL_SPLIT, val_n)] {
        let (idir, ldir) = (root.join("images").join(split_name), root.join("labels").join(split_name));
        mkdir(&idir)?;
        mkdir(&ldir)?;
        let metas = (0..n)
            .into_par_iter()
            .map(|i| -> Result<WrittenImage, DataError> {
                let r = render_recipe(recipe, seed, split, i as u64);
                let ip = idir.join(format!("{i:06}.png"));
                write_atomic(&ip, &png_bytes(&r.img, &ip)?).map_err(|e| DataError::io(&ip, e))?;
                let lp = ldir.join(format!("{i:06}.txt"));
                write_atomic(&lp, label_text(&r).as_bytes()).map_err(|e| DataError::io(&lp, e))?;
                Ok((r.img.width(), r.img.height(), r.boxes, r.cls))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if split == VAL_SPLIT {
            for (i, (w, h, boxes, cls)) in metas.into_iter().enumerate() {
                coco_images
                    .push(serde_json::json!({"id": i, "file_name": format!("{i:06}.png"), "width": w, "height": h}));
                for (b, c) in boxes.iter().zip(&cls) {
                    let (bw, bh) = (b[2] - b[0], b[3] - b[1]);
                    coco_anns.push(serde_json::json!({
                        "id": coco_anns.len() + 1, "image_id": i, "category_id": c + 1,
                        "bbox": [b[0], b[1], bw, bh], "area": bw * bh, "iscrowd": 0,
                    }));
                }
            }
        }
    }
    let cats: Vec<_> =
        recipe.names().iter().enumerate().map(|(i, n)| serde_json::json!({"id": i + 1, "name": n})).collect();
    let coco = serde_json::json!({"images": coco_images, "annotations": coco_anns, "categories": cats});
    let cp = root.join("val_coco.json");
    let bytes = serde_json::to_vec(&coco).map_err(|e| DataError::Json { path: cp.clone(), msg: e.to_string() })?;
    write_atomic(&cp, &bytes).map_err(|e| DataError::io(&cp, e))?;
    let root_str = root.to_str().ok_or_else(|| DataError::Spec(format!("{}: path is not UTF-8", root.display())))?;
    let mut yaml = format!(
        "# {} dataset, seed {seed}, {train_n} train / {val_n} val images (yolo26-data write_ultralytics)\n\
         path: {}\ntrain: images/train\nval: images/val\nnames:\n",
        recipe.name(),
        serde_json::to_string(root_str).map_err(|e| DataError::Spec(e.to_string()))?
    );
    for (i, n) in recipe.names().iter().enumerate() {
        yaml += &format!("  {i}: {n}\n");
    }
    let yp = root.join("data.yaml");
    write_atomic(&yp, yaml.as_bytes()).map_err(|e| DataError::io(&yp, e))?;
    Ok(yp)
}
