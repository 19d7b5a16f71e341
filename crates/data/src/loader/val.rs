//! The validation loader: ultralytics `build_yolo_dataset(mode="val")` = `YOLODataset(augment=False, rect=True,
//! pad=0.5, stride=32)` with `LetterBox(new_shape=imgsz, scaleup=False)` fed the per-batch `rect_shape`, batches in
//! the aspect-ratio order of `set_rectangle`, no shuffle.

use std::sync::Arc;

use yolo26_augment::letterbox_sample;

use super::source::{DatasetSource, ImageBuffer};
use super::{make_pool, spawn_batches, BatchIter, Item, RatioPad, Recycler};
use crate::rect::{set_rectangle, RectBatches};
use crate::{DataError, Dataset};

/// Settings of a [`ValLoader`].
#[derive(Clone, Debug, PartialEq)]
pub struct ValLoaderConfig {
    /// Images per batch (ultralytics validator: `batch * 2` of training by default; pass what you want).
    pub batch_size: usize,
    /// `imgsz` of the letterbox and of the rect shapes.
    pub imgsz: usize,
    /// Model stride (32).
    pub stride: usize,
    /// `set_rectangle` pad (0.5 for val).
    pub pad: f64,
    /// Threads of the loader's own rayon pool.
    pub workers: usize,
    /// Batches built ahead of the consumer.
    pub prefetch: usize,
}

impl Default for ValLoaderConfig {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self { batch_size: 32, imgsz: 640, stride: 32, pad: 0.5, workers: cpus.min(8), prefetch: 2 }
    }
}

/// The validation loader over one dataset split.
pub struct ValLoader {
    source: Arc<DatasetSource>,
    cfg: ValLoaderConfig,
    rect: Arc<RectBatches>,
    pool: Arc<rayon::ThreadPool>,
    /// Batch buffers handed back by dropped batches (kept across epochs).
    recycler: Recycler,
}

impl ValLoader {
    /// A loader over `dataset` with rect batches from the verified image shapes.
    pub fn new(dataset: Arc<Dataset>, cfg: ValLoaderConfig) -> Result<Self, DataError> {
        if dataset.is_empty() {
            return Err(DataError::NoImages("validation dataset is empty".into()));
        }
        if cfg.batch_size == 0 || cfg.imgsz == 0 || cfg.stride == 0 {
            return Err(DataError::Spec("val batch size, imgsz and stride must be > 0".into()));
        }
        let shapes: Vec<[u32; 2]> = dataset.entries.iter().map(|e| e.shape).collect();
        let rect = Arc::new(set_rectangle(&shapes, cfg.imgsz, cfg.batch_size, cfg.stride, cfg.pad));
        let source = Arc::new(DatasetSource { dataset, imgsz: cfg.imgsz, buffer: ImageBuffer::new(0) });
        Ok(Self { source, pool: make_pool(cfg.workers)?, recycler: Recycler::default(), rect, cfg })
    }

    /// The rect batching (order, batch shapes).
    pub fn rect(&self) -> &RectBatches {
        &self.rect
    }

    /// Number of batches.
    pub fn num_batches(&self) -> usize {
        self.rect.batch_shapes.len()
    }

    /// One pass over the split. Per image: decode, `load_image`'s resize, letterbox to the batch shape with
    /// `auto=False, scaleup=False, center=True`; targets normalised to the batch shape.
    pub fn iter(&self) -> Result<BatchIter, DataError> {
        let bs = self.cfg.batch_size;
        let n = self.rect.order.len();
        let batches: Vec<Vec<usize>> = (0..n.div_ceil(bs)).map(|b| (b * bs..((b + 1) * bs).min(n)).collect()).collect();
        let (src, rect, stride) = (self.source.clone(), self.rect.clone(), self.cfg.stride);
        spawn_batches(self.pool.clone(), self.recycler.clone(), batches, self.cfg.prefetch, move |pos| {
            let index = rect.order[pos];
            let shape = rect.batch_shapes[rect.batch_of[pos]];
            let (s, orig) = src.load_resized(index)?;
            let (rh, rw) = (s.img.height() as usize, s.img.width() as usize);
            let (lb, info) = letterbox_sample(&s, shape, false, false, true, stride)?;
            let r = (shape[0] as f64 / rh as f64).min(shape[1] as f64 / rw as f64).min(1.0);
            let gain = [rh as f64 / orig[0] as f64, rw as f64 / orig[1] as f64];
            let e = &src.dataset.entries[index];
            Ok(Item {
                labels: lb.normalized_xywh(),
                img: lb.img,
                index,
                path: e.source.display_path(),
                orig,
                resized: shape,
                ratio_pad: RatioPad {
                    ratio: [gain[0] * r, gain[1] * r],
                    pad: [info.pad[0] as f64, info.pad[1] as f64],
                },
            })
        })
    }
}
