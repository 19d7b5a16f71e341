//! `COCOeval.evaluate()` + `COCOeval.accumulate()` (pycocotools 2.0.11, `iouType='bbox'`, `useCats=1`).

use std::collections::HashMap;

use rayon::prelude::*;

use crate::coco::json::{CocoDets, CocoGt, CocoId};
use crate::coco::params::Params;
use crate::error::EvalError;
use crate::numpy::{searchsorted_left, SPACING_1};

/// `maskUtils.iou(d, g, iscrowd)` for boxes (`bbIou` in pycocotools' `maskApi.c`): boxes are `[x, y, w, h]`;
/// for a crowd ground truth the union is the detection's area (`i / da`), else `i / (da + ga - i)`; 0 where the
/// boxes do not overlap (intersection width or height `<= 0`).
pub fn bbox_iou_xywh(dt: &[f64; 4], gt: &[f64; 4], crowd: bool) -> f64 {
    let ga = gt[2] * gt[3];
    let da = dt[2] * dt[3];
    let w = (dt[2] + dt[0]).min(gt[2] + gt[0]) - dt[0].max(gt[0]);
    if w <= 0.0 {
        return 0.0;
    }
    let h = (dt[3] + dt[1]).min(gt[3] + gt[1]) - dt[1].max(gt[1]);
    if h <= 0.0 {
        return 0.0;
    }
    let i = w * h;
    let u = if crowd { da } else { da + ga - i };
    i / u
}

/// The result of `COCOeval.evaluateImg` for one (image, category, area range), reduced to what `accumulate` reads.
struct EvalImg {
    /// `dtMatches != 0`, `[T, D]` row-major.
    matched: Vec<bool>,
    /// `dtIgnore`, `[T, D]` row-major.
    ignored: Vec<bool>,
    /// `count_nonzero(gtIgnore == 0)`.
    n_gt: usize,
}

/// Per (image, category) with any ground truth or detection: the sorted, truncated detection scores and one
/// [`EvalImg`] per area range.
struct ImgCat {
    img: usize,
    scores: Vec<f64>,
    areas: Vec<EvalImg>,
}

/// `COCOeval.eval` after `accumulate()`: arrays in numpy's C order.
#[derive(Clone, Debug)]
pub struct Accumulated {
    /// `[T, R, K, A, M]`: `T` IoU thresholds, `R` recall points, `K` categories, `A` area ranges, `M` maxDets.
    pub counts: [usize; 5],
    /// `eval['precision']`, shape `[T, R, K, A, M]`, `-1` where undefined (no ground truth).
    pub precision: Vec<f64>,
    /// `eval['recall']`, shape `[T, K, A, M]`, `-1` where undefined.
    pub recall: Vec<f64>,
    /// `eval['scores']`, shape `[T, R, K, A, M]`.
    pub scores: Vec<f64>,
}

impl Accumulated {
    /// Flat index of `precision[t, r, k, a, m]` / `scores[...]`.
    pub fn p_index(&self, t: usize, r: usize, k: usize, a: usize, m: usize) -> usize {
        let [_, rr, kk, aa, mm] = self.counts;
        (((t * rr + r) * kk + k) * aa + a) * mm + m
    }
    /// Flat index of `recall[t, k, a, m]`.
    pub fn r_index(&self, t: usize, k: usize, a: usize, m: usize) -> usize {
        let [_, _, kk, aa, mm] = self.counts;
        ((t * kk + k) * aa + a) * mm + m
    }
}

/// Sorted unique ids (`list(np.unique(ids))`).
fn unique_sorted(mut ids: Vec<CocoId>) -> Vec<CocoId> {
    ids.sort();
    ids.dedup();
    ids
}

/// Stable descending sort of indices by score (`np.argsort(-scores, kind='mergesort')`).
fn argsort_desc(scores: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).unwrap_or(std::cmp::Ordering::Equal));
    idx
}

/// What [`run`] produces.
pub(crate) struct Run {
    pub img_ids: Vec<CocoId>,
    pub cat_ids: Vec<CocoId>,
    pub max_dets: Vec<usize>,
    pub acc: Accumulated,
    pub n_dets_unknown_category: usize,
}

/// `COCOeval.evaluate()` then `accumulate()`.
pub(crate) fn run(gt: &CocoGt, dts: &CocoDets, p: &Params) -> Result<Run, EvalError> {
    let img_ids = unique_sorted(p.img_ids.clone().unwrap_or_else(|| gt.images.clone()));
    let all_cats: Vec<CocoId> = gt.categories.iter().map(|c| c.id.clone()).collect();
    let cat_ids = unique_sorted(p.cat_ids.clone().unwrap_or_else(|| all_cats.clone()));
    let mut max_dets = p.max_dets.clone();
    max_dets.sort_unstable();
    let max_det = *max_dets.last().ok_or_else(|| EvalError::invalid("Params.max_dets is empty"))?;
    if p.area_rng.len() != p.area_rng_lbl.len() {
        return Err(EvalError::invalid("Params.area_rng and Params.area_rng_lbl differ in length"));
    }
    // loadRes: every detection's image must be a ground-truth image.
    let gt_imgs: std::collections::HashSet<&CocoId> = gt.images.iter().collect();
    for (i, d) in dts.dets.iter().enumerate() {
        if !gt_imgs.contains(&d.image_id) {
            return Err(EvalError::invalid(format!(
                "detections[{i}].image_id = {} is not an image of the ground truth (pycocotools: 'Results do not \
                 correspond to current coco set')",
                d.image_id
            )));
        }
    }
    let known_cats: std::collections::HashSet<&CocoId> = all_cats.iter().collect();
    let n_dets_unknown_category = dts.dets.iter().filter(|d| !known_cats.contains(&d.category_id)).count();

    let img_index: HashMap<&CocoId, usize> = img_ids.iter().enumerate().map(|(i, id)| (id, i)).collect();
    let cat_index: HashMap<&CocoId, usize> = cat_ids.iter().enumerate().map(|(i, id)| (id, i)).collect();
    let (ni, nk) = (img_ids.len(), cat_ids.len());
    // _prepare: per (image, category) lists in file order.
    let mut gts: Vec<HashMap<usize, Vec<usize>>> = vec![HashMap::new(); ni];
    for (j, a) in gt.annotations.iter().enumerate() {
        if let (Some(&i), Some(&k)) = (img_index.get(&a.image_id), cat_index.get(&a.category_id)) {
            gts[i].entry(k).or_default().push(j);
        }
    }
    let mut dtl: Vec<HashMap<usize, Vec<usize>>> = vec![HashMap::new(); ni];
    for (j, d) in dts.dets.iter().enumerate() {
        if let (Some(&i), Some(&k)) = (img_index.get(&d.image_id), cat_index.get(&d.category_id)) {
            dtl[i].entry(k).or_default().push(j);
        }
    }

    let t_count = p.iou_thrs.len();
    // evaluate(): per image, per category with something in it.
    let per_img: Vec<Vec<(usize, ImgCat)>> = (0..ni)
        .into_par_iter()
        .map(|i| {
            let mut keys: Vec<usize> = gts[i].keys().chain(dtl[i].keys()).copied().collect();
            keys.sort_unstable();
            keys.dedup();
            let empty = Vec::new();
            keys.into_iter()
                .map(|k| {
                    let g = gts[i].get(&k).unwrap_or(&empty);
                    let d = dtl[i].get(&k).unwrap_or(&empty);
                    (k, evaluate_img_cat(gt, dts, p, i, g, d, max_det, t_count))
                })
                .collect()
        })
        .collect();
    let mut per_cat: Vec<Vec<ImgCat>> = (0..nk).map(|_| Vec::new()).collect();
    for v in per_img {
        for (k, ic) in v {
            per_cat[k].push(ic);
        }
    }
    let acc = accumulate(p, &max_dets, per_cat);
    Ok(Run { img_ids, cat_ids, max_dets, acc, n_dets_unknown_category })
}

/// `computeIoU` + `evaluateImg` for every area range, one (image, category).
#[allow(clippy::too_many_arguments)]
fn evaluate_img_cat(
    gt: &CocoGt,
    dts: &CocoDets,
    p: &Params,
    img: usize,
    g_idx: &[usize],
    d_idx: &[usize],
    max_det: usize,
    t_count: usize,
) -> ImgCat {
    let d_scores: Vec<f64> = d_idx.iter().map(|&j| dts.dets[j].score).collect();
    let order = argsort_desc(&d_scores);
    let dt: Vec<usize> = order.iter().take(max_det).map(|&o| d_idx[o]).collect();
    let scores: Vec<f64> = dt.iter().map(|&j| dts.dets[j].score).collect();
    let (nd, ng) = (dt.len(), g_idx.len());
    // computeIoU: ious[d, g] in the gt file order; empty when either side is empty.
    let have_ious = nd > 0 && ng > 0;
    let mut ious = vec![0.0; nd * ng];
    if have_ious {
        for (di, &dj) in dt.iter().enumerate() {
            for (gi, &gj) in g_idx.iter().enumerate() {
                let a = &gt.annotations[gj];
                ious[di * ng + gi] = bbox_iou_xywh(&dts.dets[dj].bbox, &a.bbox, a.iscrowd);
            }
        }
    }
    let dt_area: Vec<f64> = dt.iter().map(|&j| dts.dets[j].bbox[2] * dts.dets[j].bbox[3]).collect();
    let areas = p
        .area_rng
        .iter()
        .map(|rng| {
            let ig: Vec<bool> = g_idx
                .iter()
                .map(|&j| {
                    let a = &gt.annotations[j];
                    a.iscrowd || a.area < rng[0] || a.area > rng[1]
                })
                .collect();
            // gtind = np.argsort(_ignore, kind='mergesort'): not-ignored first, file order kept.
            let gtind: Vec<usize> = (0..ng).filter(|&g| !ig[g]).chain((0..ng).filter(|&g| ig[g])).collect();
            let gt_ig: Vec<bool> = gtind.iter().map(|&g| ig[g]).collect();
            let crowd: Vec<bool> = gtind.iter().map(|&g| gt.annotations[g_idx[g]].iscrowd).collect();
            let id_nonzero: Vec<bool> = gtind.iter().map(|&g| gt.annotations[g_idx[g]].id != CocoId::Int(0)).collect();
            let mut matched = vec![false; t_count * nd];
            let mut ignored = vec![false; t_count * nd];
            if have_ious {
                for (t, &thr) in p.iou_thrs.iter().enumerate() {
                    let mut gtm = vec![false; ng];
                    for d in 0..nd {
                        let mut iou = thr.min(1.0 - 1e-10);
                        let mut m: Option<usize> = None;
                        for g in 0..ng {
                            if gtm[g] && !crowd[g] {
                                continue;
                            }
                            if let Some(mm) = m {
                                if !gt_ig[mm] && gt_ig[g] {
                                    break;
                                }
                            }
                            let v = ious[d * ng + gtind[g]];
                            if v < iou {
                                continue;
                            }
                            iou = v;
                            m = Some(g);
                        }
                        if let Some(mm) = m {
                            ignored[t * nd + d] = gt_ig[mm];
                            matched[t * nd + d] = id_nonzero[mm];
                            gtm[mm] = true;
                        }
                    }
                }
            }
            for t in 0..t_count {
                for d in 0..nd {
                    let out = dt_area[d] < rng[0] || dt_area[d] > rng[1];
                    if !matched[t * nd + d] && out {
                        ignored[t * nd + d] = true;
                    }
                }
            }
            let n_gt = gt_ig.iter().filter(|&&x| !x).count();
            EvalImg { matched, ignored, n_gt }
        })
        .collect();
    ImgCat { img, scores, areas }
}

/// `COCOeval.accumulate()`.
fn accumulate(p: &Params, max_dets: &[usize], per_cat: Vec<Vec<ImgCat>>) -> Accumulated {
    let (t_n, r_n, k_n, a_n, m_n) =
        (p.iou_thrs.len(), p.rec_thrs.len(), per_cat.len(), p.area_rng.len(), max_dets.len());
    let counts = [t_n, r_n, k_n, a_n, m_n];
    // Per category: precision [T, R, A, M], recall [T, A, M], scores [T, R, A, M].
    let per_k: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)> = per_cat
        .par_iter()
        .map(|evals| {
            let mut prec = vec![-1.0; t_n * r_n * a_n * m_n];
            let mut rec = vec![-1.0; t_n * a_n * m_n];
            let mut sc = vec![-1.0; t_n * r_n * a_n * m_n];
            // evalImgs are in image order already (built by iterating images in sorted order).
            debug_assert!(evals.windows(2).all(|w| w[0].img < w[1].img));
            if evals.is_empty() {
                return (prec, rec, sc);
            }
            let npigs: Vec<usize> = (0..a_n).map(|a| evals.iter().map(|e| e.areas[a].n_gt).sum()).collect();
            for (m, &md) in max_dets.iter().enumerate() {
                // Concatenate (image order) then stable-sort by -score; the order is the same for every area range.
                let mut entries: Vec<(f64, u32, u32)> = Vec::new();
                for (e_i, e) in evals.iter().enumerate() {
                    for d in 0..e.scores.len().min(md) {
                        entries.push((e.scores[d], e_i as u32, d as u32));
                    }
                }
                entries.sort_by(|x, y| y.0.partial_cmp(&x.0).unwrap_or(std::cmp::Ordering::Equal));
                for (a, &npig) in npigs.iter().enumerate() {
                    if npig == 0 {
                        continue;
                    }
                    let nd = entries.len();
                    let mut rc = vec![0.0; nd];
                    let mut pr = vec![0.0; nd];
                    for t in 0..t_n {
                        let (mut tp, mut fp) = (0u64, 0u64);
                        for (n, &(_, e_i, d)) in entries.iter().enumerate() {
                            let ev = &evals[e_i as usize];
                            let ndi = ev.scores.len();
                            let ea = &ev.areas[a];
                            let idx = t * ndi + d as usize;
                            if !ea.ignored[idx] {
                                if ea.matched[idx] {
                                    tp += 1;
                                } else {
                                    fp += 1;
                                }
                            }
                            let (tpf, fpf) = (tp as f64, fp as f64);
                            rc[n] = tpf / npig as f64;
                            pr[n] = tpf / (fpf + tpf + SPACING_1);
                        }
                        rec[(t * a_n + a) * m_n + m] = if nd > 0 { rc[nd - 1] } else { 0.0 };
                        for i in (1..nd).rev() {
                            if pr[i] > pr[i - 1] {
                                pr[i - 1] = pr[i];
                            }
                        }
                        for (ri, &thr) in p.rec_thrs.iter().enumerate() {
                            let pi = searchsorted_left(&rc, thr);
                            let o = ((t * r_n + ri) * a_n + a) * m_n + m;
                            if pi < nd {
                                prec[o] = pr[pi];
                                sc[o] = entries[pi].0;
                            } else {
                                // q and ss start as zeros; the first out-of-range index ends the loop.
                                for rj in ri..r_n {
                                    let o = ((t * r_n + rj) * a_n + a) * m_n + m;
                                    prec[o] = 0.0;
                                    sc[o] = 0.0;
                                }
                                break;
                            }
                        }
                    }
                }
            }
            (prec, rec, sc)
        })
        .collect();
    let mut precision = vec![-1.0; t_n * r_n * k_n * a_n * m_n];
    let mut recall = vec![-1.0; t_n * k_n * a_n * m_n];
    let mut scores = vec![-1.0; t_n * r_n * k_n * a_n * m_n];
    for (k, (pk, rk, sk)) in per_k.into_iter().enumerate() {
        for t in 0..t_n {
            for a in 0..a_n {
                for m in 0..m_n {
                    recall[((t * k_n + k) * a_n + a) * m_n + m] = rk[(t * a_n + a) * m_n + m];
                    for r in 0..r_n {
                        let dst = (((t * r_n + r) * k_n + k) * a_n + a) * m_n + m;
                        let src = ((t * r_n + r) * a_n + a) * m_n + m;
                        precision[dst] = pk[src];
                        scores[dst] = sk[src];
                    }
                }
            }
        }
    }
    Accumulated { counts, precision, recall, scores }
}
