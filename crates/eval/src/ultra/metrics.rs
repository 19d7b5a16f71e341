//! `ultralytics.utils.metrics.Metric` / `DetMetrics` summaries (ultralytics 8.4.190) and a stats accumulator that
//! mirrors `DetectionValidator.update_metrics` + `get_stats`.

use serde::Serialize;

use crate::numpy::pairwise_sum;
use crate::ultra::ap::{ap_per_class, ApPerClass};
use crate::ultra::matching::{process_batch, Xyxy, NIOU};

/// `Metric` after `DetMetrics.process()`: the `ap_per_class` results plus the summaries ultralytics prints.
#[derive(Clone, Debug)]
pub struct DetMetrics {
    /// The raw `ap_per_class` outputs.
    pub results: ApPerClass,
    /// Number of class names (`len(model.names)`), for [`DetMetrics::maps`].
    pub nc_names: usize,
    /// `np.bincount(target_cls, minlength=nc_names)`: targets per class.
    pub nt_per_class: Vec<usize>,
}

/// `DetMetrics.results_dict` (the keys ultralytics logs), serialised in this order.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ResultsDict {
    /// `metrics/precision(B)` = `Metric.mp`.
    #[serde(rename = "metrics/precision(B)")]
    pub precision: f64,
    /// `metrics/recall(B)` = `Metric.mr`.
    #[serde(rename = "metrics/recall(B)")]
    pub recall: f64,
    /// `metrics/mAP50(B)` = `Metric.map50`.
    #[serde(rename = "metrics/mAP50(B)")]
    pub map50: f64,
    /// `metrics/mAP50-95(B)` = `Metric.map`.
    #[serde(rename = "metrics/mAP50-95(B)")]
    pub map: f64,
    /// `fitness` = `Metric.fitness()`.
    pub fitness: f64,
}

fn mean_or_zero(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        pairwise_sum(v) / v.len() as f64
    }
}

impl DetMetrics {
    /// `Metric.mp`: mean precision over classes (0 without classes).
    pub fn mp(&self) -> f64 {
        mean_or_zero(&self.results.p)
    }
    /// `Metric.mr`: mean recall over classes.
    pub fn mr(&self) -> f64 {
        mean_or_zero(&self.results.r)
    }
    /// `Metric.map50`: mean of `all_ap[:, 0]`.
    pub fn map50(&self) -> f64 {
        mean_or_zero(&self.results.ap.iter().map(|a| a[0]).collect::<Vec<_>>())
    }
    /// `Metric.map75`: mean of `all_ap[:, 5]`.
    pub fn map75(&self) -> f64 {
        mean_or_zero(&self.results.ap.iter().map(|a| a[5]).collect::<Vec<_>>())
    }
    /// `Metric.map`: mean of all of `all_ap` (mAP50-95).
    pub fn map(&self) -> f64 {
        mean_or_zero(&self.results.ap.iter().flatten().copied().collect::<Vec<_>>())
    }
    /// `Metric.ap50`: `all_ap[:, 0]` per class.
    pub fn ap50(&self) -> Vec<f64> {
        self.results.ap.iter().map(|a| a[0]).collect()
    }
    /// `Metric.ap`: `all_ap.mean(1)` per class (AP50-95).
    pub fn ap(&self) -> Vec<f64> {
        self.results.ap.iter().map(|a| pairwise_sum(a) / NIOU as f64).collect()
    }
    /// `Metric.maps`: per class-name AP50-95, `map` for classes without targets (long enough for every target class,
    /// where numpy would raise an IndexError for a class `>= nc`).
    pub fn maps(&self) -> Vec<f64> {
        let m = self.map();
        let n = self.results.unique_classes.iter().map(|&c| c + 1).max().unwrap_or(0).max(self.nc_names);
        let mut maps = vec![m; n];
        for (&c, a) in self.results.unique_classes.iter().zip(self.ap()) {
            if c < maps.len() {
                maps[c] = a;
            }
        }
        maps
    }
    /// `Metric.mean_results()`: `[mp, mr, map50, map]`.
    pub fn mean_results(&self) -> [f64; 4] {
        [self.mp(), self.mr(), self.map50(), self.map()]
    }
    /// `Metric.fitness()` of 8.4.190: `sum(nan_to_num([mp, mr, map50, map]) * [0, 0, 0, 1])`, i.e. mAP50-95.
    pub fn fitness(&self) -> f64 {
        let w = [0.0, 0.0, 0.0, 1.0];
        let terms: Vec<f64> = self
            .mean_results()
            .iter()
            .zip(w)
            .map(|(&v, w)| if v.is_nan() { 0.0 } else if v.is_infinite() { v.signum() * f64::MAX } else { v } * w)
            .collect();
        pairwise_sum(&terms)
    }
    /// `DetMetrics.results_dict`.
    pub fn results_dict(&self) -> ResultsDict {
        let [precision, recall, map50, map] = self.mean_results();
        ResultsDict { precision, recall, map50, map, fitness: self.fitness() }
    }
}

/// One prediction as the validator sees it after NMS (`predn`): box, confidence (float32) and class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// `[x1, y1, x2, y2]` in the validator's (letterboxed) pixel space.
    pub bbox: Xyxy,
    /// Confidence.
    pub conf: f32,
    /// Class index.
    pub cls: usize,
}

/// One ground-truth box (`pbatch['bboxes']`, `pbatch['cls']`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    /// `[x1, y1, x2, y2]` in the same pixel space as the predictions.
    pub bbox: Xyxy,
    /// Class index.
    pub cls: usize,
}

/// `DetMetrics.stats` accumulated image by image, as `DetectionValidator.update_metrics` does.
#[derive(Clone, Debug, Default)]
pub struct DetStats {
    /// `stats['tp']`.
    pub tp: Vec<[bool; NIOU]>,
    /// `stats['conf']` (float32 values widened).
    pub conf: Vec<f64>,
    /// `stats['pred_cls']`.
    pub pred_cls: Vec<usize>,
    /// `stats['target_cls']`.
    pub target_cls: Vec<usize>,
}

impl DetStats {
    /// Adds one image: `preds` in descending confidence order (NMS output order).
    pub fn add_image(&mut self, preds: &[Prediction], targets: &[Target]) {
        let pb: Vec<Xyxy> = preds.iter().map(|p| p.bbox).collect();
        let pc: Vec<usize> = preds.iter().map(|p| p.cls).collect();
        let gb: Vec<Xyxy> = targets.iter().map(|t| t.bbox).collect();
        let gc: Vec<usize> = targets.iter().map(|t| t.cls).collect();
        self.tp.extend(process_batch(&pb, &pc, &gb, &gc));
        self.conf.extend(preds.iter().map(|p| p.conf as f64));
        self.pred_cls.extend(pc);
        self.target_cls.extend(gc);
    }

    /// `DetMetrics.process()`: runs `ap_per_class` over everything added; `nc_names = len(names)`.
    pub fn finish(&self, nc_names: usize) -> DetMetrics {
        let results = ap_per_class(&self.tp, &self.conf, &self.pred_cls, &self.target_cls);
        let mut nt_per_class = vec![0usize; nc_names.max(self.target_cls.iter().map(|&c| c + 1).max().unwrap_or(0))];
        for &c in &self.target_cls {
            nt_per_class[c] += 1;
        }
        DetMetrics { results, nc_names, nt_per_class }
    }
}
