//! Evaluation parameters (`pycocotools.cocoeval.Params`, `iouType='bbox'`).

use crate::coco::json::CocoId;
use crate::numpy::linspace;

/// `pycocotools.cocoeval.Params.setDetParams()` (pycocotools 2.0.11), bbox only, `useCats=1`.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// `imgIds`: the images to evaluate; `None` = all ground-truth images (`sorted(cocoGt.getImgIds())`).
    pub img_ids: Option<Vec<CocoId>>,
    /// `catIds`: the categories to evaluate; `None` = all ground-truth categories (`sorted(cocoGt.getCatIds())`).
    pub cat_ids: Option<Vec<CocoId>>,
    /// `iouThrs` = `np.linspace(.5, 0.95, 10)`.
    pub iou_thrs: Vec<f64>,
    /// `recThrs` = `np.linspace(.0, 1.00, 101)`.
    pub rec_thrs: Vec<f64>,
    /// `maxDets` = `[1, 10, 100]` (sorted by `evaluate()`; the largest truncates each image's detections).
    pub max_dets: Vec<usize>,
    /// `areaRng` = `[[0, 1e10], [0, 32²], [32², 96²], [96², 1e10]]` (inclusive bounds, in pixels²).
    pub area_rng: Vec<[f64; 2]>,
    /// `areaRngLbl` = `['all', 'small', 'medium', 'large']`.
    pub area_rng_lbl: Vec<String>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            img_ids: None,
            cat_ids: None,
            iou_thrs: linspace(0.5, 0.95, 10),
            rec_thrs: linspace(0.0, 1.0, 101),
            max_dets: vec![1, 10, 100],
            area_rng: vec![[0.0, 1e5 * 1e5], [0.0, 32.0 * 32.0], [32.0 * 32.0, 96.0 * 96.0], [96.0 * 96.0, 1e5 * 1e5]],
            area_rng_lbl: ["all", "small", "medium", "large"].iter().map(|s| s.to_string()).collect(),
        }
    }
}
