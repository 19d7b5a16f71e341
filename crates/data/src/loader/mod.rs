//! Batches for training and validation: ultralytics `build_dataloader` / `InfiniteDataLoader` with
//! `YOLODataset.collate_fn` (8.4.190, `ultralytics/data/build.py`, `ultralytics/data/dataset.py`), on a dedicated
//! rayon pool with a background prefetch thread.
//!
//! Both loaders cut the epoch into batches (a list of dataset indices each), then a background thread builds the
//! batches one after the other — the images of one batch in parallel on the loader's rayon pool
//! (`workers` threads) — and sends them through a bounded channel of `prefetch` batches, so decoding and
//! augmentation overlap with the consumer's compute. Every sample is a pure function of its inputs (index, epoch,
//! seed), never of scheduling, so batches are identical for any number of workers.

mod source;
mod train;
mod val;

use std::path::PathBuf;
use std::sync::Arc;

pub use source::{DatasetSource, ImageBuffer};
pub use train::{sample_rng, TrainLoader, TrainLoaderConfig};
pub use val::{ValLoader, ValLoaderConfig};

use crate::DataError;

/// Letterbox bookkeeping of one validation image: ultralytics `batch["ratio_pad"][i]` =
/// `((gain_h * r, gain_w * r), (left, top))`, with `gain = resized / original` of `load_image` and `r` the
/// letterbox ratio (f64 as in Python).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatioPad {
    /// `[ratio_h, ratio_w]`: original pixels → network-input pixels.
    pub ratio: [f64; 2],
    /// `[left, top]` padding in network-input pixels.
    pub pad: [f64; 2],
}

/// One collated batch (ultralytics `collate_fn` output).
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// `[B, 3, H, W]` u8 RGB, CHW per image, row-major (ultralytics `batch["img"]`, before `/ 255`; ultralytics is
    /// RGB here too after `Format`).
    pub images: Vec<u8>,
    /// `[B, 3, H, W]`.
    pub shape: [usize; 4],
    /// One row per object: `[batch_idx, cls, cx, cy, w, h]`, box normalised to `W`, `H` (ultralytics
    /// `batch["batch_idx"]`, `batch["cls"]`, `batch["bboxes"]` concatenated).
    pub targets: Vec<[f32; 6]>,
    /// Dataset index of each image (the mapping back to the dataset's original order).
    pub indices: Vec<usize>,
    /// Image file of each image (`batch["im_file"]`; synthetic images get their `write_ultralytics` name).
    pub paths: Vec<PathBuf>,
    /// Original `[h, w]` (`batch["ori_shape"]`).
    pub orig_shapes: Vec<[usize; 2]>,
    /// `[h, w]` after `load_image`'s resize (training) or after the letterbox (validation, ultralytics overwrites
    /// `resized_shape` with the letterbox `new_shape`) (`batch["resized_shape"]`).
    pub resized_shapes: Vec<[usize; 2]>,
    /// Mapping of original-image coordinates into the batch tensor (`batch["ratio_pad"]`).
    pub ratio_pad: Vec<RatioPad>,
}

impl Batch {
    /// Number of images.
    pub fn len(&self) -> usize {
        self.shape[0]
    }

    /// `true` when the batch has no image (never produced by the loaders).
    pub fn is_empty(&self) -> bool {
        self.shape[0] == 0
    }
}

/// One prepared image of a batch.
pub(crate) struct Item {
    pub img: image::RgbImage,
    /// `(cls, [cx, cy, w, h])` normalised to `img`.
    pub labels: Vec<(u32, [f32; 4])>,
    pub index: usize,
    pub path: PathBuf,
    pub orig: [usize; 2],
    pub resized: [usize; 2],
    pub ratio_pad: RatioPad,
}

/// Collate items of equal size (`collate_fn`): stack CHW images, concatenate targets with their batch index.
pub(crate) fn collate(items: Vec<Item>) -> Result<Batch, DataError> {
    let first = items.first().ok_or_else(|| DataError::Loader("empty batch".into()))?;
    let (w, h) = first.img.dimensions();
    let (w, h) = (w as usize, h as usize);
    let mut b = Batch {
        images: Vec::with_capacity(items.len() * 3 * h * w),
        shape: [items.len(), 3, h, w],
        targets: Vec::new(),
        indices: Vec::with_capacity(items.len()),
        paths: Vec::with_capacity(items.len()),
        orig_shapes: Vec::with_capacity(items.len()),
        resized_shapes: Vec::with_capacity(items.len()),
        ratio_pad: Vec::with_capacity(items.len()),
    };
    for (bi, it) in items.into_iter().enumerate() {
        if it.img.dimensions() != (w as u32, h as u32) {
            return Err(DataError::Loader(format!(
                "image {} is {}x{}, batch is {w}x{h}",
                it.index,
                it.img.width(),
                it.img.height()
            )));
        }
        let raw = it.img.as_raw();
        for c in 0..3 {
            b.images.extend(raw.iter().skip(c).step_by(3));
        }
        b.targets.extend(it.labels.iter().map(|(c, x)| [bi as f32, *c as f32, x[0], x[1], x[2], x[3]]));
        b.indices.push(it.index);
        b.paths.push(it.path);
        b.orig_shapes.push(it.orig);
        b.resized_shapes.push(it.resized);
        b.ratio_pad.push(it.ratio_pad);
    }
    Ok(b)
}

/// Iterator over the batches of one pass; batches are built ahead in a background thread.
/// Dropping it stops the producer after its current batch.
pub struct BatchIter {
    rx: crossbeam_channel::Receiver<Result<Batch, DataError>>,
    remaining: usize,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Iterator for BatchIter {
    type Item = Result<Batch, DataError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        match self.rx.recv() {
            Ok(b) => {
                self.remaining -= 1;
                if b.is_err() {
                    self.remaining = 0; // the producer stops after an error
                }
                Some(b)
            }
            Err(_) => {
                self.remaining = 0;
                let why = match self.handle.take().map(|h| h.join()) {
                    Some(Err(_)) => "the batch producer thread panicked",
                    _ => "the batch producer thread stopped early",
                };
                Some(Err(DataError::Loader(why.into())))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl Drop for BatchIter {
    fn drop(&mut self) {
        // Unblock a producer waiting on a full channel: dropping the receiver makes its `send` fail.
        let (_, dead) = crossbeam_channel::bounded(0);
        drop(std::mem::replace(&mut self.rx, dead));
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Build `batches` (lists of positions) in a background thread on `pool`, `make(position)` per image.
pub(crate) fn spawn_batches<F>(
    pool: Arc<rayon::ThreadPool>,
    batches: Vec<Vec<usize>>,
    prefetch: usize,
    make: F,
) -> Result<BatchIter, DataError>
where
    F: Fn(usize) -> Result<Item, DataError> + Send + Sync + 'static,
{
    let (tx, rx) = crossbeam_channel::bounded(prefetch.max(1));
    let remaining = batches.len();
    let handle = std::thread::Builder::new()
        .name("yolo26-data-loader".into())
        .spawn(move || {
            use rayon::prelude::*;
            for positions in batches {
                let batch = pool
                    .install(|| positions.par_iter().map(|&p| make(p)).collect::<Result<Vec<Item>, DataError>>())
                    .and_then(collate);
                let failed = batch.is_err();
                if tx.send(batch).is_err() || failed {
                    return;
                }
            }
        })
        .map_err(|e| DataError::Loader(format!("cannot start the loader thread: {e}")))?;
    Ok(BatchIter { rx, remaining, handle: Some(handle) })
}

/// A rayon pool of `workers` threads (at least 1).
pub(crate) fn make_pool(workers: usize) -> Result<Arc<rayon::ThreadPool>, DataError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(workers.max(1))
        .thread_name(|i| format!("yolo26-data-worker-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| DataError::Loader(format!("cannot build a rayon pool of {workers} threads: {e}")))
}

/// Images per second of `n_batches` batches of a loader pass (what a bench binary reports): the time from the
/// first request to the last batch received, nothing else done with the batches.
pub fn measure_images_per_second(iter: BatchIter, n_batches: usize) -> Result<f64, DataError> {
    let t = std::time::Instant::now();
    let mut images = 0usize;
    for b in iter.take(n_batches) {
        images += b?.len();
    }
    let dt = t.elapsed().as_secs_f64();
    Ok(images as f64 / dt.max(1e-9))
}
