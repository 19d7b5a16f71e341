//! What a validation run reports: ultralytics' printed table (`DetectionValidator.print_results`), `metrics.json`,
//! the PR / F1 / P / R curves and confusion matrices (`DetMetrics.process(plot=True)`,
//! `ConfusionMatrix.plot`), and the COCO detections file (`--save-json`, `predictions.json`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use yolo26_eval::plots::{plot_confusion_matrix, plot_mc_curve, plot_pr_curve};
use yolo26_eval::ultra::{ConfusionMatrix, DetMetrics, ResultsDict};
use yolo26_model::DecodeMode;

use super::ValError;

/// Milliseconds per image of each stage (ultralytics `Speed: ... preprocess, ... inference, ... postprocess per
/// image`): preprocess = batch to device tensor, inference = forward + decode (device synced), postprocess = NMS /
/// confidence filter on the host.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Speed {
    pub preprocess: f64,
    pub inference: f64,
    pub postprocess: f64,
    #[serde(skip)]
    images: usize,
}

impl Speed {
    pub(super) fn add(&mut self, n: usize, pre: Duration, inf: Duration, post: Duration) {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let total = self.images + n;
        let upd = |avg: f64, d: Duration| (avg * self.images as f64 + ms(d)) / total as f64;
        self.preprocess = upd(self.preprocess, pre);
        self.inference = upd(self.inference, inf);
        self.postprocess = upd(self.postprocess, post);
        self.images = total;
    }
}

/// One row of the per-class table.
#[derive(Clone, Debug, Serialize)]
pub struct ClassRow {
    pub class: String,
    pub images: usize,
    pub instances: usize,
    pub precision: f64,
    pub recall: f64,
    pub map50: f64,
    pub map50_95: f64,
}

/// One detection of `predictions.json` (ultralytics `pred_to_json`).
#[derive(Clone, Debug, Serialize)]
pub struct CocoDetection {
    /// `int(stem)` when the file stem is a number, else the stem (or the COCO image id of a COCO dataset).
    pub image_id: serde_json::Value,
    pub file_name: String,
    pub category_id: i64,
    /// `[x, y, w, h]` in original-image pixels, 3 decimals.
    pub bbox: [f64; 4],
    /// 5 decimals.
    pub score: f64,
}

/// `image_id = int(stem) if stem.isnumeric() else stem`.
pub(super) fn image_id_from_stem(path: &Path) -> serde_json::Value {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    if !stem.is_empty() && stem.chars().all(|c| c.is_ascii_digit()) {
        if let Ok(n) = stem.parse::<u64>() {
            return serde_json::Value::from(n);
        }
    }
    serde_json::Value::from(stem)
}

/// The outcome of [`super::validate`].
pub struct ValReport {
    pub names: Vec<String>,
    pub metrics: DetMetrics,
    pub confusion: ConfusionMatrix,
    /// Images that contain each class.
    pub images_per_class: Vec<usize>,
    /// Images validated.
    pub seen: usize,
    pub speed: Speed,
    /// COCO detections (with `save_json`).
    pub detections: Option<Vec<CocoDetection>>,
    pub mode: DecodeMode,
}

#[derive(Serialize)]
struct MetricsJson<'a> {
    head: &'static str,
    images: usize,
    instances: usize,
    #[serde(flatten)]
    results: ResultsDict,
    speed_ms_per_image: Speed,
    classes: &'a [ClassRow],
}

impl ValReport {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        names: Vec<String>,
        metrics: DetMetrics,
        confusion: ConfusionMatrix,
        images_per_class: Vec<usize>,
        seen: usize,
        speed: Speed,
        detections: Option<Vec<CocoDetection>>,
        mode: DecodeMode,
    ) -> Self {
        ValReport { names, metrics, confusion, images_per_class, seen, speed, detections, mode }
    }

    /// `DetMetrics.results_dict`: precision, recall, mAP50, mAP50-95, fitness.
    pub fn results(&self) -> ResultsDict {
        self.metrics.results_dict()
    }

    /// Targets in the split.
    pub fn instances(&self) -> usize {
        self.metrics.nt_per_class.iter().sum()
    }

    /// Per-class rows for the classes present in the targets (`ap_class_index` order), as ultralytics prints them.
    pub fn class_rows(&self) -> Vec<ClassRow> {
        let r = &self.metrics.results;
        let ap = self.metrics.ap();
        r.unique_classes
            .iter()
            .enumerate()
            .map(|(i, &c)| ClassRow {
                class: self.names.get(c).cloned().unwrap_or_else(|| c.to_string()),
                images: self.images_per_class.get(c).copied().unwrap_or(0),
                instances: self.metrics.nt_per_class.get(c).copied().unwrap_or(0),
                precision: r.p[i],
                recall: r.r[i],
                map50: r.ap[i][0],
                map50_95: ap[i],
            })
            .collect()
    }

    /// The table ultralytics prints (`get_desc` header, the `all` row, then one row per class when there are
    /// several), same column widths and `%.3g` numbers.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:>22}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}\n",
            "Class", "Images", "Instances", "Box(P", "R", "mAP50", "mAP50-95)"
        );
        let row = |name: &str, images: usize, inst: usize, v: [f64; 4]| {
            format!(
                "{name:>22}{images:>11}{inst:>11}{:>11}{:>11}{:>11}{:>11}\n",
                fmt_g3(v[0]),
                fmt_g3(v[1]),
                fmt_g3(v[2]),
                fmt_g3(v[3])
            )
        };
        s += &row("all", self.seen, self.instances(), self.metrics.mean_results());
        if self.names.len() > 1 {
            for c in self.class_rows() {
                s += &row(&c.class, c.images, c.instances, [c.precision, c.recall, c.map50, c.map50_95]);
            }
        }
        s
    }

    /// `Speed: 0.1ms preprocess, 2.3ms inference, 0.4ms postprocess per image`.
    pub fn speed_line(&self) -> String {
        format!(
            "Speed: {:.1}ms preprocess, {:.1}ms inference, {:.1}ms postprocess per image",
            self.speed.preprocess, self.speed.inference, self.speed.postprocess
        )
    }

    /// Writes `DIR/metrics.json`, `DIR/per_class.csv`, and with `plots` the curves and confusion matrices
    /// (`BoxPR_curve.png`, `BoxF1_curve.png`, `BoxP_curve.png`, `BoxR_curve.png`, `confusion_matrix.png`,
    /// `confusion_matrix_normalized.png`), and `predictions.json` when detections were collected. Every file is
    /// written atomically. Returns the paths written.
    pub fn write(&self, dir: &Path, plots: bool) -> Result<Vec<PathBuf>, ValError> {
        std::fs::create_dir_all(dir).map_err(|e| ValError::Config(format!("{}: {e}", dir.display())))?;
        let mut written = Vec::new();
        let rows = self.class_rows();
        let head = match self.mode {
            DecodeMode::Nms => "one2many+nms",
            DecodeMode::EndToEnd => "one2one",
        };
        let m = MetricsJson {
            head,
            images: self.seen,
            instances: self.instances(),
            results: self.results(),
            speed_ms_per_image: self.speed,
            classes: &rows,
        };
        let json = serde_json::to_vec_pretty(&m).map_err(|e| ValError::Config(e.to_string()))?;
        written.push(write_atomic(&dir.join("metrics.json"), &json)?);
        let mut csv = String::from("class,images,instances,precision,recall,mAP50,mAP50-95\n");
        for r in &rows {
            csv += &format!(
                "{},{},{},{},{},{},{}\n",
                r.class, r.images, r.instances, r.precision, r.recall, r.map50, r.map50_95
            );
        }
        written.push(write_atomic(&dir.join("per_class.csv"), csv.as_bytes())?);
        if let Some(d) = &self.detections {
            let json = serde_json::to_vec(d).map_err(|e| ValError::Config(e.to_string()))?;
            written.push(write_atomic(&dir.join("predictions.json"), &json)?);
        }
        if plots {
            let r = &self.metrics.results;
            let names: Vec<String> =
                r.unique_classes.iter().map(|&c| self.names.get(c).cloned().unwrap_or_else(|| c.to_string())).collect();
            let p = dir.join("BoxPR_curve.png");
            plot_pr_curve(&p, &r.px, &r.prec_values, &r.ap, &names)?;
            written.push(p);
            for (file, curve, ylabel) in [
                ("BoxF1_curve.png", &r.f1_curve, "F1"),
                ("BoxP_curve.png", &r.p_curve, "Precision"),
                ("BoxR_curve.png", &r.r_curve, "Recall"),
            ] {
                let p = dir.join(file);
                plot_mc_curve(&p, &r.px, curve, &names, "Confidence", ylabel)?;
                written.push(p);
            }
            for (file, normalize) in [("confusion_matrix_normalized.png", true), ("confusion_matrix.png", false)] {
                let p = dir.join(file);
                plot_confusion_matrix(&p, &self.confusion, &self.names, normalize)?;
                written.push(p);
            }
        }
        Ok(written)
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory (fsync, rename).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<PathBuf, ValError> {
    let err = |e: std::io::Error| ValError::Config(format!("{}: {e}", path.display()));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp).map_err(err)?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)?;
    Ok(path.to_path_buf())
}

/// Python's `"%.3g" % v`.
pub fn fmt_g3(v: f64) -> String {
    fmt_g(v, 3)
}

/// Python's `"%.{p}g" % v`: `p` significant digits, exponent form when the exponent is < -4 or >= p, trailing
/// zeros removed.
pub fn fmt_g(v: f64, p: usize) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let p = p.max(1);
    // The exponent after rounding to p significant digits.
    let sci = format!("{:.*e}", p - 1, v);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= p as i32 {
        format!("{}e{}{:02}", strip(mant), if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip(&format!("{v:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::fmt_g;

    #[test]
    fn percent_g_like_python() {
        // Python: '%.3g' % v
        for (v, want) in [
            (0.123456, "0.123"),
            (0.98765, "0.988"),
            (1.0, "1"),
            (0.0005, "0.0005"),
            (0.00001234, "1.23e-05"),
            (123.456, "123"),
            (1234.5, "1.23e+03"),
            (0.1, "0.1"),
            (0.9996, "1"),
            (0.0, "0"),
        ] {
            assert_eq!(fmt_g(v, 3), want, "{v}");
        }
    }
}
