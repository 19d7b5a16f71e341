//! Prediction-to-target matching of ultralytics 8.4.190's detection validator, in float32 like its torch tensors.

/// Number of IoU thresholds (`DetectionValidator.niou`).
pub const NIOU: usize = 10;

/// `DetectionValidator.iouv = torch.linspace(0.5, 0.95, 10)` (float32 values, bit for bit).
pub const IOUV: [f32; NIOU] = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95];

/// A box as `[x1, y1, x2, y2]` (ultralytics' xyxy), in pixels.
pub type Xyxy = [f32; 4];

/// `ultralytics.utils.metrics.box_iou(box1, box2, eps=1e-7)` in float32: returns the `[N, M]` IoU matrix row-major
/// (`N = box1.len()`), `inter / (area1 + area2 - inter + eps)` with the intersection clamped at 0.
pub fn box_iou(box1: &[Xyxy], box2: &[Xyxy]) -> Vec<f32> {
    const EPS: f32 = 1e-7;
    let mut out = Vec::with_capacity(box1.len() * box2.len());
    for a in box1 {
        let (w1, h1) = (a[2] - a[0], a[3] - a[1]);
        for b in box2 {
            let iw = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
            let ih = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
            let inter = iw * ih;
            let (w2, h2) = (b[2] - b[0], b[3] - b[1]);
            out.push(inter / (w1 * h1 + w2 * h2 - inter + EPS));
        }
    }
    out
}

/// `BaseValidator.match_predictions(pred_classes, true_classes, iou, use_scipy=False)` (ultralytics 8.4.190).
///
/// `iou` is the `[M, N]` matrix (targets × predictions, row-major) from [`box_iou`]`(targets, predictions)`;
/// predictions must be in descending confidence order (as NMS outputs them). IoUs of pairs with different classes
/// are zeroed. Greedy: each prediction in turn takes, per threshold, the unclaimed target with the highest IoU
/// (first on ties, `argmax`) and is correct there if that IoU `>=` the threshold. Returns the `[N, 10]` `tp`
/// matrix as one row per prediction.
pub fn match_predictions(pred_classes: &[usize], true_classes: &[usize], iou: &[f32]) -> Vec<[bool; NIOU]> {
    let (n, m) = (pred_classes.len(), true_classes.len());
    debug_assert_eq!(iou.len(), n * m);
    let mut correct = vec![[false; NIOU]; n];
    if n == 0 || m == 0 {
        return correct;
    }
    let at = |g: usize, j: usize| if true_classes[g] == pred_classes[j] { iou[g * n + j] } else { 0.0 };
    let mut matched = vec![[false; NIOU]; m];
    let tmin = IOUV.iter().copied().fold(f32::INFINITY, f32::min);
    for (j, row) in correct.iter_mut().enumerate() {
        if !(0..m).any(|g| at(g, j) >= tmin) {
            continue;
        }
        for t in 0..NIOU {
            // available = where(matched, 0, iou[:, j]); k = argmax (first maximum).
            let mut best = (0usize, f32::NEG_INFINITY);
            for (g, mg) in matched.iter().enumerate() {
                let v = if mg[t] { 0.0 } else { at(g, j) };
                if v > best.1 {
                    best = (g, v);
                }
            }
            let ok = best.1 >= IOUV[t];
            row[t] = ok;
            matched[best.0][t] |= ok;
        }
    }
    correct
}

/// `DetectionValidator._process_batch(preds, batch)`: the `tp` rows of one image. `pred_boxes` / `pred_classes`
/// are in descending confidence order; with no targets or no predictions every row is false.
pub fn process_batch(
    pred_boxes: &[Xyxy],
    pred_classes: &[usize],
    gt_boxes: &[Xyxy],
    gt_classes: &[usize],
) -> Vec<[bool; NIOU]> {
    if gt_boxes.is_empty() || pred_boxes.is_empty() {
        return vec![[false; NIOU]; pred_boxes.len()];
    }
    let iou = box_iou(gt_boxes, pred_boxes);
    match_predictions(pred_classes, gt_classes, &iou)
}
