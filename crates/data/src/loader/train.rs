//! The training loader: ultralytics `build_dataloader(dataset, batch, workers, shuffle=True)` over
//! `YOLODataset(augment=True)` with `v8_transforms` (`TrainTransform`), `drop_last=False`.

use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use yolo26_augment::{AugmentConfig, TrainTransform};

use super::source::{DatasetSource, EpochSource, ImageBuffer};
use super::{make_pool, spawn_batches, BatchIter, Item, RatioPad, Recycler};
use crate::synthetic::image_rng;
use crate::{DataError, Dataset};

/// Settings of a [`TrainLoader`].
#[derive(Clone, Debug, PartialEq)]
pub struct TrainLoaderConfig {
    /// Images per batch (ultralytics `batch`).
    pub batch_size: usize,
    /// Square training size (`imgsz`).
    pub imgsz: usize,
    /// Threads of the loader's own rayon pool (`workers`).
    pub workers: usize,
    /// Batches built ahead of the consumer (bounded channel capacity).
    pub prefetch: usize,
    /// Seed of the epoch shuffles and of every sample's augmentation.
    pub seed: u64,
    /// Augmentation hyper-parameters (ultralytics `hyp`, default.yaml).
    pub augment: AugmentConfig,
    /// Total epochs and `close_mosaic` (ultralytics: mosaic/mixup/cutmix off for the last `close_mosaic` epochs,
    /// i.e. from epoch `epochs - close_mosaic` on, 0-based).
    pub epochs: usize,
    /// Final epochs without mosaic/mixup/cutmix (ultralytics `close_mosaic`, default 10).
    pub close_mosaic: usize,
    /// RAM buffer length; `None` = the mosaic partner window (ultralytics' `max_buffer_length`,
    /// `min(n, 8 * batch, 1000)`) plus the samples in flight, so the buffer holds every partner
    /// ([`EpochSource`](super::source::EpochSource)); `Some(0)` = off. Only speed depends on it, never the batches.
    pub buffer: Option<usize>,
}

impl Default for TrainLoaderConfig {
    /// Ultralytics defaults: batch 16, imgsz 640, workers 8 (here: the number of CPUs, at most 8), 100 epochs,
    /// `close_mosaic=10`, seed 0, default.yaml augmentation.
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            batch_size: 16,
            imgsz: 640,
            workers: cpus.min(8),
            prefetch: 4,
            seed: 0,
            augment: AugmentConfig::default(),
            epochs: 100,
            close_mosaic: 10,
            buffer: None,
        }
    }
}

/// The training loader over one dataset split: ultralytics `build_dataloader(dataset, batch, workers,
/// shuffle=True, drop_last=False)` (`InfiniteDataLoader`, prefetch 4 batches per worker there) + `collate_fn`.
///
/// Randomness differs in stream, not in kind: ultralytics shuffles with a `torch.Generator` seeded
/// `6148914691236517205 + RANK + seed` and augments with Python's/NumPy's global generators per worker process
/// (`seed_worker`), so its per-sample draws depend on which worker ran what. Here the epoch order comes from
/// `(seed, epoch)` and each sample's draws from [`sample_rng`]`(seed, epoch, index)`: identical batches for any
/// `workers`. Rect training (`rect=True` for train) is not implemented (ultralytics' default is `rect=False`).
pub struct TrainLoader {
    source: Arc<DatasetSource>,
    cfg: TrainLoaderConfig,
    pool: Arc<rayon::ThreadPool>,
    /// Batch buffers handed back by dropped batches (kept across epochs).
    recycler: Recycler,
}

/// Seed of an epoch's shuffle (split id 2 of [`image_rng`]'s derivation, distinct from the synthetic images').
fn shuffle_rng(seed: u64, epoch: usize) -> ChaCha8Rng {
    image_rng(seed, 0x5348_5546 /* "SHUF" */, epoch as u64)
}

/// Generator of the augmentation of dataset item `index` in `epoch`: a `ChaCha8Rng` keyed from `(seed, epoch)`
/// with stream `index` (no ultralytics equivalent, see [`TrainLoader`]).
pub fn sample_rng(seed: u64, epoch: usize, index: usize) -> ChaCha8Rng {
    let mut base = image_rng(seed, 0x4155_4745 /* "AUGE" */, epoch as u64);
    let key: [u8; 32] = {
        use rand::RngCore;
        let mut k = [0u8; 32];
        base.fill_bytes(&mut k);
        k
    };
    let mut r = ChaCha8Rng::from_seed(key);
    r.set_stream(index as u64);
    r
}

impl TrainLoader {
    /// A loader over `dataset` (which must not be empty).
    pub fn new(dataset: Arc<Dataset>, cfg: TrainLoaderConfig) -> Result<Self, DataError> {
        if dataset.is_empty() {
            return Err(DataError::NoImages("training dataset is empty".into()));
        }
        if cfg.batch_size == 0 || cfg.imgsz == 0 {
            return Err(DataError::Spec(format!(
                "batch size ({}) and imgsz ({}) must be > 0",
                cfg.batch_size, cfg.imgsz
            )));
        }
        cfg.augment.validate()?;
        let window = ImageBuffer::ultralytics_len(dataset.len(), cfg.batch_size);
        // The window plus the items loaded ahead of the oldest in-flight sample (the batches in flight, plus one
        // batch of slack for the producer's ordering), at most the dataset.
        let slack = (super::BATCHES_IN_FLIGHT + 1) * cfg.batch_size;
        let len = cfg.buffer.unwrap_or_else(|| (window + slack).min(dataset.len()));
        let source = Arc::new(DatasetSource { dataset, imgsz: cfg.imgsz, buffer: ImageBuffer::new(len) });
        Ok(Self { source, pool: make_pool(cfg.workers)?, recycler: Recycler::default(), cfg })
    }

    /// The settings.
    pub fn config(&self) -> &TrainLoaderConfig {
        &self.cfg
    }

    /// Batches per epoch: `ceil(n / batch_size)` (`drop_last=False`).
    pub fn num_batches(&self) -> usize {
        self.source.dataset.len().div_ceil(self.cfg.batch_size)
    }

    /// Whether `epoch` (0-based) runs without mosaic (ultralytics `_close_dataloader_mosaic` at
    /// `epoch == epochs - close_mosaic`).
    pub fn mosaic_closed(&self, epoch: usize) -> bool {
        self.cfg.close_mosaic > 0 && epoch + self.cfg.close_mosaic >= self.cfg.epochs
    }

    /// The order of the dataset indices in `epoch`: a Fisher-Yates shuffle with a `ChaCha8Rng` derived from
    /// `(seed, epoch)`, independent of the thread count.
    pub fn epoch_order(&self, epoch: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.source.dataset.len()).collect();
        order.shuffle(&mut shuffle_rng(self.cfg.seed, epoch));
        order
    }

    /// The mosaic partner window: ultralytics' `max_buffer_length = min(n, 8 * batch, 1000)`.
    pub fn partner_window(&self) -> usize {
        ImageBuffer::ultralytics_len(self.source.dataset.len(), self.cfg.batch_size)
    }

    /// The batches of `epoch`: every item is `TrainTransform::apply(source, index, sample_rng(seed, epoch, index))`
    /// over an [`EpochSource`] (mosaic partners from the [`TrainLoader::partner_window`] positions before the item
    /// in the epoch order, wrapping to the previous epoch's tail), with mosaic closed per
    /// [`TrainLoader::mosaic_closed`]; images `imgsz × imgsz`.
    pub fn epoch(&self, epoch: usize) -> Result<BatchIter, DataError> {
        let order = self.epoch_order(epoch);
        let batches: Vec<Vec<usize>> = order.chunks(self.cfg.batch_size).map(<[usize]>::to_vec).collect();
        let prev = epoch.checked_sub(1).map(|e| self.epoch_order(e));
        let src = Arc::new(EpochSource::new(self.source.clone(), order, prev, self.partner_window())?);
        let aug = if self.mosaic_closed(epoch) { self.cfg.augment.close_mosaic() } else { self.cfg.augment.clone() };
        let tf = TrainTransform::new(aug, self.cfg.imgsz);
        let seed = self.cfg.seed;
        let imgsz = self.cfg.imgsz;
        spawn_batches(self.pool.clone(), self.recycler.clone(), batches, self.cfg.prefetch, move |index| {
            let mut rng = sample_rng(seed, epoch, index);
            let s = tf.apply(src.as_ref(), index, &mut rng)?;
            let e = &src.source.dataset.entries[index];
            let orig = [e.shape[0] as usize, e.shape[1] as usize];
            let r = imgsz as f64 / orig[0].max(orig[1]) as f64;
            Ok(Item {
                labels: s.normalized_xywh(),
                img: s.img,
                index,
                path: e.source.display_path(),
                orig,
                resized: [imgsz, imgsz],
                ratio_pad: RatioPad { ratio: [r, r], pad: [0.0, 0.0] },
            })
        })
    }

    /// The underlying sample source (e.g. to plot or inspect samples).
    pub fn source(&self) -> &Arc<DatasetSource> {
        &self.source
    }
}
