//! The data loaders of `yolo26-data` as burn's [`DataLoader`]s, so that burn-train's `SupervisedTraining` gets
//! them: the augmenting training loader (one epoch per `iter()`, the epoch set by the learning strategy) and the
//! validation split (one [`ValJob`] per `iter()`).
//!
//! Batches stay on the host (`yolo26_data::Batch`, u8 images): the train step uploads them, so `to_device` has
//! nothing to move. A loading error ends the epoch's iterator and is kept for the strategy, which stops the run
//! naming it (an iterator of burn's `DataLoader` yields items, not results).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use burn::data::dataloader::{DataLoader, DataLoaderIterator, Progress};
use burn::prelude::Backend;
use yolo26_data::{Batch, BatchIter, TrainLoader};

use super::model::ValJob;

/// The training loader of a run; `iter()` yields the batches of the epoch last set with [`EpochLoader::set_epoch`]
/// (mosaic, its closing and the shuffle order depend on it), or the batches of a slice of them.
#[derive(Clone)]
pub struct EpochLoader {
    loader: Arc<TrainLoader>,
    epoch: Arc<AtomicUsize>,
    error: Arc<Mutex<Option<String>>>,
    /// Batch index range of a slice (`DataLoader::slice`), else all batches.
    range: Option<(usize, usize)>,
}

impl EpochLoader {
    pub fn new(loader: TrainLoader) -> Self {
        EpochLoader {
            loader: Arc::new(loader),
            epoch: Arc::new(AtomicUsize::new(0)),
            error: Arc::new(Mutex::new(None)),
            range: None,
        }
    }

    pub fn set_epoch(&self, epoch: usize) {
        self.epoch.store(epoch, Ordering::Relaxed);
    }

    /// Batches per epoch of the whole loader.
    pub fn num_batches(&self) -> usize {
        self.loader.num_batches()
    }

    /// The loading error that ended the last epoch early, if one did (taken: a second call gives `None`).
    pub fn take_error(&self) -> Option<String> {
        self.error.lock().ok().and_then(|mut e| e.take())
    }

    fn fail(&self, msg: String) {
        if let Ok(mut e) = self.error.lock() {
            e.get_or_insert(msg);
        }
    }
}

struct EpochIter<'a> {
    owner: &'a EpochLoader,
    inner: Option<BatchIter>,
    epoch: usize,
    index: usize,
    range: (usize, usize),
}

impl Iterator for EpochIter<'_> {
    type Item = Batch;
    fn next(&mut self) -> Option<Batch> {
        loop {
            if self.index >= self.range.1 {
                return None;
            }
            let item = self.inner.as_mut()?.next()?;
            let i = self.index;
            self.index += 1;
            match item {
                Ok(b) if i >= self.range.0 => return Some(b),
                Ok(_) => continue,
                Err(e) => {
                    self.owner.fail(format!("epoch {}, batch {i}: {e}", self.epoch + 1));
                    self.inner = None;
                    return None;
                }
            }
        }
    }
}

impl DataLoaderIterator<Batch> for EpochIter<'_> {
    fn progress(&self) -> Progress {
        Progress::new(self.index.saturating_sub(self.range.0), self.range.1 - self.range.0)
    }
}

impl<B: Backend> DataLoader<B, Batch> for EpochLoader {
    fn iter<'a>(&'a self) -> Box<dyn DataLoaderIterator<Batch> + 'a> {
        let epoch = self.epoch.load(Ordering::Relaxed);
        let inner = match self.loader.epoch(epoch) {
            Ok(it) => Some(it),
            Err(e) => {
                self.fail(format!("epoch {}: {e}", epoch + 1));
                None
            }
        };
        let range = self.range.unwrap_or((0, self.loader.num_batches()));
        Box::new(EpochIter { owner: self, inner, epoch, index: 0, range })
    }

    fn num_items(&self) -> usize {
        let (a, b) = self.range.unwrap_or((0, self.loader.num_batches()));
        (b - a) * self.loader.config().batch_size
    }

    fn to_device(&self, _device: &B::Device) -> Arc<dyn DataLoader<B, Batch>> {
        Arc::new(self.clone())
    }

    /// Items `start..end` of [`DataLoader::num_items`] become the batches they fall in (a multi-device split gets
    /// disjoint batch ranges of every epoch).
    fn slice(&self, start: usize, end: usize) -> Arc<dyn DataLoader<B, Batch>> {
        let bs = self.loader.config().batch_size.max(1);
        let (a, b) = self.range.unwrap_or((0, self.loader.num_batches()));
        let lo = (a + start / bs).min(b);
        let hi = (a + end.div_ceil(bs)).clamp(lo, b);
        Arc::new(EpochLoader { range: Some((lo, hi)), ..self.clone() })
    }
}

/// The validation split as a loader of one [`ValJob`].
#[derive(Clone)]
pub struct ValJobLoader {
    pub job: ValJob,
}

struct OneJob {
    job: Option<ValJob>,
}

impl Iterator for OneJob {
    type Item = ValJob;
    fn next(&mut self) -> Option<ValJob> {
        self.job.take()
    }
}

impl DataLoaderIterator<ValJob> for OneJob {
    fn progress(&self) -> Progress {
        Progress::new(usize::from(self.job.is_none()), 1)
    }
}

impl<B: Backend> DataLoader<B, ValJob> for ValJobLoader {
    fn iter<'a>(&'a self) -> Box<dyn DataLoaderIterator<ValJob> + 'a> {
        Box::new(OneJob { job: Some(self.job.clone()) })
    }

    fn num_items(&self) -> usize {
        self.job.dataset.len()
    }

    fn to_device(&self, _device: &B::Device) -> Arc<dyn DataLoader<B, ValJob>> {
        Arc::new(self.clone())
    }

    /// The split is validated whole (mAP is not a mean over parts).
    fn slice(&self, _start: usize, _end: usize) -> Arc<dyn DataLoader<B, ValJob>> {
        Arc::new(self.clone())
    }
}
