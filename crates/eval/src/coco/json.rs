//! Reading COCO instances JSON (ground truth) and COCO results JSON (detections).
//!
//! Layouts (the subset pycocotools 2.0.11 reads for `iouType='bbox'`; other keys are ignored):
//! - ground truth (`pycocotools.coco.COCO(annotation_file)`): `{"images": [{"id"}], "annotations": [{"id",
//!   "image_id", "category_id", "bbox": [x, y, w, h], "area", "iscrowd"}], "categories": [{"id", "name"}]}`;
//! - detections (`COCO.loadRes(resFile)`, as written by ultralytics' `save_json`): `[{"image_id", "category_id",
//!   "bbox": [x, y, w, h], "score"}]`.

use std::collections::HashSet;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::EvalError;

/// An image / category / annotation id. COCO uses integers; ultralytics' `save_json` writes the image file stem as a
/// string when it is not numeric, which pycocotools accepts too. Ids of one kind must not mix integers and strings
/// (Python's `sorted()` would raise `TypeError`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CocoId {
    /// An integer id.
    Int(i64),
    /// A string id.
    Str(String),
}

impl std::fmt::Display for CocoId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CocoId::Int(i) => write!(f, "{i}"),
            CocoId::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// `iscrowd` as pycocotools reads it (`int(o['iscrowd'])`): an integer or a boolean; non-zero means crowd.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(untagged)]
enum Flag {
    Int(i64),
    Bool(bool),
}

impl Flag {
    fn is_set(self) -> bool {
        match self {
            Flag::Int(i) => i != 0,
            Flag::Bool(b) => b,
        }
    }
}

/// One ground-truth annotation (an element of `annotations`).
#[derive(Clone, Debug, PartialEq)]
pub struct CocoAnnotation {
    /// `id`. pycocotools stores it as the match id: an annotation with id 0 is matched but then counted as a false
    /// positive (its quirk, reproduced).
    pub id: CocoId,
    /// `image_id`.
    pub image_id: CocoId,
    /// `category_id`.
    pub category_id: CocoId,
    /// `bbox` as `[x, y, w, h]` (top-left corner, width, height), used for the IoU.
    pub bbox: [f64; 4],
    /// `area` (the segmentation area in COCO), used for the area ranges, not `w * h`.
    pub area: f64,
    /// `iscrowd != 0`. Crowd annotations are ignored (`gt['ignore'] = gt['iscrowd']`; a file's own `ignore` key is
    /// overwritten by pycocotools and therefore not read).
    pub iscrowd: bool,
}

/// One category (an element of `categories`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CocoCategory {
    /// `id`.
    pub id: CocoId,
    /// `name` (empty when absent).
    #[serde(default)]
    pub name: String,
}

/// A COCO ground-truth set, the part of `pycocotools.coco.COCO` that `COCOeval(iouType='bbox')` reads.
#[derive(Clone, Debug, Default)]
pub struct CocoGt {
    /// `images[*].id`, in file order.
    pub images: Vec<CocoId>,
    /// `annotations`, in file order.
    pub annotations: Vec<CocoAnnotation>,
    /// `categories`, in file order.
    pub categories: Vec<CocoCategory>,
}

/// One detection of a results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CocoDetection {
    /// `image_id`; must be one of the ground truth's images.
    pub image_id: CocoId,
    /// `category_id`.
    pub category_id: CocoId,
    /// `bbox` as `[x, y, w, h]`; its area for the area ranges is `w * h` (as `COCO.loadRes` sets `ann['area']`).
    pub bbox: [f64; 4],
    /// `score`.
    pub score: f64,
}

/// A COCO results list (`COCO.loadRes`' input), in file order. The detection at index `i` gets id `i + 1`.
#[derive(Clone, Debug, Default)]
pub struct CocoDets {
    /// The detections, in file order (ties in score keep this order, as pycocotools' stable sort does).
    pub dets: Vec<CocoDetection>,
}

#[derive(Deserialize)]
struct RawAnn {
    id: CocoId,
    image_id: CocoId,
    category_id: CocoId,
    bbox: [f64; 4],
    area: f64,
    iscrowd: Flag,
}

#[derive(Deserialize)]
struct RawImage {
    id: CocoId,
}

#[derive(Deserialize)]
struct RawGt {
    images: Vec<serde_json::Value>,
    annotations: Vec<serde_json::Value>,
    categories: Vec<serde_json::Value>,
}

fn read(path: &Path) -> Result<Vec<u8>, EvalError> {
    std::fs::read(path).map_err(|source| EvalError::Io { path: path.to_path_buf(), source })
}

fn elements<T: DeserializeOwned>(what: &str, key: &str, values: Vec<serde_json::Value>) -> Result<Vec<T>, EvalError> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            serde_json::from_value(v).map_err(|source| EvalError::Json { what: format!("{what}: {key}[{i}]"), source })
        })
        .collect()
}

/// Errors when ids of one kind mix integers and strings (Python cannot sort them).
fn check_id_kinds<'a>(what: &str, key: &str, ids: impl Iterator<Item = &'a CocoId>) -> Result<(), EvalError> {
    let mut kind: Option<bool> = None;
    for (i, id) in ids.enumerate() {
        let is_int = matches!(id, CocoId::Int(_));
        match kind {
            None => kind = Some(is_int),
            Some(k) if k != is_int => {
                return Err(EvalError::invalid(format!("{what}: {key}[{i}] = {id} mixes integer and string ids")))
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_finite(what: &str, key: &str, i: usize, field: &str, vals: &[f64]) -> Result<(), EvalError> {
    if vals.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(EvalError::invalid(format!("{what}: {key}[{i}].{field} = {vals:?} is not finite")))
    }
}

impl CocoGt {
    /// Parses a COCO instances JSON document (`pycocotools.coco.COCO(annotation_file)`). `what` names the source in
    /// errors (e.g. the file name).
    ///
    /// Errors: malformed JSON, a missing or mistyped key (naming `annotations[i]` etc.), non-finite numbers, mixed
    /// integer/string ids, duplicate annotation ids (pycocotools would silently evaluate the last duplicate twice),
    /// and annotations whose image or category is not listed (pycocotools would silently drop them).
    pub fn from_json_bytes(bytes: &[u8], what: &str) -> Result<Self, EvalError> {
        let raw: RawGt =
            serde_json::from_slice(bytes).map_err(|source| EvalError::Json { what: what.to_string(), source })?;
        let images: Vec<RawImage> = elements(what, "images", raw.images)?;
        let images: Vec<CocoId> = images.into_iter().map(|i| i.id).collect();
        let categories: Vec<CocoCategory> = elements(what, "categories", raw.categories)?;
        let anns: Vec<RawAnn> = elements(what, "annotations", raw.annotations)?;
        check_id_kinds(what, "images", images.iter())?;
        check_id_kinds(what, "categories", categories.iter().map(|c| &c.id))?;
        let image_set: HashSet<&CocoId> = images.iter().collect();
        let cat_set: HashSet<&CocoId> = categories.iter().map(|c| &c.id).collect();
        let mut ann_ids = HashSet::new();
        let mut annotations = Vec::with_capacity(anns.len());
        for (i, a) in anns.into_iter().enumerate() {
            check_finite(what, "annotations", i, "bbox", &a.bbox)?;
            check_finite(what, "annotations", i, "area", &[a.area])?;
            if !image_set.contains(&a.image_id) {
                return Err(EvalError::invalid(format!(
                    "{what}: annotations[{i}].image_id = {} is not in `images`",
                    a.image_id
                )));
            }
            if !cat_set.contains(&a.category_id) {
                return Err(EvalError::invalid(format!(
                    "{what}: annotations[{i}].category_id = {} is not in `categories`",
                    a.category_id
                )));
            }
            if !ann_ids.insert(a.id.clone()) {
                return Err(EvalError::invalid(format!("{what}: annotations[{i}].id = {} is a duplicate", a.id)));
            }
            annotations.push(CocoAnnotation {
                id: a.id,
                image_id: a.image_id,
                category_id: a.category_id,
                bbox: a.bbox,
                area: a.area,
                iscrowd: a.iscrowd.is_set(),
            });
        }
        Ok(CocoGt { images, annotations, categories })
    }

    /// Reads and parses a COCO instances JSON file (see [`CocoGt::from_json_bytes`]).
    pub fn from_json_file(path: &Path) -> Result<Self, EvalError> {
        Self::from_json_bytes(&read(path)?, &path.display().to_string())
    }

    /// The category name of an id (empty string if unknown).
    pub fn category_name(&self, id: &CocoId) -> &str {
        self.categories.iter().find(|c| &c.id == id).map(|c| c.name.as_str()).unwrap_or("")
    }
}

impl CocoDets {
    /// Parses a COCO results JSON list. `what` names the source in errors.
    ///
    /// Errors: malformed JSON, not a list, a missing or mistyped key (naming the index), non-finite bbox or score.
    /// An empty list is accepted (pycocotools' `loadRes` crashes on it; here it evaluates to AP 0).
    pub fn from_json_bytes(bytes: &[u8], what: &str) -> Result<Self, EvalError> {
        let dets: Vec<CocoDetection> = match serde_json::from_slice(bytes) {
            Ok(d) => d,
            Err(e) => {
                // Re-parse loosely to report which element is wrong.
                let values: Vec<serde_json::Value> =
                    serde_json::from_slice(bytes).map_err(|_| EvalError::Json { what: what.to_string(), source: e })?;
                elements(what, "detections", values)?
            }
        };
        for (i, d) in dets.iter().enumerate() {
            check_finite(what, "detections", i, "bbox", &d.bbox)?;
            check_finite(what, "detections", i, "score", &[d.score])?;
        }
        check_id_kinds(what, "detections image_id", dets.iter().map(|d| &d.image_id))?;
        Ok(CocoDets { dets })
    }

    /// Reads and parses a COCO results JSON file (see [`CocoDets::from_json_bytes`]).
    pub fn from_json_file(path: &Path) -> Result<Self, EvalError> {
        Self::from_json_bytes(&read(path)?, &path.display().to_string())
    }
}
