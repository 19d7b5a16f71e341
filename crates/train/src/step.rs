//! One training forward: a collated batch on the device, both heads in training mode (BatchNorm on batch
//! statistics under Autodiff; the one-to-one head on detached neck features, ultralytics `x_detach`) and the
//! `E2ELoss` (ultralytics `DetectionModel.loss(batch, preds)`).

use burn::prelude::*;
use burn::tensor::TensorData;
use yolo26_data::Batch;
use yolo26_model::postprocess::Anchors;
use yolo26_model::Yolo26;

use crate::assigner::GtBoxes;
use crate::backend::TrainBackend;
use crate::loss::{E2ELoss, E2ELossOutput};

/// `[B, 3, H, W]` f32 in [0, 1] (ultralytics `preprocess_batch`: `img.float() / 255`). The conversion runs on
/// rayon's global pool in 64k-value chunks (a batch of 64 at 640 is 79 M values, converted between GPU steps). Its
/// own cost was not timed apart; with this and the readback order of `TrainStep::step`, `yolo26 train` on an H100
/// went from 65 to 71–74 images/s (docs/BENCHMARKS.md, run 4).
pub fn batch_images<B: Backend>(batch: &Batch, device: &B::Device) -> Tensor<B, 4> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 16;
    let mut data = vec![0f32; batch.images.len()];
    data.par_chunks_mut(CHUNK).zip(batch.images.par_chunks(CHUNK)).for_each(|(out, src)| {
        for (o, &v) in out.iter_mut().zip(src) {
            *o = v as f32 / 255.0;
        }
    });
    Tensor::from_data(TensorData::new(data, batch.shape), device)
}

/// The padded ground truth of a batch (`v8DetectionLoss.preprocess`): `G` = the most boxes of one image,
/// boxes `xywh2xyxy(xywh · [W, H, W, H])` in input pixels, zero rows as padding.
pub fn batch_targets<B: Backend>(batch: &Batch, device: &B::Device) -> GtBoxes<B> {
    let [b, _, h, w] = batch.shape;
    let mut counts = vec![0usize; b];
    for t in &batch.targets {
        counts[t[0] as usize] += 1;
    }
    let g = counts.iter().copied().max().unwrap_or(0);
    let mut boxes = vec![0f32; b * g * 4];
    let mut labels = vec![0i64; b * g];
    let mut mask = vec![0f32; b * g];
    let mut fill = vec![0usize; b];
    let (wf, hf) = (w as f32, h as f32);
    for t in &batch.targets {
        let i = t[0] as usize;
        let slot = i * g + fill[i];
        fill[i] += 1;
        let (cx, cy, bw, bh) = (t[2] * wf, t[3] * hf, t[4] * wf, t[5] * hf);
        let (dw, dh) = (bw / 2.0, bh / 2.0);
        boxes[slot * 4..slot * 4 + 4].copy_from_slice(&[cx - dw, cy - dh, cx + dw, cy + dh]);
        labels[slot] = t[1] as i64;
        mask[slot] = 1.0;
    }
    GtBoxes {
        bboxes: Tensor::from_data(TensorData::new(boxes, [b, g, 4]), device),
        labels: Tensor::from_data(TensorData::new(labels, [b, g]), device),
        mask: Tensor::from_data(TensorData::new(mask, [b, g]), device),
    }
}

/// Fixed pseudo-random ground truth for benchmarks: `per_image` boxes per image (xyxy input pixels, inside the
/// `imgsz` square) with sides drawn uniformly in `[side.0, side.1]` px, random classes, no padding. The draws come
/// from a fixed xorshift64* stream, so every call gives the same boxes.
pub fn random_targets<B: Backend>(
    batch: usize,
    per_image: usize,
    imgsz: usize,
    nc: usize,
    side: (f32, f32),
    device: &B::Device,
) -> GtBoxes<B> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut uniform = || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32
    };
    let s = imgsz as f32;
    let (lo, span) = (side.0.min(s), (side.1.min(s) - side.0.min(s)).max(0.0));
    let (mut boxes, mut labels) = (Vec::with_capacity(batch * per_image * 4), Vec::with_capacity(batch * per_image));
    for _ in 0..batch * per_image {
        let (w, h) = (lo + span * uniform(), lo + span * uniform());
        let (x, y) = (uniform() * (s - w), uniform() * (s - h));
        boxes.extend([x, y, x + w, y + h]);
        labels.push(((uniform() * nc as f32) as i64).min(nc as i64 - 1));
    }
    GtBoxes {
        bboxes: Tensor::from_data(TensorData::new(boxes, [batch, per_image, 4]), device),
        labels: Tensor::from_data(TensorData::new(labels, [batch, per_image]), device),
        mask: Tensor::ones([batch, per_image], device),
    }
}

/// Training forward and loss: `model(img)` with both heads (the one-to-one head on detached features) and
/// `E2ELoss` with the weights `loss` carries for the current epoch.
pub fn train_forward<B: TrainBackend>(
    model: &Yolo26<B>,
    loss: &E2ELoss,
    images: Tensor<B, 4>,
    gt: &GtBoxes<B>,
) -> E2ELossOutput<B> {
    let device = images.device();
    let feats = model.forward_features(images);
    let shapes = yolo26_model::nn::head::feature_shapes(&feats);
    let head = &model.layer23;
    let o2m = head.forward_one2many(&feats);
    let detached: Vec<_> = feats.iter().map(|f| f.clone().detach()).collect();
    let o2o = head.forward_one2one(&detached);
    loss.forward(&o2m, &o2o, &Anchors::<B>::new(&shapes, &device), gt)
}
