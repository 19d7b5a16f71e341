//! `ultralytics.utils.metrics.ConfusionMatrix` for `task='detect'` (ultralytics 8.4.190).

use crate::error::EvalError;
use crate::ultra::matching::box_iou;
use crate::ultra::metrics::{Prediction, Target};

/// The default `conf` of `ConfusionMatrix.process_batch` (what prediction uses).
pub const CM_CONF: f32 = 0.25;
/// The `conf` `DetectionValidator` passes to `process_batch` (`args.conf` defaults to 0.001 for validation).
pub const VAL_CONF: f32 = 0.001;
/// The `iou_thres` of `ConfusionMatrix.process_batch`.
pub const CM_IOU: f32 = 0.45;

/// `ConfusionMatrix(names, task='detect')`: `matrix[predicted][true]` of shape `(nc + 1, nc + 1)`, the last row /
/// column being the background (row `nc`: missed targets, column `nc`: false detections).
#[derive(Clone, Debug, PartialEq)]
pub struct ConfusionMatrix {
    /// The number of classes.
    pub nc: usize,
    /// Row-major `(nc + 1) x (nc + 1)` counts, indexed `[predicted * (nc + 1) + true]`.
    pub matrix: Vec<f64>,
}

impl ConfusionMatrix {
    /// An empty matrix for `nc` classes.
    pub fn new(nc: usize) -> Self {
        ConfusionMatrix { nc, matrix: vec![0.0; (nc + 1) * (nc + 1)] }
    }

    /// `matrix[pred][true]`.
    pub fn get(&self, pred: usize, truth: usize) -> f64 {
        self.matrix[pred * (self.nc + 1) + truth]
    }

    fn add(&mut self, pred: usize, truth: usize) {
        let n = self.nc + 1;
        self.matrix[pred * n + truth] += 1.0;
    }

    /// `ConfusionMatrix.process_batch(detections, batch, conf, iou_thres)` for one image.
    ///
    /// Detections with `conf > conf` (float32 comparison) are kept; then, class-agnostic and greedy in descending
    /// confidence (stable), each candidate detection takes the target with its highest IoU (first on ties) if that
    /// IoU `> iou_thres`, and that target is removed. A matched pair counts at `[det class, target class]`,
    /// unmatched targets at `[nc, class]`, unmatched kept detections at `[class, nc]`.
    ///
    /// Errors (leaving the matrix unchanged) when a class is `>= nc`.
    pub fn process_batch(
        &mut self,
        detections: &[Prediction],
        targets: &[Target],
        conf: f32,
        iou_thres: f32,
    ) -> Result<(), EvalError> {
        let nc = self.nc;
        if let Some((i, d)) = detections.iter().enumerate().find(|(_, d)| d.cls >= nc) {
            return Err(EvalError::invalid(format!("confusion matrix: detections[{i}].cls = {} >= nc = {nc}", d.cls)));
        }
        if let Some((i, t)) = targets.iter().enumerate().find(|(_, t)| t.cls >= nc) {
            return Err(EvalError::invalid(format!("confusion matrix: targets[{i}].cls = {} >= nc = {nc}", t.cls)));
        }
        let kept: Vec<&Prediction> = detections.iter().filter(|d| d.conf > conf).collect();
        if targets.is_empty() {
            for d in kept {
                self.add(d.cls, nc);
            }
            return Ok(());
        }
        if detections.is_empty() {
            for t in targets {
                self.add(nc, t.cls);
            }
            return Ok(());
        }
        let gb: Vec<[f32; 4]> = targets.iter().map(|t| t.bbox).collect();
        let db: Vec<[f32; 4]> = kept.iter().map(|d| d.bbox).collect();
        let n = kept.len();
        let mut iou = box_iou(&gb, &db); // [M, N]
        let mut gt_match: Vec<Option<usize>> = vec![None; targets.len()];
        let mut candidates: Vec<usize> =
            (0..n).filter(|&j| (0..targets.len()).any(|g| iou[g * n + j] > iou_thres)).collect();
        candidates.sort_by(|&a, &b| kept[b].conf.partial_cmp(&kept[a].conf).unwrap_or(std::cmp::Ordering::Equal));
        for j in candidates {
            let mut g_best = 0;
            for g in 0..targets.len() {
                if iou[g * n + j] > iou[g_best * n + j] {
                    g_best = g;
                }
            }
            if iou[g_best * n + j] > iou_thres {
                gt_match[g_best] = Some(j);
                iou[g_best * n..(g_best + 1) * n].fill(0.0);
            }
        }
        let mut det_matched = vec![false; n];
        for (g, m) in gt_match.iter().enumerate() {
            match m {
                Some(j) => {
                    det_matched[*j] = true;
                    self.add(kept[*j].cls, targets[g].cls);
                }
                None => self.add(nc, targets[g].cls),
            }
        }
        for (j, d) in kept.iter().enumerate() {
            if !det_matched[j] {
                self.add(d.cls, nc);
            }
        }
        Ok(())
    }

    /// `ConfusionMatrix.tp_fp()`: per class the diagonal and the row sum minus the diagonal (background dropped).
    pub fn tp_fp(&self) -> (Vec<f64>, Vec<f64>) {
        let n = self.nc + 1;
        let tp: Vec<f64> = (0..self.nc).map(|i| self.get(i, i)).collect();
        let fp: Vec<f64> = (0..self.nc)
            .map(|i| {
                let mut s = 0.0;
                for j in 0..n {
                    s += self.get(i, j);
                }
                s - tp[i]
            })
            .collect();
        (tp, fp)
    }

    /// The column-normalised matrix `ConfusionMatrix.plot(normalize=True)` draws:
    /// `matrix / (matrix.sum(0) + 1e-9)`, with values `< 0.005` set to NaN (not drawn), row-major.
    pub fn normalized(&self) -> Vec<f64> {
        let n = self.nc + 1;
        let col: Vec<f64> = (0..n)
            .map(|j| {
                let mut s = 0.0;
                for i in 0..n {
                    s += self.get(i, j);
                }
                s + 1e-9
            })
            .collect();
        (0..n * n)
            .map(|k| {
                let v = self.matrix[k] / col[k % n];
                if v < 0.005 {
                    f64::NAN
                } else {
                    v
                }
            })
            .collect()
    }
}
