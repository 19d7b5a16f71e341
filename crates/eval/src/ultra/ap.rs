//! `ultralytics.utils.metrics.ap_per_class`, `compute_ap` and `smooth` (ultralytics 8.4.190, numpy 2.x).

use crate::numpy::{interp, linspace, trapezoid};
use crate::ultra::matching::NIOU;

/// Number of points of the confidence / recall grid (`px = np.linspace(0, 1, 1000)`).
pub const NPX: usize = 1000;

/// `ap_per_class`' `eps` default.
const EPS: f64 = 1e-16;

/// The outputs of `ap_per_class(...)`, in its return order. Per-class vectors are indexed like `unique_classes`.
#[derive(Clone, Debug, PartialEq)]
pub struct ApPerClass {
    /// True positives per class at the max-F1 confidence: `(r * nt).round()` (half to even).
    pub tp: Vec<f64>,
    /// False positives per class at the max-F1 confidence: `(tp / (p + eps) - tp).round()`.
    pub fp: Vec<f64>,
    /// Precision per class at the max-F1 index.
    pub p: Vec<f64>,
    /// Recall per class at the max-F1 index.
    pub r: Vec<f64>,
    /// F1 per class at the max-F1 index.
    pub f1: Vec<f64>,
    /// AP per class at the 10 IoU thresholds, `[nc, 10]`.
    pub ap: Vec<[f64; NIOU]>,
    /// The sorted unique target classes (`np.unique(target_cls)`).
    pub unique_classes: Vec<usize>,
    /// Precision-confidence curves `[nc, 1000]`.
    pub p_curve: Vec<Vec<f64>>,
    /// Recall-confidence curves `[nc, 1000]`.
    pub r_curve: Vec<Vec<f64>>,
    /// F1-confidence curves `[nc, 1000]`.
    pub f1_curve: Vec<Vec<f64>>,
    /// The grid `np.linspace(0, 1, 1000)`.
    pub px: Vec<f64>,
    /// Precision at each `px` recall at IoU 0.5, `[nc, 1000]` (one zero row when there are no classes).
    pub prec_values: Vec<Vec<f64>>,
    /// The index into `px` of the maximum of the smoothed mean F1 curve (`smooth(f1_curve.mean(0), 0.1).argmax()`).
    pub max_f1_index: usize,
}

/// `compute_ap(recall, precision)` of ultralytics 8.4.190: sentinels `mrec = [0, recall..., recall[-1], 1]`,
/// `mpre = [1, precision..., 0, 0]`, the precision envelope (running maximum from the right) and the 101-point
/// interpolated area `np.trapezoid(np.interp(x, mrec, mpre), x)` with `x = np.linspace(0, 1, 101)`.
/// Returns `(ap, mpre, mrec)`.
pub fn compute_ap(recall: &[f64], precision: &[f64]) -> (f64, Vec<f64>, Vec<f64>) {
    let last = recall.last().copied().unwrap_or(1.0);
    let mut mrec = Vec::with_capacity(recall.len() + 3);
    mrec.push(0.0);
    mrec.extend_from_slice(recall);
    mrec.push(last);
    mrec.push(1.0);
    let mut mpre = Vec::with_capacity(precision.len() + 3);
    mpre.push(1.0);
    mpre.extend_from_slice(precision);
    mpre.extend_from_slice(&[0.0, 0.0]);
    for i in (0..mpre.len() - 1).rev() {
        // np.maximum propagates NaN; precision here is never NaN.
        mpre[i] = mpre[i].max(mpre[i + 1]);
    }
    let x = linspace(0.0, 1.0, 101);
    let ap = trapezoid(&interp(&x, &mrec, &mpre, None, None), &x);
    (ap, mpre, mrec)
}

/// OpenBLAS' `ddot` (`ddot_k` with the AVX-512 SkylakeX micro-kernel, which numpy 2.4's `np.convolve` reaches
/// through `cblas_ddot` on the reference machine): 32 FMA lanes over the first `n & -32` elements, folded to 4 x 4 lanes that take
/// 16 more elements per step up to `n & -16`, then a scalar FMA tail over the elements past `n & -16`.
fn blas_ddot(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    let n1 = n & !15;
    let mut dot = 0.0;
    if n1 > 0 {
        let n32 = n1 & !31;
        let mut acc = [0.0f64; 32];
        let mut i = 0;
        while i < n32 {
            for (t, a) in acc.iter_mut().enumerate() {
                *a = x[i + t].mul_add(y[i + t], *a);
            }
            i += 32;
        }
        let mut a4 = [[0.0f64; 4]; 4];
        for (v, row) in a4.iter_mut().enumerate() {
            for (l, e) in row.iter_mut().enumerate() {
                *e = acc[8 * v + l] + acc[8 * v + l + 4];
            }
        }
        while i < n1 {
            for (v, row) in a4.iter_mut().enumerate() {
                for (t, e) in row.iter_mut().enumerate() {
                    *e = x[i + 4 * v + t].mul_add(y[i + 4 * v + t], *e);
                }
            }
            i += 16;
        }
        let s: Vec<f64> = (0..4).map(|l| ((a4[0][l] + a4[1][l]) + a4[2][l]) + a4[3][l]).collect();
        dot = (s[0] + s[2]) + (s[1] + s[3]);
    }
    for i in n1..n {
        dot = y[i].mul_add(x[i], dot);
    }
    dot
}

/// `ultralytics.utils.metrics.smooth(y, f)`: a box filter of `nf = round(len(y) * f * 2) // 2 + 1` taps over `y`
/// padded with `nf // 2` copies of its end values (`np.convolve(yp, np.ones(nf) / nf, mode='valid')`).
pub fn smooth(y: &[f64], f: f64) -> Vec<f64> {
    if y.is_empty() {
        return Vec::new();
    }
    let nf = ((y.len() as f64 * f * 2.0).round_ties_even() as usize) / 2 + 1;
    let half = nf / 2;
    let mut yp = Vec::with_capacity(y.len() + 2 * half);
    yp.extend(std::iter::repeat_n(y[0], half));
    yp.extend_from_slice(y);
    yp.extend(std::iter::repeat_n(y[y.len() - 1], half));
    let kernel = vec![1.0 / nf as f64; nf];
    (0..=yp.len() - nf).map(|i| blas_ddot(&yp[i..i + nf], &kernel)).collect()
}

/// First index of the maximum (`np.argmax`, NaN-free input).
fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

/// The detection order `ap_per_class` uses: descending confidence, ties in input order (a stable sort).
///
/// ultralytics calls `np.argsort(-conf)` (numpy's default, unstable quicksort; on AVX-512 machines numpy 2.x uses
/// an x86-simd-sort network), so its order of tied confidences is an implementation detail that changes with the
/// hardware. Outputs are equal to ultralytics whenever tied detections of a class have the same `tp` rows; pass
/// numpy's own permutation to [`ap_per_class_with_order`] to reproduce one specific run.
pub fn confidence_order(conf: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..conf.len()).collect();
    idx.sort_by(|&a, &b| conf[b].partial_cmp(&conf[a]).unwrap_or(std::cmp::Ordering::Equal));
    idx
}

/// `ap_per_class(tp, conf, pred_cls, target_cls)` (ultralytics 8.4.190, `eps=1e-16`), sorting with
/// [`confidence_order`]. `tp[i]`, `conf[i]` and `pred_cls[i]` describe detection `i`; `target_cls` lists the class of
/// every ground-truth box. ultralytics feeds float32 confidences: pass them widened to f64 (exact).
pub fn ap_per_class(tp: &[[bool; NIOU]], conf: &[f64], pred_cls: &[usize], target_cls: &[usize]) -> ApPerClass {
    ap_per_class_with_order(&confidence_order(conf), tp, conf, pred_cls, target_cls)
}

/// [`ap_per_class`] with a given detection order (`i = np.argsort(-conf)`): `order` must be a permutation of
/// `0..conf.len()` that sorts `conf` in descending order.
pub fn ap_per_class_with_order(
    order: &[usize],
    tp: &[[bool; NIOU]],
    conf: &[f64],
    pred_cls: &[usize],
    target_cls: &[usize],
) -> ApPerClass {
    let tp: Vec<[bool; NIOU]> = order.iter().map(|&i| tp[i]).collect();
    let conf: Vec<f64> = order.iter().map(|&i| conf[i]).collect();
    let pred_cls: Vec<usize> = order.iter().map(|&i| pred_cls[i]).collect();

    let mut unique_classes: Vec<usize> = target_cls.to_vec();
    unique_classes.sort_unstable();
    unique_classes.dedup();
    let nt: Vec<usize> = unique_classes.iter().map(|c| target_cls.iter().filter(|&&t| t == *c).count()).collect();
    let nc = unique_classes.len();
    let px = linspace(0.0, 1.0, NPX);
    let neg_px: Vec<f64> = px.iter().map(|v| -v).collect();

    let mut ap = vec![[0.0; NIOU]; nc];
    let mut p_curve = vec![vec![0.0; NPX]; nc];
    let mut r_curve = vec![vec![0.0; NPX]; nc];
    let mut prec_values = Vec::with_capacity(nc.max(1));
    for (ci, &c) in unique_classes.iter().enumerate() {
        let sel: Vec<usize> = (0..pred_cls.len()).filter(|&i| pred_cls[i] == c).collect();
        let n_l = nt[ci] as f64;
        if sel.is_empty() {
            prec_values.push(vec![0.0; NPX]);
            continue;
        }
        let neg_conf: Vec<f64> = sel.iter().map(|&i| -conf[i]).collect();
        let mut recall = vec![[0.0; NIOU]; sel.len()];
        let mut precision = vec![[0.0; NIOU]; sel.len()];
        let mut tpc = [0u64; NIOU];
        let mut fpc = [0u64; NIOU];
        for (n, &i) in sel.iter().enumerate() {
            for j in 0..NIOU {
                if tp[i][j] {
                    tpc[j] += 1;
                } else {
                    fpc[j] += 1;
                }
                recall[n][j] = tpc[j] as f64 / (n_l + EPS);
                precision[n][j] = tpc[j] as f64 / (tpc[j] + fpc[j]) as f64;
            }
        }
        let r0: Vec<f64> = recall.iter().map(|r| r[0]).collect();
        let p0: Vec<f64> = precision.iter().map(|p| p[0]).collect();
        r_curve[ci] = interp(&neg_px, &neg_conf, &r0, Some(0.0), None);
        p_curve[ci] = interp(&neg_px, &neg_conf, &p0, Some(1.0), None);
        for j in 0..NIOU {
            let rj: Vec<f64> = recall.iter().map(|r| r[j]).collect();
            let pj: Vec<f64> = precision.iter().map(|p| p[j]).collect();
            let (a, mpre, mrec) = compute_ap(&rj, &pj);
            ap[ci][j] = a;
            if j == 0 {
                prec_values.push(interp(&px, &mrec, &mpre, None, None));
            }
        }
    }
    if prec_values.is_empty() {
        prec_values.push(vec![0.0; NPX]);
    }
    let f1_curve: Vec<Vec<f64>> = (0..nc)
        .map(|ci| {
            (0..NPX).map(|k| 2.0 * p_curve[ci][k] * r_curve[ci][k] / (p_curve[ci][k] + r_curve[ci][k] + EPS)).collect()
        })
        .collect();
    let max_f1_index = if nc > 0 {
        // f1_curve.mean(0): a reduction over rows, summed row after row.
        let mean0: Vec<f64> = (0..NPX)
            .map(|k| {
                let mut s = 0.0;
                for row in &f1_curve {
                    s += row[k];
                }
                s / nc as f64
            })
            .collect();
        argmax(&smooth(&mean0, 0.1))
    } else {
        0
    };
    let i = max_f1_index;
    let p: Vec<f64> = p_curve.iter().map(|c| c[i]).collect();
    let r: Vec<f64> = r_curve.iter().map(|c| c[i]).collect();
    let f1: Vec<f64> = f1_curve.iter().map(|c| c[i]).collect();
    let tpv: Vec<f64> = r.iter().zip(&nt).map(|(r, &n)| (r * n as f64).round_ties_even()).collect();
    let fpv: Vec<f64> = tpv.iter().zip(&p).map(|(t, p)| (t / (p + EPS) - t).round_ties_even()).collect();
    ApPerClass {
        tp: tpv,
        fp: fpv,
        p,
        r,
        f1,
        ap,
        unique_classes,
        p_curve,
        r_curve,
        f1_curve,
        px,
        prec_values,
        max_f1_index,
    }
}
