//! The [`Detector`]: weights + class names + options → detections in original-image pixels.
//!
//! ultralytics equivalent: `YOLO(weights).predict(source, imgsz, conf, iou, max_det, nms=False|None)` —
//! letterbox, forward, end-to-end top-k (`nms=False`) or one-to-many + NMS (default in ultralytics), `scale_boxes`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use image::RgbImage;

use crate::backend::YoloBackend;
use crate::config::{Scale, Yolo26Config};
use crate::fuse::FoldBn;
use crate::load::{cast_floats, load_weights, LoadError};
use crate::model::Yolo26;
use crate::names::default_names;
use crate::postprocess::{
    decode_end2end, decode_one2many, end2end_to_host, non_max_suppression, Anchors, NmsConfig, RawDetection,
};
use crate::preprocess::{letterbox_batch, LetterboxInfo};
use crate::weights::{read_weights, WeightMap, WeightsError};

/// Which head and decode to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeMode {
    /// One-to-one head, top-k, no NMS (ultralytics `nms=False`).
    EndToEnd,
    /// One-to-many head + class-aware NMS (ultralytics' default `nms=None`).
    Nms,
}

/// Inference settings of a [`Detector`] (ultralytics `predict` arguments; defaults as ultralytics' predict).
#[derive(Debug, Clone)]
pub struct DetectorOptions {
    /// Letterbox size (longest side), a multiple of 32.
    pub imgsz: usize,
    /// Confidence threshold: detections need `score > conf`.
    pub conf: f32,
    /// NMS IoU threshold ([`DecodeMode::Nms`] only).
    pub iou: f32,
    /// Maximum detections per image.
    pub max_det: usize,
    /// Which head and decode to use.
    pub mode: DecodeMode,
    /// Run in f16 (parameters and activations).
    pub half: bool,
    /// Number of classes; `None` = read it from the weights.
    pub nc: Option<usize>,
    /// NMS mode only: every class above `conf` per anchor (ultralytics' validator, `multi_label=True`), not only
    /// the best one (predict).
    pub multi_label: bool,
}

impl Default for DetectorOptions {
    fn default() -> Self {
        DetectorOptions {
            imgsz: 640,
            conf: 0.25,
            iou: 0.7,
            max_det: 300,
            mode: DecodeMode::EndToEnd,
            half: false,
            nc: None,
            multi_label: false,
        }
    }
}

/// One detection in original-image pixels.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Detection {
    /// Box corners `[x1, y1, x2, y2]` in original-image pixels.
    pub xyxy: [f32; 4],
    /// Class confidence (sigmoid of the logit).
    pub score: f32,
    /// Class index.
    pub class_id: usize,
    /// Class name (`names[class_id]`).
    pub class_name: String,
}

/// Why a [`Detector`] could not be built or could not run.
#[derive(Debug, thiserror::Error)]
pub enum DetectorError {
    /// The weight file could not be read.
    #[error(transparent)]
    Weights(#[from] WeightsError),
    /// The weights do not fit the model.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Inconsistent settings (class count, scale, image size).
    #[error("{0}")]
    Config(String),
    /// An input image could not be decoded.
    #[error("cannot decode image: {0}")]
    Image(#[from] yolo26_imageio::DecodeError),
}

/// Number of classes of an ultralytics YOLO26 state_dict (from the first one-to-many class conv's bias; `None`
/// unless that is a non-empty 1-D tensor, whose length the file's own bytes bound).
pub fn infer_nc(map: &WeightMap) -> Option<usize> {
    match map.tensors.get("model.23.cv3.0.2.bias")?.shape[..] {
        [n] if n > 0 => Some(n),
        _ => None,
    }
}

/// The scale whose layer-0 width and layer-2 depth match the state_dict, if any.
pub fn infer_scale(map: &WeightMap) -> Option<Scale> {
    let c0 = *map.tensors.get("model.0.conv.weight")?.shape.first()?;
    let deep = map.tensors.contains_key("model.2.m.1.cv1.conv.weight");
    Scale::ALL.into_iter().find(|s| {
        let cfg = Yolo26Config::new(*s, 1);
        cfg.ch(64) == c0 && (cfg.repeats(2) > 1) == deep
    })
}

/// Builds a model of `scale` from a weight file (safetensors or ultralytics `.pt`), BatchNorm folded.
pub fn load_model<B: Backend>(
    scale: Scale,
    map: &WeightMap,
    nc: Option<usize>,
    device: &B::Device,
) -> Result<Yolo26<B>, DetectorError> {
    let file_nc = infer_nc(map);
    let nc = match (nc, file_nc) {
        (Some(n), Some(f)) if n != f => {
            return Err(DetectorError::Config(format!(
                "{}: --nc {n} but the weights have {f} classes (model.23.cv3.0.2.bias)",
                map.source.display()
            )))
        }
        (Some(n), _) => n,
        (None, Some(f)) => f,
        (None, None) => 80,
    };
    if let Some(s) = infer_scale(map) {
        if s != scale {
            return Err(DetectorError::Config(format!(
                "{}: the weights are a yolo26{s} state_dict, but the model scale requested is {scale}",
                map.source.display()
            )));
        }
    }
    let model = Yolo26Config::new(scale, nc).init::<B>(device);
    Ok(load_weights(model, map)?)
}

/// A loaded model (BatchNorm folded, optionally f16) with its class names and [`DetectorOptions`]: the
/// counterpart of ultralytics' `YOLO(weights)` for `predict`.
pub struct Detector<B: YoloBackend> {
    model: Yolo26<B>,
    names: Vec<String>,
    opts: DetectorOptions,
    device: B::Device,
    anchors: Mutex<HashMap<Vec<[usize; 2]>, Anchors<B>>>,
}

impl<B: YoloBackend> Detector<B> {
    /// `names`: explicit class names; else those stored in the checkpoint; else COCO (80 classes) or `classN`.
    pub fn new(
        scale: Scale,
        weights: &Path,
        names: Option<Vec<String>>,
        opts: DetectorOptions,
        device: &B::Device,
    ) -> Result<Self, DetectorError> {
        let map = read_weights(weights)?;
        let model = load_model::<B>(scale, &map, opts.nc, device)?;
        let nc = model.num_classes();
        let names = names.or(map.names.clone()).unwrap_or_else(|| default_names(nc));
        if names.len() != nc {
            return Err(DetectorError::Config(format!(
                "{} class names given but the model has {nc} classes",
                names.len()
            )));
        }
        Self::from_model(model, names, opts, device)
    }

    /// Wraps an already built (unfolded or folded) model.
    pub fn from_model(
        model: Yolo26<B>,
        names: Vec<String>,
        opts: DetectorOptions,
        device: &B::Device,
    ) -> Result<Self, DetectorError> {
        if opts.imgsz == 0 || !opts.imgsz.is_multiple_of(32) {
            return Err(DetectorError::Config(format!("--imgsz {} must be a positive multiple of 32", opts.imgsz)));
        }
        let mut model = model.fold_bn();
        if opts.half {
            model = cast_floats(model, DType::F16);
        }
        Ok(Detector { model, names, opts, device: device.clone(), anchors: Mutex::new(HashMap::new()) })
    }

    /// Class names, index = class id.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The options the detector was built with.
    pub fn options(&self) -> &DetectorOptions {
        &self.opts
    }

    /// The (folded) model.
    pub fn model(&self) -> &Yolo26<B> {
        &self.model
    }

    /// Detects objects in an encoded image (JPEG, PNG, ...), decoded as ultralytics decodes it
    /// ([`yolo26_imageio::decode`]: OpenCV's `imdecode`, EXIF orientation applied).
    pub fn detect(&self, image_bytes: &[u8]) -> Result<Vec<Detection>, DetectorError> {
        let img = yolo26_imageio::decode(image_bytes)?;
        Ok(self.detect_batch(std::slice::from_ref(&img)).into_iter().next().unwrap_or_default())
    }

    /// Detects objects in a batch of images; one list per image, boxes in that image's pixels.
    pub fn detect_batch(&self, images: &[RgbImage]) -> Vec<Vec<Detection>> {
        if images.is_empty() {
            return Vec::new();
        }
        let (input, infos) = self.letterbox(images);
        let raw = self.infer(input);
        raw.into_iter()
            .zip(infos)
            .map(|(dets, info)| {
                dets.into_iter()
                    .map(|d| Detection {
                        xyxy: info.to_original(d.xyxy),
                        score: d.score,
                        class_id: d.class_id,
                        class_name: self.names.get(d.class_id).cloned().unwrap_or_else(|| d.class_id.to_string()),
                    })
                    .collect()
            })
            .collect()
    }

    /// Letterboxes a batch to one network input shape (minimal stride-aligned padding when all images share a
    /// size, square `imgsz` otherwise, as ultralytics' predictor does).
    fn letterbox(&self, imgs: &[RgbImage]) -> (Tensor<B, 4>, Vec<LetterboxInfo>) {
        let refs: Vec<&RgbImage> = imgs.iter().collect();
        let batch = letterbox_batch(&refs, self.opts.imgsz);
        let x = Tensor::<B, 4>::from_data(TensorData::new(batch.data, batch.shape), &self.device);
        (x, batch.infos)
    }

    /// The anchor grid of this feature-map layout, built on the device on first use and cached (in the
    /// model's float dtype; the `[3, A]` decode grid stays F32).
    fn anchors_for(&self, feat_shapes: &[[usize; 2]]) -> Anchors<B> {
        let mut cache = self.anchors.lock().expect("anchor cache");
        let half = self.opts.half;
        cache
            .entry(feat_shapes.to_vec())
            .or_insert_with(|| {
                let a = Anchors::new(feat_shapes, &self.device);
                if half {
                    Anchors { points: a.points.cast(DType::F16), strides: a.strides.cast(DType::F16), ..a }
                } else {
                    a
                }
            })
            .clone()
    }

    /// Forward + decode of a letterboxed batch `[B, 3, H, W]`; detections in network-input pixels.
    pub fn infer(&self, x: Tensor<B, 4>) -> Vec<Vec<RawDetection>> {
        self.postprocess(self.infer_device(x))
    }

    /// The device part of [`Detector::infer`]: forward and box decode of the selected head. `[B, 4 + nc, A]` (xywh
    /// pixels + class scores, ultralytics' one-to-many `y`) for [`DecodeMode::Nms`], `[B, max_det, 6]` rows
    /// (`x1, y1, x2, y2, score, class`, the one-to-one top-k) for [`DecodeMode::EndToEnd`].
    pub fn infer_device(&self, x: Tensor<B, 4>) -> Tensor<B, 3> {
        // on the CPU, the whole forward on one of rayon's threads (see `on_host_pool`)
        kernels_cubecl::conv::on_host_pool::<B, _>(|| {
            let x = if self.opts.half { x.cast(DType::F16) } else { x };
            let feats = self.model.forward_features(x);
            let shapes = crate::nn::head::feature_shapes(&feats);
            let anchors = self.anchors_for(&shapes);
            match self.opts.mode {
                DecodeMode::EndToEnd => {
                    let head = self.model.layer23.forward_one2one(&feats);
                    decode_end2end(&head, &anchors, self.opts.max_det)
                }
                DecodeMode::Nms => decode_one2many(&self.model.layer23.forward_one2many(&feats), &anchors),
            }
        })
    }

    /// The host part of [`Detector::infer`] (ultralytics `non_max_suppression`): the confidence filter of the
    /// end-to-end rows, or NMS of the one-to-many output.
    pub fn postprocess(&self, pred: Tensor<B, 3>) -> Vec<Vec<RawDetection>> {
        match self.opts.mode {
            DecodeMode::EndToEnd => end2end_to_host(pred, self.opts.conf),
            DecodeMode::Nms => non_max_suppression(
                pred,
                NmsConfig {
                    multi_label: self.opts.multi_label,
                    ..NmsConfig::predict(self.opts.conf, self.opts.iou, self.opts.max_det)
                },
            ),
        }
    }
}
