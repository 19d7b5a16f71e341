//! Validation with ultralytics 8.4.190's `DetectionValidator` semantics (`yolo26 val`, and the per-epoch
//! validation of training).
//!
//! What it does, step by step, with the ultralytics equivalent:
//! * batches: `yolo26_data::ValLoader` = `build_yolo_dataset(mode="val", rect=True)` (aspect-ratio sorted rect
//!   batches, pad 0.5, `LetterBox(auto=False, scaleup=False)`), images `/ 255` (`DetectionValidator.preprocess`);
//! * `max_det` raised to the largest object count of an image when it is at its default 300 (`_check_max_det`);
//! * predictions: [`Detector::infer_device`] + [`Detector::postprocess`] with conf 0.001, IoU 0.7 and
//!   `multi_label=True` (`DetectionValidator.postprocess` → `nms.non_max_suppression`); the head follows
//!   `nms`: one-to-many + NMS by default ([`DecodeMode::Nms`], ultralytics `nms=None`), the one-to-one top-k with
//!   [`DecodeMode::EndToEnd`] (`nms=False`);
//! * matching in letterboxed pixels: targets `xywh2xyxy(bboxes) * (w, h, w, h)` (`_prepare_batch`), `box_iou` +
//!   `match_predictions` over IoU 0.50:0.05:0.95 (`_process_batch`), confusion matrix at the validator's conf and
//!   IoU 0.45 (`ConfusionMatrix.process_batch`);
//! * metrics: `ap_per_class` → P, R, mAP50, mAP50-95 per class and overall, fitness = mAP50-95
//!   (`DetMetrics.process`, `results_dict`), via `yolo26_eval`;
//! * `--save-json`: boxes scaled back to the original image with the batch's `ratio_pad` (`scale_boxes`,
//!   `clip_boxes`), COCO `[x, y, w, h]` rounded to 3 decimals, scores to 5 (`pred_to_json`).

mod report;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use burn::prelude::*;
use burn::tensor::TensorData;
use yolo26_data::{Batch, Dataset, ValLoader, ValLoaderConfig};
use yolo26_eval::ultra::{ConfusionMatrix, DetStats, Prediction, Target, CM_IOU};
use yolo26_model::postprocess::RawDetection;
use yolo26_model::{DecodeMode, Detector, DetectorOptions, Yolo26, YoloBackend};

pub use report::{ClassRow, CocoDetection, Speed, ValReport};

/// Options of a validation run (ultralytics `model.val(...)` arguments of the same names).
#[derive(Clone, Debug)]
pub struct ValConfig {
    pub imgsz: usize,
    pub batch: usize,
    /// Confidence threshold (ultralytics val default 0.001).
    pub conf: f32,
    /// NMS IoU threshold (0.7).
    pub iou: f32,
    /// Detections per image (300; raised to the dataset's largest object count when left at 300).
    pub max_det: usize,
    /// Which head: [`DecodeMode::Nms`] (ultralytics' default for YOLO26) or [`DecodeMode::EndToEnd`].
    pub mode: DecodeMode,
    /// Run the model in f16.
    pub half: bool,
    /// Loader threads (decode + letterbox).
    pub workers: usize,
    /// Collect COCO-format detections (`--save-json`).
    pub save_json: bool,
}

impl Default for ValConfig {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        ValConfig {
            imgsz: 640,
            batch: 32,
            conf: 0.001,
            iou: 0.7,
            max_det: 300,
            mode: DecodeMode::Nms,
            half: false,
            workers: cpus.min(8),
            save_json: false,
        }
    }
}

/// Why a validation run failed.
#[derive(Debug, thiserror::Error)]
pub enum ValError {
    #[error(transparent)]
    Data(#[from] yolo26_data::DataError),
    #[error(transparent)]
    Model(#[from] yolo26_model::detector::DetectorError),
    #[error(transparent)]
    Eval(#[from] yolo26_eval::EvalError),
    #[error("{0}")]
    Config(String),
}

/// ultralytics' default `max_det`; only this value is raised by `_check_max_det`.
const DEFAULT_MAX_DET: usize = 300;

/// Validates `model` (BatchNorm is folded for the run; the model itself is not changed) on `dataset`, whose class
/// names must match the model's classes. `progress` is called after every batch with (batches done, total).
pub fn validate<B: YoloBackend>(
    model: Yolo26<B>,
    dataset: Arc<Dataset>,
    cfg: &ValConfig,
    device: &B::Device,
    mut progress: impl FnMut(usize, usize),
) -> Result<ValReport, ValError> {
    let names = dataset.names.clone();
    let nc = model.num_classes();
    if names.len() != nc {
        return Err(ValError::Config(format!(
            "the dataset has {} classes ({}), the model {nc}",
            names.len(),
            names.join(", ")
        )));
    }
    let max_objects = dataset.entries.iter().map(|e| e.labels.cls.len()).max().unwrap_or(0);
    let max_det = if cfg.max_det == DEFAULT_MAX_DET && max_objects > cfg.max_det { max_objects } else { cfg.max_det };
    if max_det != cfg.max_det {
        eprintln!(
            "warning: dataset images contain up to {max_objects} objects, but max_det={}; setting max_det={max_det} \
             to match the observed maximum (as ultralytics does)",
            cfg.max_det
        );
    }
    let opts = DetectorOptions {
        imgsz: cfg.imgsz,
        conf: cfg.conf,
        iou: cfg.iou,
        max_det,
        mode: cfg.mode,
        half: cfg.half,
        nc: Some(nc),
        multi_label: true,
    };
    let det = Detector::from_model(model, names.clone(), opts, device)?;
    let loader = ValLoader::new(
        dataset.clone(),
        ValLoaderConfig { batch_size: cfg.batch, imgsz: cfg.imgsz, workers: cfg.workers, ..Default::default() },
    )?;
    let total = loader.num_batches();
    let mut acc = Accumulator::new(nc, cfg.conf);
    let mut speed = Speed::default();
    let mut jdict = cfg.save_json.then(Vec::new);
    let class_map = class_map(&dataset);
    for (bi, batch) in loader.iter()?.enumerate() {
        let batch = batch?;
        let t0 = Instant::now();
        let x = input_tensor::<B>(&batch, device);
        let t1 = Instant::now();
        let pred = det.infer_device(x);
        B::sync(device).map_err(|e| ValError::Config(format!("device error: {e:?}")))?;
        let t2 = Instant::now();
        let dets = det.postprocess(pred);
        let t3 = Instant::now();
        speed.add(batch.len(), t1 - t0, t2 - t1, t3 - t2);
        for (si, d) in dets.iter().enumerate() {
            let targets = image_targets(&batch, si);
            acc.add(d, &targets)?;
            if let Some(j) = jdict.as_mut() {
                j.extend(coco_detections(&batch, si, d, &dataset, &class_map));
            }
        }
        progress(bi + 1, total);
    }
    let metrics = acc.stats.finish(nc);
    Ok(ValReport::new(names, metrics, acc.confusion, acc.images_per_class, acc.seen, speed, jdict, cfg.mode))
}

/// `[B, 3, H, W]` u8 → float `/ 255` on the device (`batch["img"].float() / 255`).
fn input_tensor<B: Backend>(batch: &Batch, device: &B::Device) -> Tensor<B, 4> {
    let data: Vec<f32> = batch.images.iter().map(|&v| v as f32 / 255.0).collect();
    Tensor::from_data(TensorData::new(data, batch.shape), device)
}

/// The targets of image `si` in letterboxed pixels (`_prepare_batch`: `xywh2xyxy(bboxes) * imgsz[[1, 0, 1, 0]]`,
/// float32).
fn image_targets(batch: &Batch, si: usize) -> Vec<Target> {
    let [_, _, h, w] = batch.shape;
    let (w, h) = (w as f32, h as f32);
    batch
        .targets
        .iter()
        .filter(|t| t[0] as usize == si)
        .map(|t| {
            let (cx, cy, bw, bh) = (t[2], t[3], t[4], t[5]);
            let (dw, dh) = (bw / 2.0, bh / 2.0);
            Target { bbox: [(cx - dw) * w, (cy - dh) * h, (cx + dw) * w, (cy + dh) * h], cls: t[1] as usize }
        })
        .collect()
}

/// What the validator accumulates over the images.
struct Accumulator {
    stats: DetStats,
    confusion: ConfusionMatrix,
    /// Images containing each class (`nt_per_image`).
    images_per_class: Vec<usize>,
    seen: usize,
    conf: f32,
}

impl Accumulator {
    fn new(nc: usize, conf: f32) -> Self {
        Accumulator {
            stats: DetStats::default(),
            confusion: ConfusionMatrix::new(nc),
            images_per_class: vec![0; nc],
            seen: 0,
            conf,
        }
    }

    /// `update_metrics` for one image: predictions in NMS order (descending score).
    fn add(&mut self, dets: &[RawDetection], targets: &[Target]) -> Result<(), ValError> {
        self.seen += 1;
        let preds: Vec<Prediction> =
            dets.iter().map(|d| Prediction { bbox: d.xyxy, conf: d.score, cls: d.class_id }).collect();
        self.stats.add_image(&preds, targets);
        self.confusion.process_batch(&preds, targets, self.conf, CM_IOU)?;
        let mut present = vec![false; self.images_per_class.len()];
        for t in targets {
            if let Some(p) = present.get_mut(t.cls) {
                *p = true;
            }
        }
        for (n, p) in self.images_per_class.iter_mut().zip(present) {
            *n += p as usize;
        }
        Ok(())
    }
}

/// Class index → COCO `category_id`: the dataset's own category ids for a COCO instances JSON, else `1..=nc`
/// (ultralytics `class_map = list(range(1, nc + 1))` for non-COCO data).
fn class_map(dataset: &Dataset) -> Vec<i64> {
    match &dataset.coco {
        Some(c) => c.class_to_category.clone(),
        None => (1..=dataset.names.len() as i64).collect(),
    }
}

/// `pred_to_json` for one image: boxes to original pixels (`scale_boxes` with `ratio_pad`, then clipped), COCO
/// `[x, y, w, h]`.
fn coco_detections(
    batch: &Batch,
    si: usize,
    dets: &[RawDetection],
    dataset: &Dataset,
    class_map: &[i64],
) -> Vec<CocoDetection> {
    let rp = batch.ratio_pad[si];
    let [oh, ow] = batch.orig_shapes[si];
    let path: &PathBuf = &batch.paths[si];
    let image_id = match &dataset.coco {
        Some(c) => serde_json::Value::from(c.image_ids[batch.indices[si]]),
        None => report::image_id_from_stem(path),
    };
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // float32 like the torch tensors of `scale_boxes` / `xyxy2xywh` (the Python scalars act in the tensor dtype).
    let ([gy, gx], [px, py]) = (rp.ratio.map(|v| v as f32), rp.pad.map(|v| v as f32));
    dets.iter()
        .map(|d| {
            let sx = |v: f32| ((v - px) / gx).clamp(0.0, ow as f32);
            let sy = |v: f32| ((v - py) / gy).clamp(0.0, oh as f32);
            let (x1, y1, x2, y2) = (sx(d.xyxy[0]), sy(d.xyxy[1]), sx(d.xyxy[2]), sy(d.xyxy[3]));
            let (w, h) = (x2 - x1, y2 - y1);
            let (cx, cy) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
            let r3 = |v: f32| (v as f64 * 1000.0).round() / 1000.0;
            CocoDetection {
                image_id: image_id.clone(),
                file_name: file_name.clone(),
                category_id: class_map.get(d.class_id).copied().unwrap_or(d.class_id as i64 + 1),
                bbox: [r3(cx - w / 2.0), r3(cy - h / 2.0), r3(w), r3(h)],
                score: (d.score as f64 * 1e5).round() / 1e5,
            }
        })
        .collect()
}
