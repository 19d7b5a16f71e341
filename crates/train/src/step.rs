//! One training forward: a collated batch on the device, both heads in training mode (BatchNorm on batch
//! statistics under Autodiff; the one-to-one head on detached neck features, ultralytics `x_detach`) and the
//! `E2ELoss` (ultralytics `DetectionModel.loss(batch, preds)`).

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use yolo26_data::Batch;
use yolo26_model::nn::head::HeadOutput;
use yolo26_model::postprocess::Anchors;
use yolo26_model::Yolo26;

use crate::assigner::GtBoxes;
use crate::backend::TrainBackend;
use crate::loss::{E2ELoss, E2ELossOutput};

/// `[B, 3, H, W]` f32 in [0, 1] from u8 pixels `images` of `shape` (a batch's `images`; ultralytics
/// `preprocess_batch`: `img.float() / 255`, on the GPU there too): where the backend stores u8 tensors
/// (`Backend::supports_dtype(U8)`: CUDA, Flex; not WGSL) the u8 bytes are sent as they are, in pieces of whole
/// images of at most [`UPLOAD_CHUNK_BYTES`] (concatenated on the device), and converted there (`float() / 255`, the
/// division IEEE-exact as on the host: tested on every value); elsewhere the host converts (on rayon's pool) and
/// sends f32.
///
/// Measured (`bench-upload`, H100, batch 64 at 640, 2026-12-06): the f32 upload with the host conversion 537 ms,
/// the u8 batch as one tensor 158 ms (CubeCL stages every upload through its pinned-memory pool, slow for one
/// 78 MB piece), the u8 batch per image + `cat` 32 ms.
pub fn images_tensor<B: Backend>(images: &[u8], shape: [usize; 4], device: &B::Device) -> Tensor<B, 4> {
    images_tensor_in::<B>(images, shape, device, UPLOAD_CHUNK_BYTES)
}

/// Largest piece of a batch's u8 upload (see [`images_tensor`]): one 640 × 640 image is 1.2 MB.
pub const UPLOAD_CHUNK_BYTES: usize = 2 << 20;

/// [`images_tensor`] with pieces of at most `chunk_bytes` (at least one image each).
fn images_tensor_in<B: Backend>(
    images: &[u8],
    shape: [usize; 4],
    device: &B::Device,
    chunk_bytes: usize,
) -> Tensor<B, 4> {
    if !B::supports_dtype(device, DType::U8) {
        return Tensor::from_data(TensorData::new(host_unit_floats(images), shape), device);
    }
    let per_image = shape[1..].iter().product::<usize>().max(1);
    let k = (chunk_bytes / per_image).max(1);
    let u8_tensor = |bytes: &[u8]| {
        let n = bytes.len() / per_image;
        let data = TensorData::new(bytes.to_vec(), [n, shape[1], shape[2], shape[3]]);
        Tensor::<B, 4, Int>::from_data(data, (device, DType::U8))
    };
    let pixels = if shape[0] <= k {
        u8_tensor(images)
    } else {
        Tensor::cat(images.chunks(k * per_image).map(u8_tensor).collect(), 0)
    };
    pixels.float().div_scalar(255.0)
}

/// `v as f32 / 255` of every value, on rayon's global pool in 64k-value chunks.
pub fn host_unit_floats(images: &[u8]) -> Vec<f32> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 16;
    let mut data = vec![0f32; images.len()];
    data.par_chunks_mut(CHUNK).zip(images.par_chunks(CHUNK)).for_each(|(out, src)| {
        for (o, &v) in out.iter_mut().zip(src) {
            *o = v as f32 / 255.0;
        }
    });
    data
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
    let o2m = f32_outputs(head.forward_one2many(&feats));
    let detached: Vec<_> = feats.iter().map(|f| f.clone().detach()).collect();
    let o2o = f32_outputs(head.forward_one2one(&detached));
    loss.forward(&o2m, &o2o, &Anchors::<B>::new(&shapes, &device), gt)
}

/// A head's raw outputs in f32 (mixed precision: the loss, the assignment included, runs in f32, as under
/// torch.autocast where ultralytics' loss casts `pred_scores`/`pred_distri` up); a no-op for f32 outputs.
pub fn f32_outputs<B: Backend>(o: HeadOutput<B>) -> HeadOutput<B> {
    HeadOutput { boxes: o.boxes.cast(DType::F32), scores: o.scores.cast(DType::F32) }
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};

    use super::*;

    /// Every u8 value in each of the planes of a `[5, 3, 16, 16]` batch, in different orders.
    fn values() -> Vec<u8> {
        (0..3840u32).map(|i| ((i * 97 + i / 256 * 31) % 256) as u8).collect()
    }

    /// The device-side `float() / 255` (or the host fallback) gives the host's `v as f32 / 255` bit for bit, as one
    /// piece and in pieces of 1 and 2 images (the last one shorter).
    fn device_conversion_is_exact<B: Backend>(device: &B::Device) {
        let v = values();
        let want = host_unit_floats(&v);
        for chunk in [UPLOAD_CHUNK_BYTES, 768, 2 * 768 + 5] {
            let t = images_tensor_in::<B>(&v, [5, 3, 16, 16], device, chunk);
            assert_eq!(t.dims(), [5, 3, 16, 16]);
            let got = t.into_data().to_vec::<f32>().unwrap();
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.to_bits(), w.to_bits(), "chunk {chunk}: value {} at {i}: {g} vs {w}", v[i]);
            }
        }
    }

    #[test]
    fn images_tensor_exact_flex() {
        device_conversion_is_exact::<Flex>(&Default::default());
        device_conversion_is_exact::<Autodiff<Flex>>(&Default::default());
    }

    #[cfg(feature = "wgpu")]
    #[test]
    fn images_tensor_exact_wgpu() {
        device_conversion_is_exact::<Autodiff<burn::backend::Wgpu>>(&Default::default());
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn images_tensor_exact_cuda() {
        use burn::backend::{cuda::CudaDevice, Cuda};
        assert!(<Cuda>::supports_dtype(&CudaDevice::new(0), burn::tensor::DType::U8), "CUDA takes the u8 path");
        device_conversion_is_exact::<Autodiff<Cuda>>(&CudaDevice::new(0));
    }
}
