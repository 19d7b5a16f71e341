//! `COCOeval.summarize()` (pycocotools 2.0.11, `_summarizeDets`).

use serde::Serialize;

use crate::coco::eval::Accumulated;
use crate::coco::params::Params;
use crate::numpy::mean;

/// The 12 numbers of `COCOeval.stats` after `summarize()`, serialised with these key names in this order.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StatsJson {
    /// `stats[0]`: AP @[IoU=0.50:0.95 | area=all | maxDets=100].
    pub map: f64,
    /// `stats[1]`: AP @[IoU=0.50 | area=all | maxDets=100].
    pub map50: f64,
    /// `stats[2]`: AP @[IoU=0.75 | area=all | maxDets=100].
    pub map75: f64,
    /// `stats[3]`: AP small.
    pub map_small: f64,
    /// `stats[4]`: AP medium.
    pub map_medium: f64,
    /// `stats[5]`: AP large.
    pub map_large: f64,
    /// `stats[6]`: AR maxDets=1.
    pub mar_1: f64,
    /// `stats[7]`: AR maxDets=10.
    pub mar_10: f64,
    /// `stats[8]`: AR maxDets=100.
    pub mar_100: f64,
    /// `stats[9]`: AR small.
    pub mar_small: f64,
    /// `stats[10]`: AR medium.
    pub mar_medium: f64,
    /// `stats[11]`: AR large.
    pub mar_large: f64,
}

impl From<[f64; 12]> for StatsJson {
    fn from(s: [f64; 12]) -> Self {
        StatsJson {
            map: s[0],
            map50: s[1],
            map75: s[2],
            map_small: s[3],
            map_medium: s[4],
            map_large: s[5],
            mar_1: s[6],
            mar_10: s[7],
            mar_100: s[8],
            mar_small: s[9],
            mar_medium: s[10],
            mar_large: s[11],
        }
    }
}

/// One `_summarize(ap, iouThr, areaRng, maxDets)` call: its value and its printed line.
pub(crate) fn summarize_one(
    acc: &Accumulated,
    p: &Params,
    max_dets: &[usize],
    ap: bool,
    iou_thr: Option<f64>,
    area_lbl: &str,
    max_det: usize,
) -> (f64, String) {
    let [t_n, r_n, k_n, _, _] = acc.counts;
    let ts: Vec<usize> = match iou_thr {
        None => (0..t_n).collect(),
        Some(v) => (0..t_n).filter(|&t| p.iou_thrs[t] == v).collect(),
    };
    let a = p.area_rng_lbl.iter().position(|l| l == area_lbl);
    let m = max_dets.iter().position(|&d| d == max_det);
    let mut vals = Vec::new();
    if let (Some(a), Some(m)) = (a, m) {
        // C order of s[t, r, k] (precision) or s[t, k] (recall), then s[s > -1].
        for &t in &ts {
            if ap {
                for r in 0..r_n {
                    for k in 0..k_n {
                        vals.push(acc.precision[acc.p_index(t, r, k, a, m)]);
                    }
                }
            } else {
                for k in 0..k_n {
                    vals.push(acc.recall[acc.r_index(t, k, a, m)]);
                }
            }
        }
    }
    vals.retain(|&v| v > -1.0);
    let mean_s = if vals.is_empty() { -1.0 } else { mean(&vals) };
    let title = if ap { "Average Precision" } else { "Average Recall" };
    let typ = if ap { "(AP)" } else { "(AR)" };
    let iou_str = match iou_thr {
        None => format!("{:.2}:{:.2}", p.iou_thrs[0], p.iou_thrs[t_n - 1]),
        Some(v) => format!("{v:.2}"),
    };
    let line =
        format!(" {title:<18} {typ} @[ IoU={iou_str:<9} | area={area_lbl:>6} | maxDets={max_det:>3} ] = {mean_s:.3}");
    (mean_s, line)
}

/// `_summarizeDets()`: the 12 stats and the 12 printed lines. `max_dets` must have at least 3 entries.
pub(crate) fn summarize_dets(acc: &Accumulated, p: &Params, max_dets: &[usize]) -> ([f64; 12], Vec<String>) {
    let md = max_dets;
    // stats[0] is `_summarize(1)` with its default maxDets=100, not maxDets[2].
    let calls: [(bool, Option<f64>, &str, usize); 12] = [
        (true, None, "all", 100),
        (true, Some(0.5), "all", md[2]),
        (true, Some(0.75), "all", md[2]),
        (true, None, "small", md[2]),
        (true, None, "medium", md[2]),
        (true, None, "large", md[2]),
        (false, None, "all", md[0]),
        (false, None, "all", md[1]),
        (false, None, "all", md[2]),
        (false, None, "small", md[2]),
        (false, None, "medium", md[2]),
        (false, None, "large", md[2]),
    ];
    let mut stats = [0.0; 12];
    let mut lines = Vec::with_capacity(12);
    for (i, &(ap, thr, lbl, m)) in calls.iter().enumerate() {
        let (v, l) = summarize_one(acc, p, max_dets, ap, thr, lbl, m);
        stats[i] = v;
        lines.push(l);
    }
    (stats, lines)
}
