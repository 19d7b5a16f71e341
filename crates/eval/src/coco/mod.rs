//! A COCO bbox evaluator equal to `pycocotools.cocoeval.COCOeval(cocoGt, cocoDt, iouType='bbox')` of
//! pycocotools 2.0.11: `evaluate()`, `accumulate()`, `summarize()`.

mod eval;
mod json;
mod params;
mod summary;

use std::path::Path;

pub use eval::{bbox_iou_xywh, Accumulated};
pub use json::{CocoAnnotation, CocoCategory, CocoDetection, CocoDets, CocoGt, CocoId};
pub use params::Params;
pub use summary::StatsJson;

use crate::error::EvalError;

/// Per-category AP, the usual reading of `eval['precision'][:, :, k, 0, -1]` (area `all`, the largest maxDets).
#[derive(Clone, Debug, PartialEq)]
pub struct CategoryAp {
    /// The category id.
    pub id: CocoId,
    /// The category name from the ground truth.
    pub name: String,
    /// `mean(precision[:, :, k, 0, -1][> -1])`, AP@[.50:.95]; `-1` when the category has no (non-crowd) ground truth.
    pub ap: f64,
    /// `mean(precision[0, :, k, 0, -1][> -1])`, AP@.50; `-1` when undefined.
    pub ap50: f64,
}

/// The outcome of [`evaluate`]: what `COCOeval` holds after `evaluate(); accumulate(); summarize()`.
#[derive(Clone, Debug)]
pub struct CocoEval {
    /// The parameters used (`COCOeval.params`), with `img_ids`/`cat_ids` filled in, sorted and unique, and
    /// `max_dets` sorted.
    pub params: Params,
    /// `COCOeval.eval`: precision / recall / scores arrays.
    pub accumulated: Accumulated,
    /// `COCOeval.stats` (the 12 numbers of `summarize()`).
    pub stats: [f64; 12],
    /// Per-category AP (area `all`, maxDets 100), in `params.cat_ids` order.
    pub per_category: Vec<CategoryAp>,
    /// Detections whose `category_id` is not a ground-truth category. pycocotools ignores them silently; this
    /// count lets a caller warn about a wrong class-id mapping.
    pub n_dets_unknown_category: usize,
    lines: Vec<String>,
}

impl CocoEval {
    /// The 12 lines `COCOeval.summarize()` prints, joined with `\n` (with a trailing newline), e.g.
    /// ` Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.123`.
    pub fn summary_text(&self) -> String {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s
    }

    /// The 12 stats under the names `map, map50, map75, map_small, map_medium, map_large, mar_1, mar_10, mar_100,
    /// mar_small, mar_medium, mar_large`, in that order.
    pub fn stats_struct(&self) -> StatsJson {
        StatsJson::from(self.stats)
    }

    /// [`CocoEval::stats_struct`] as a JSON object (keys in the order above).
    pub fn stats_json(&self) -> String {
        // Serialising a struct of f64 cannot fail (non-finite values become null).
        serde_json::to_string_pretty(&self.stats_struct()).unwrap_or_default()
    }
}

/// Runs `COCOeval(gt, dt, 'bbox')` with `params`: `evaluate()`, `accumulate()`, `summarize()`.
///
/// Errors when a detection's image is not a ground-truth image (pycocotools' `loadRes` asserts), when
/// `params.max_dets` has fewer than 3 entries (`summarize()` reads `maxDets[0..3]`) or when the area range lists
/// differ in length.
pub fn evaluate(gt: &CocoGt, dets: &CocoDets, params: &Params) -> Result<CocoEval, EvalError> {
    if params.max_dets.len() < 3 {
        return Err(EvalError::invalid("Params.max_dets needs 3 entries (summarize() reads maxDets[0..3])"));
    }
    let run = eval::run(gt, dets, params)?;
    let mut p = params.clone();
    p.max_dets = run.max_dets.clone();
    p.img_ids = Some(run.img_ids.clone());
    p.cat_ids = Some(run.cat_ids.clone());
    let (stats, lines) = summary::summarize_dets(&run.acc, &p, &run.max_dets);
    let acc = &run.acc;
    let [t_n, r_n, _, _, m_n] = acc.counts;
    let per_category = run
        .cat_ids
        .iter()
        .enumerate()
        .map(|(k, id)| {
            let pick = |ts: std::ops::Range<usize>| {
                let v: Vec<f64> = ts
                    .flat_map(|t| (0..r_n).map(move |r| (t, r)))
                    .map(|(t, r)| acc.precision[acc.p_index(t, r, k, 0, m_n - 1)])
                    .filter(|&v| v > -1.0)
                    .collect();
                if v.is_empty() {
                    -1.0
                } else {
                    crate::numpy::mean(&v)
                }
            };
            CategoryAp { id: id.clone(), name: gt.category_name(id).to_string(), ap: pick(0..t_n), ap50: pick(0..1) }
        })
        .collect();
    Ok(CocoEval {
        params: p,
        accumulated: run.acc,
        stats,
        per_category,
        n_dets_unknown_category: run.n_dets_unknown_category,
        lines,
    })
}

/// One call for `yolo26 eval --gt instances.json --dt detections.json`: reads both files and runs [`evaluate`]
/// with the default [`Params`] (`COCO(gt)`, `cocoGt.loadRes(dt)`, `COCOeval(..., 'bbox')`).
pub fn eval_files(gt: &Path, dt: &Path) -> Result<CocoEval, EvalError> {
    let g = CocoGt::from_json_file(gt)?;
    let d = CocoDets::from_json_file(dt)?;
    evaluate(&g, &d, &Params::default())
}
