//! COCO instances JSON datasets (`--data instances.json --images DIR`), converted in memory as ultralytics
//! `convert_coco(labels_dir, use_segments=False, cls91to80=False)` converts them to label files (8.4.190,
//! `ultralytics/data/converter.py`), except that classes are contiguous in sorted category-id order (not
//! `category_id - 1`) and that boxes are kept in f64→f32 instead of being rounded through `%g` label text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::labels::{check_image, LabelStatus, Labels};
use crate::scan::{ScanRecord, ScanSummary};
use crate::DataError;

#[derive(serde::Deserialize)]
struct CocoFile {
    images: Vec<CocoImage>,
    #[serde(default)]
    annotations: Vec<CocoAnn>,
    categories: Vec<CocoCat>,
}

#[derive(serde::Deserialize)]
struct CocoImage {
    id: i64,
    file_name: String,
    width: f64,
    height: f64,
}

#[derive(serde::Deserialize)]
struct CocoAnn {
    image_id: i64,
    category_id: i64,
    bbox: Vec<f64>,
    #[serde(default)]
    iscrowd: serde_json::Value,
}

#[derive(serde::Deserialize)]
struct CocoCat {
    id: i64,
    name: String,
}

#[derive(serde::Deserialize)]
struct CategoriesOnly {
    categories: Vec<CocoCat>,
}

/// Class names of an instances JSON (categories sorted by id) without looking at the images.
pub fn read_names(json: &Path) -> Result<Vec<String>, DataError> {
    let bytes = std::fs::read(json).map_err(|e| DataError::io(json, e))?;
    let c: CategoriesOnly = serde_json::from_slice(&bytes)
        .map_err(|e| DataError::Json { path: json.to_path_buf(), msg: format!("invalid COCO instances JSON: {e}") })?;
    let mut cats: Vec<(i64, String)> = c.categories.into_iter().map(|c| (c.id, c.name)).collect();
    cats.sort_by_key(|c| c.0);
    Ok(cats.into_iter().map(|c| c.1).collect())
}

/// What a validator needs to write COCO-format detections with the original ids.
#[derive(Clone, Debug, PartialEq)]
pub struct CocoInfo {
    /// The instances JSON.
    pub json: PathBuf,
    /// Original COCO image id of each dataset entry (same order as the entries).
    pub image_ids: Vec<i64>,
    /// `class_to_category[c]` = original `category_id` of contiguous class `c` (sorted by id).
    pub class_to_category: Vec<i64>,
}

/// A COCO split scanned: records (image order of the JSON), class names, ids, summary.
pub(crate) struct CocoScan {
    /// One per JSON image, in JSON order.
    pub records: Vec<ScanRecord>,
    pub ids: Vec<i64>,
    pub names: Vec<String>,
    pub info: CocoInfo,
    pub summary: ScanSummary,
}

fn truthy(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => false,
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        serde_json::Value::String(s) => !s.is_empty(),
        serde_json::Value::Array(a) => !a.is_empty(),
        serde_json::Value::Object(o) => !o.is_empty(),
    }
}

/// Read `json` and check every image under `images_dir` (parallel, rayon). Per annotation, as ultralytics'
/// converter: `iscrowd` annotations are left out (counted in [`ScanSummary::crowd`]); the box `[x, y, w, h]`
/// (top-left, pixels) becomes `[x + w/2, y + h/2, w, h]` divided by the JSON image `width`/`height` (f64); boxes
/// with a normalised width or height `<= 0` are dropped ([`ScanSummary::zero_size`]). An image without
/// annotations is a background image; an image that is missing or cannot be decoded is skipped as corrupt.
/// Errors: unreadable JSON, an annotation naming an unknown image or category, a `bbox` without 4 numbers, a
/// duplicate image or category id, an image with a non-positive size.
pub(crate) fn scan_coco(json: &Path, images_dir: &Path) -> Result<CocoScan, DataError> {
    let jerr = |msg: String| DataError::Json { path: json.to_path_buf(), msg };
    let bytes = std::fs::read(json).map_err(|e| DataError::io(json, e))?;
    let data: CocoFile =
        serde_json::from_slice(&bytes).map_err(|e| jerr(format!("invalid COCO instances JSON: {e}")))?;
    let mut cats: Vec<(i64, String)> = data.categories.into_iter().map(|c| (c.id, c.name)).collect();
    cats.sort_by_key(|c| c.0);
    if let Some(w) = cats.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(jerr(format!("category id {} appears twice in 'categories'", w[0].0)));
    }
    if cats.is_empty() {
        return Err(jerr("'categories' is empty".into()));
    }
    let cat_to_class: HashMap<i64, u32> = cats.iter().enumerate().map(|(i, c)| (c.0, i as u32)).collect();
    let mut index: HashMap<i64, usize> = HashMap::with_capacity(data.images.len());
    for (i, im) in data.images.iter().enumerate() {
        if index.insert(im.id, i).is_some() {
            return Err(jerr(format!("image id {} appears twice in 'images'", im.id)));
        }
        if !(im.width > 0.0 && im.height > 0.0) {
            return Err(jerr(format!(
                "image id {} ({}) has width/height {}x{}",
                im.id, im.file_name, im.width, im.height
            )));
        }
    }
    let mut labels = vec![Labels::default(); data.images.len()];
    let mut summary = ScanSummary::default();
    for (k, a) in data.annotations.iter().enumerate() {
        let &i = index
            .get(&a.image_id)
            .ok_or_else(|| jerr(format!("annotation {k}: image_id {} is not in 'images'", a.image_id)))?;
        let &c = cat_to_class
            .get(&a.category_id)
            .ok_or_else(|| jerr(format!("annotation {k}: category_id {} is not in 'categories'", a.category_id)))?;
        if truthy(&a.iscrowd) {
            summary.crowd += 1;
            continue;
        }
        let [x, y, bw, bh] = <[f64; 4]>::try_from(a.bbox.as_slice())
            .map_err(|_| jerr(format!("annotation {k}: 'bbox' must have 4 numbers, has {}", a.bbox.len())))?;
        let (w, h) = (data.images[i].width, data.images[i].height);
        let b = [(x + bw / 2.0) / w, (y + bh / 2.0) / h, bw / w, bh / h];
        if b[2] <= 0.0 || b[3] <= 0.0 {
            summary.zero_size += 1;
            continue;
        }
        labels[i].cls.push(c);
        labels[i].boxes.push(b.map(|v| v as f32));
    }
    let records: Vec<ScanRecord> = data
        .images
        .par_iter()
        .zip(labels)
        .map(|(im, lb)| {
            let im_file = images_dir.join(&im.file_name);
            let status = if lb.is_empty() { LabelStatus::Missing } else { LabelStatus::Found };
            let mut rec = ScanRecord {
                im_file: im_file.clone(),
                label_file: json.to_path_buf(),
                shape: None,
                labels: lb,
                status,
                corrupt: false,
                duplicates_removed: 0,
                msg: String::new(),
            };
            match check_image(&im_file) {
                Ok(chk) => {
                    rec.shape = Some(chk.shape);
                    let [h, w] = chk.shape;
                    if (w as f64, h as f64) != (im.width, im.height) {
                        rec.msg = format!("image is {w}x{h} but the JSON says {}x{}", im.width, im.height);
                    }
                    if let Some(wm) = chk.warning {
                        rec.msg = if rec.msg.is_empty() { wm } else { format!("{}; {wm}", rec.msg) };
                    }
                }
                Err(e) => {
                    rec.corrupt = true;
                    rec.labels = Labels::default();
                    rec.msg = format!("ignoring corrupt image/label: {e}");
                }
            }
            rec
        })
        .collect();
    for r in &records {
        summary.add(r);
    }
    let ids = data.images.iter().map(|im| im.id).collect();
    let info = CocoInfo {
        json: json.to_path_buf(),
        image_ids: Vec::new(),
        class_to_category: cats.iter().map(|c| c.0).collect(),
    };
    Ok(CocoScan { records, ids, names: cats.into_iter().map(|c| c.1).collect(), info, summary })
}
