//! `DIR/results.csv` as ultralytics writes it (`BaseTrainer.save_metrics`): one row per epoch, header once,
//! columns `epoch, time, train/box_loss, train/cls_loss, train/l1_loss, metrics/precision(B), metrics/recall(B),
//! metrics/mAP50(B), metrics/mAP50-95(B), lr/pg0 …` (ultralytics also logs validation losses; this validator
//! does not compute them, so those columns are absent). Rewritten whole and atomically after every epoch.

use std::path::Path;

use yolo26_model::weights::write_atomic;

/// One epoch's row.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EpochRow {
    /// 1-based, as ultralytics prints it.
    pub epoch: usize,
    /// Seconds since the start of the run.
    pub time: f64,
    /// Mean `box`, `cls`, `l1` loss items over the epoch's batches (ultralytics `tloss`).
    pub train_loss: [f64; 3],
    /// Precision, recall, mAP50, mAP50-95 of the EMA on the validation split (`None` when not validated).
    pub metrics: Option<[f64; 4]>,
    /// Learning rate of each parameter group at the end of the epoch.
    pub lr: Vec<f64>,
}

/// The per-epoch value columns: the three train losses, then P, R, mAP50, mAP50-95.
const VALUE_COLUMNS: [&str; 7] = [
    "train/box_loss",
    "train/cls_loss",
    "train/l1_loss",
    "metrics/precision(B)",
    "metrics/recall(B)",
    "metrics/mAP50(B)",
    "metrics/mAP50-95(B)",
];

/// The CSV text of `rows`.
pub fn csv(rows: &[EpochRow]) -> String {
    let groups = rows.iter().map(|r| r.lr.len()).max().unwrap_or(0);
    let mut head: Vec<String> = ["epoch", "time"].iter().chain(&VALUE_COLUMNS).map(|s| s.to_string()).collect();
    head.extend((0..groups).map(|g| format!("lr/pg{g}")));
    let mut out = head.join(",") + "\n";
    for r in rows {
        let mut cells = vec![r.epoch.to_string(), format!("{:.3}", r.time)];
        cells.extend(r.train_loss.iter().map(|v| format!("{v:.5}")));
        match r.metrics {
            Some(m) => cells.extend(m.iter().map(|v| format!("{v:.5}"))),
            None => cells.extend(std::iter::repeat_n(String::new(), 4)),
        }
        cells.extend(r.lr.iter().map(|v| format!("{v:.6e}")));
        out += &(cells.join(",") + "\n");
    }
    out
}

/// Writes `rows` to `path` (atomically).
pub fn write_csv(rows: &[EpochRow], path: &Path) -> Result<(), String> {
    write_atomic(path, csv(rows).as_bytes()).map_err(|e| e.to_string())
}

/// `results.png` (ultralytics `plot_results`): one panel per column of `results.csv` but the lrs.
pub fn plot(rows: &[EpochRow], path: &Path) -> Result<(), String> {
    let panels: Vec<(String, Vec<(f64, f64)>)> = VALUE_COLUMNS
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let pts = rows
                .iter()
                .filter_map(|r| {
                    let v = if i < 3 { Some(r.train_loss[i]) } else { r.metrics.map(|m| m[i - 3]) };
                    v.map(|v| (r.epoch as f64, v))
                })
                .collect();
            (n.to_string(), pts)
        })
        .collect();
    yolo26_eval::plots::plot_results(path, &panels).map_err(|e| e.to_string())
}
