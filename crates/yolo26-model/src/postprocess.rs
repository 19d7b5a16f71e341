//! Decoding the raw head outputs: anchors (`make_anchors`), `dist2bbox`, the end-to-end top-k of the one-to-one
//! head (`Detect.postprocess` / `get_topk_index`) and class-aware NMS over the one-to-many head
//! (`utils/nms.py::non_max_suppression`). Decoding and top-k run on the model's device; NMS (burn-vision's CPU
//! algorithm) runs on the host.

use burn::backend::Flex;
use burn::prelude::*;
use burn::tensor::TensorData;
use burn_vision::{Nms, NmsOptions};

use crate::backend::YoloBackend;
use crate::config::STRIDES;
use crate::nn::head::HeadOutput;
use kernels_cubecl::decode::{anchor_grid, detect_decode, BoxFormat};
use kernels_cubecl::topk::topk_rows;

/// Anchor grid of a given input, built once per input size and kept on the device (the [`crate::Detector`]
/// caches one per feature-map layout): cell centres in grid units `[1, 2, A]` and the stride of each anchor
/// `[1, 1, A]` (model float dtype), and the same grid as the `[3, A]` F32 rows `(x, y, stride)` that
/// [`kernels_cubecl::decode::detect_decode`] reads.
#[derive(Debug, Clone)]
pub struct Anchors<B: Backend> {
    /// `[1, 2, A]`: anchor x row, then anchor y row (cell centres, grid units).
    pub points: Tensor<B, 3>,
    /// `[1, 1, A]`: stride of each anchor's level (8, 16 or 32).
    pub strides: Tensor<B, 3>,
    /// `[3, A]` F32: anchor x, anchor y (grid units), stride.
    pub grid: Tensor<B, 2>,
    /// `[h, w]` of each level the grid was built for.
    pub feat_shapes: Vec<[usize; 2]>,
}

impl<B: Backend> Anchors<B> {
    /// ultralytics `make_anchors(feats, strides, 0.5)`: level by level, row-major, `(x + 0.5, y + 0.5)`.
    pub fn new(feat_shapes: &[[usize; 2]], device: &B::Device) -> Self {
        let total: usize = feat_shapes.iter().map(|[h, w]| h * w).sum();
        let mut xs = Vec::with_capacity(2 * total);
        let mut ys = Vec::with_capacity(total);
        let mut ss = Vec::with_capacity(total);
        for (lvl, &[h, w]) in feat_shapes.iter().enumerate() {
            for y in 0..h {
                for x in 0..w {
                    xs.push(x as f32 + 0.5);
                    ys.push(y as f32 + 0.5);
                    ss.push(STRIDES[lvl] as f32);
                }
            }
        }
        xs.extend(ys);
        let sizes: Vec<(usize, usize)> = feat_shapes.iter().map(|&[h, w]| (h, w)).collect();
        let strides: Vec<f32> = STRIDES[..feat_shapes.len()].iter().map(|&s| s as f32).collect();
        Anchors {
            points: Tensor::from_data(TensorData::new(xs, [1, 2, total]), device),
            strides: Tensor::from_data(TensorData::new(ss, [1, 1, total]), device),
            grid: anchor_grid(&sizes, &strides, device),
            feat_shapes: feat_shapes.to_vec(),
        }
    }

    /// Number of anchors `A`.
    pub fn len(&self) -> usize {
        self.points.dims()[2]
    }

    /// No anchors (no feature levels).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `dist2bbox(ltrb, anchors) * stride`: boxes in input pixels, `[B, 4, A]`, xyxy or xywh (centre, size), in
/// one pass of the fused [`detect_decode`] op (differentiable).
pub fn decode_boxes<B: YoloBackend>(ltrb: Tensor<B, 3>, anchors: &Anchors<B>, xywh: bool) -> Tensor<B, 3> {
    let format = if xywh { BoxFormat::Xywh } else { BoxFormat::Xyxy };
    detect_decode(ltrb, anchors.grid.clone(), format)
}

/// Eval output of the one-to-many head: `[B, 4 + nc, A]` = `(cx, cy, w, h)` in pixels + sigmoid scores.
pub fn decode_one2many<B: YoloBackend>(head: &HeadOutput<B>, anchors: &Anchors<B>) -> Tensor<B, 3> {
    Tensor::cat(
        vec![decode_boxes(head.boxes.clone(), anchors, true), burn::tensor::activation::sigmoid(head.scores.clone())],
        1,
    )
}

/// End-to-end decode of the one-to-one head (ultralytics `Detect.postprocess`): boxes xyxy in pixels, top
/// `k = min(max_det, A)` anchors by best class score, then top-k over those anchors' `k·nc` scores.
/// Returns `[B, k, 6]` rows `(x1, y1, x2, y2, score, class)` sorted by score, on the device.
pub fn decode_end2end<B: YoloBackend>(head: &HeadOutput<B>, anchors: &Anchors<B>, max_det: usize) -> Tensor<B, 3> {
    let [b, nc, a] = head.scores.dims();
    let k = max_det.min(a);
    let boxes = decode_boxes(head.boxes.clone(), anchors, false).swap_dims(1, 2); // [B, A, 4]

    // ultralytics takes sigmoid(scores) of every anchor and class, then the max over classes. The f32 sigmoid is
    // monotone non-decreasing, so the max of the sigmoids is the sigmoid of the max logit, bit for bit, and the
    // selected rows' sigmoids are the same numbers: only A + k·nc sigmoids instead of A·nc (a serial 3 ms of the
    // CPU forward), and no strided [B, A, nc] view.
    let sigmoid = burn::tensor::activation::sigmoid::<3, B>;
    let best: Tensor<B, 2> = sigmoid(head.scores.clone().max_dim(1)).squeeze_dim(1); // [B, A]
    let (_, ori_index) = topk_rows(best, k); // [B, k], on the device (kernels_cubecl::topk)
    let rows = head.scores.clone().gather(2, ori_index.clone().unsqueeze_dim::<3>(1).expand([b, nc, k])); // [B, nc, k]
    let sel = sigmoid(rows.swap_dims(1, 2)); // [B, k, nc]
    let flat = sel.reshape([b, k * nc]);
    let (top_scores, index) = topk_rows(flat, k); // [B, k]
    let labels = index.clone().remainder_scalar(nc as i64);
    let anchor_slot = index.div_scalar(nc as i64);
    let anchor_idx = ori_index.gather(1, anchor_slot);
    let top_boxes = boxes.gather(1, anchor_idx.unsqueeze_dim::<3>(2).expand([b, k, 4]));
    let labels = labels.float().cast(top_scores.dtype());
    Tensor::cat(vec![top_boxes, top_scores.unsqueeze_dim(2), labels.unsqueeze_dim(2)], 2)
}

/// One detection in network-input pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawDetection {
    /// Box corners `[x1, y1, x2, y2]` in network-input pixels.
    pub xyxy: [f32; 4],
    /// Class confidence.
    pub score: f32,
    /// Class index.
    pub class_id: usize,
}

/// Reads `[B, k, 6]` end-to-end rows and keeps those with `score > conf`, per image.
pub fn end2end_to_host<B: Backend>(rows: Tensor<B, 3>, conf: f32) -> Vec<Vec<RawDetection>> {
    let [b, k, _] = rows.dims();
    let v = rows.cast(burn::tensor::DType::F32).into_data().convert::<f32>().to_vec::<f32>().expect("f32 data");
    (0..b)
        .map(|i| {
            (0..k)
                .map(|j| &v[(i * k + j) * 6..(i * k + j + 1) * 6])
                .filter(|r| r[4] > conf)
                .map(|r| RawDetection { xyxy: [r[0], r[1], r[2], r[3]], score: r[4], class_id: r[5] as usize })
                .collect()
        })
        .collect()
}

/// Options of [`non_max_suppression`] (ultralytics defaults for predict: conf 0.25, IoU 0.7, max_det 300,
/// single label; its validator uses conf 0.001 and `multi_label=True`).
#[derive(Debug, Clone, Copy)]
pub struct NmsConfig {
    /// Candidates need `score > conf`.
    pub conf: f32,
    /// IoU above which the lower-scored box of a pair is suppressed.
    pub iou: f32,
    /// Maximum detections kept per image.
    pub max_det: usize,
    /// Class-agnostic suppression (`agnostic_nms`).
    pub agnostic: bool,
    /// One candidate per (anchor, class) whose score is above `conf` (ultralytics `multi_label=True`, what
    /// `DetectionValidator.postprocess` passes; it has no effect with one class); otherwise the best class only.
    pub multi_label: bool,
}

impl NmsConfig {
    /// ultralytics predict's NMS: best class per anchor, class-aware.
    pub fn predict(conf: f32, iou: f32, max_det: usize) -> Self {
        Self { conf, iou, max_det, agnostic: false, multi_label: false }
    }
}

/// ultralytics `utils.nms.non_max_suppression` for one-to-many output `[B, 4 + nc, A]` (xywh pixels + scores): the
/// candidates (best class per anchor, or every class above `conf` with `multi_label`) with `score > conf`, at most
/// 30000 by score, class-aware NMS (class offset 7680 px; burn-vision's NMS in place of torchvision's), `max_det`.
/// Candidates are ordered as ultralytics builds them (anchor-major, then class) before the stable score sort.
pub fn non_max_suppression<B: Backend>(pred: Tensor<B, 3>, cfg: NmsConfig) -> Vec<Vec<RawDetection>> {
    const MAX_WH: f32 = 7680.0;
    const MAX_NMS: usize = 30000;
    let [b, no, a] = pred.dims();
    let nc = no - 4;
    let multi = cfg.multi_label && nc > 1;
    let to_f32 = |t: Tensor<B, 3>| t.cast(burn::tensor::DType::F32).into_data().convert::<f32>().to_vec::<f32>();
    let boxes = to_f32(pred.clone().narrow(1, 0, 4)).expect("f32");
    let scores = pred.narrow(1, 4, nc);
    // Multi-label reads every score; single-label only the per-anchor maximum (on the device: 1/nc of the bytes).
    let (scores_all, best) = if multi {
        (to_f32(scores).expect("f32"), None)
    } else {
        let (conf, cls) = scores.max_dim_with_indices(1); // [B, 1, A]
        (Vec::new(), Some((to_f32(conf).expect("f32"), cls.into_data().convert::<i64>().to_vec::<i64>().expect("i64"))))
    };
    let host = burn::backend::flex::FlexDevice;
    (0..b)
        .map(|i| {
            // (anchor, class, score) candidates in ultralytics' order (anchor-major, then class).
            let mut cand: Vec<(usize, usize, f32)> = Vec::new();
            match &best {
                None => {
                    for j in 0..a {
                        for c in 0..nc {
                            let s = scores_all[(i * nc + c) * a + j];
                            if s > cfg.conf {
                                cand.push((j, c, s));
                            }
                        }
                    }
                }
                Some((conf, cls)) => {
                    cand.extend(
                        (0..a)
                            .filter(|&j| conf[i * a + j] > cfg.conf)
                            .map(|j| (j, cls[i * a + j] as usize, conf[i * a + j])),
                    );
                }
            }
            cand.sort_by(|x, y| y.2.total_cmp(&x.2));
            cand.truncate(MAX_NMS);
            if cand.is_empty() {
                return Vec::new();
            }
            let mut xyxy = Vec::with_capacity(cand.len());
            let mut shifted = Vec::with_capacity(cand.len() * 4);
            let mut scores = Vec::with_capacity(cand.len());
            for &(j, c, s) in &cand {
                let g = |k: usize| boxes[(i * 4 + k) * a + j];
                let (cx, cy, w, h) = (g(0), g(1), g(2), g(3));
                let bx = [cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0];
                let off = if cfg.agnostic { 0.0 } else { c as f32 * MAX_WH };
                shifted.extend(bx.iter().map(|v| v + off));
                xyxy.push(bx);
                scores.push(s);
            }
            let n = cand.len();
            let bt = Tensor::<Flex, 2>::from_data(TensorData::new(shifted, [n, 4]), &host);
            let st = Tensor::<Flex, 1>::from_data(TensorData::new(scores.clone(), [n]), &host);
            let keep =
                bt.nms(st, NmsOptions { iou_threshold: cfg.iou, score_threshold: 0.0, max_output_boxes: cfg.max_det });
            let keep = keep.into_data().convert::<i64>().to_vec::<i64>().expect("i64");
            keep.into_iter()
                .map(|k| {
                    let k = k as usize;
                    RawDetection { xyxy: xyxy[k], score: scores[k], class_id: cand[k].1 }
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use burn::backend::Flex;
    use burn::tensor::{Distribution, Tensor};

    use super::*;

    /// `decode_end2end` (sigmoid of the best logit, then of the selected rows) gives ultralytics' order of
    /// operations (sigmoid of every score, then the max and the top-k) bit for bit, saturated scores (logits above
    /// ~17, where the f32 sigmoid is 1.0 and values tie) included.
    #[test]
    fn end2end_decode_equals_sigmoid_first() {
        let dev = Default::default();
        <Flex as Backend>::seed(&dev, 3);
        let shapes = [[8, 8], [4, 4], [2, 2]];
        let a = 84;
        let (b, nc, k) = (2, 7, 30);
        let anchors = Anchors::<Flex>::new(&shapes, &dev);
        let boxes = Tensor::<Flex, 3>::random([b, 4, a], Distribution::Uniform(0.0, 4.0), &dev);
        // mostly negative logits, a block of saturated ones (ties at 1.0) and some in between
        let scores = Tensor::<Flex, 3>::random([b, nc, a], Distribution::Normal(-4.0, 3.0), &dev);
        let scores = scores
            .slice_assign([0..1, 2..4, 10..30], Tensor::random([1, 2, 20], Distribution::Uniform(17.0, 40.0), &dev));
        let head = HeadOutput { boxes: boxes.clone(), scores: scores.clone() };
        let got = decode_end2end(&head, &anchors, k).into_data().to_vec::<f32>().unwrap();
        // the formula in ultralytics' order
        let dboxes = decode_boxes(boxes, &anchors, false).swap_dims(1, 2);
        let s = burn::tensor::activation::sigmoid(scores).swap_dims(1, 2);
        let best: Tensor<Flex, 2> = s.clone().max_dim(2).squeeze_dim(2);
        let (_, ori) = topk_rows(best, k);
        let sel = s.gather(1, ori.clone().unsqueeze_dim::<3>(2).expand([b, k, nc])).reshape([b, k * nc]);
        let (top, index) = topk_rows(sel, k);
        let labels = index.clone().remainder_scalar(nc as i64).float();
        let idx = ori.gather(1, index.div_scalar(nc as i64));
        let tb = dboxes.gather(1, idx.unsqueeze_dim::<3>(2).expand([b, k, 4]));
        let want = Tensor::cat(vec![tb, top.unsqueeze_dim(2), labels.unsqueeze_dim(2)], 2);
        let want = want.into_data().to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "value {i}: {g} vs {w}");
        }
        assert!(want.chunks(6).filter(|r| r[4] == 1.0).count() >= 10, "saturated scores are in the top k");
    }
}
