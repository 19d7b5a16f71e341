//! The dataset as the augmentation pipeline sees it, with ultralytics' RAM buffer of recently loaded images.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use yolo26_augment::{load_resize, Sample, SampleSource};

use crate::{DataError, Dataset};

/// A bounded buffer of recently loaded, resized samples: ultralytics `BaseDataset.buffer` / `self.ims` with
/// `max_buffer_length` (`min(ni, batch * 8, 1000)` when augmenting): once full, the oldest entry is evicted.
/// It only saves decoding; a buffered sample equals a freshly loaded one, so results do not depend on it.
/// (Ultralytics also draws mosaic partners from this buffer; here [`EpochSource`] draws them from a deterministic
/// window of recent epoch positions, which this buffer then holds.)
pub struct ImageBuffer {
    max_len: usize,
    inner: Mutex<BufferState>,
    hits: AtomicUsize,
    misses: AtomicUsize,
}

/// Buffered samples by index, and the indices in insertion order (oldest first).
type BufferState = (HashMap<usize, Arc<Sample>>, VecDeque<usize>);

impl ImageBuffer {
    /// A buffer of at most `max_len` samples (`0` disables it).
    pub fn new(max_len: usize) -> Self {
        Self {
            max_len,
            inner: Mutex::new((HashMap::new(), VecDeque::new())),
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
        }
    }

    /// `(hits, misses)` of the lookups so far (a miss decodes the image).
    pub fn stats(&self) -> (usize, usize) {
        (self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed))
    }

    /// Ultralytics' default length: `min(n, batch_size * 8, 1000)`.
    pub fn ultralytics_len(n: usize, batch_size: usize) -> usize {
        n.min(batch_size * 8).min(1000)
    }

    fn get(&self, i: usize) -> Option<Arc<Sample>> {
        let s = if self.max_len == 0 { None } else { self.inner.lock().ok().and_then(|g| g.0.get(&i).cloned()) };
        let counter = if s.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        s
    }

    fn put(&self, i: usize, s: Arc<Sample>) {
        if self.max_len == 0 {
            return;
        }
        // Evicted samples are dropped after the lock is released (freeing an image is not free).
        let mut evicted = Vec::new();
        if let Ok(mut g) = self.inner.lock() {
            match g.0.insert(i, s) {
                Some(old) => evicted.push(old), // loaded twice concurrently: the same sample
                None => g.1.push_back(i),
            }
            while g.1.len() > self.max_len {
                if let Some(j) = g.1.pop_front() {
                    evicted.extend(g.0.remove(&j));
                }
            }
        }
        drop(evicted);
    }

    /// Number of buffered samples.
    pub fn len(&self) -> usize {
        self.inner.lock().map(|g| g.1.len()).unwrap_or(0)
    }

    /// `true` when nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// [`Dataset`] as a `yolo26_augment::SampleSource`: `load(i)` = ultralytics `get_image_and_label(i)` without the
/// rect shape: decode (or render) the image, `load_image`'s resize to `imgsz` (`load_resize`, long side, INTER_LINEAR
/// bit-exact), labels denormalised to the resized image (`Sample::from_normalized_xywh`).
pub struct DatasetSource {
    /// The split.
    pub dataset: Arc<Dataset>,
    /// `load_image`'s target long side (`imgsz`).
    pub imgsz: usize,
    /// The RAM buffer (`max_buffer_length`; length 0 = off).
    pub buffer: ImageBuffer,
}

impl DatasetSource {
    /// Load image `i` resized, with its original `[h, w]`.
    pub fn load_resized(&self, i: usize) -> Result<(Arc<Sample>, [usize; 2]), DataError> {
        let e = self.dataset.entries.get(i).ok_or_else(|| DataError::Loader(format!("index {i} out of range")))?;
        let orig = [e.shape[0] as usize, e.shape[1] as usize];
        if let Some(s) = self.buffer.get(i) {
            return Ok((s, orig));
        }
        let img = self.dataset.load_image(i)?;
        let (w, h) = img.dimensions();
        let orig = [h as usize, w as usize];
        let loaded = load_resize(img, self.imgsz)?;
        let labels: Vec<(u32, [f32; 4])> = e.labels.cls.iter().copied().zip(e.labels.boxes.iter().copied()).collect();
        let s = Arc::new(Sample::from_normalized_xywh(loaded.img, &labels)?);
        self.buffer.put(i, s.clone());
        Ok((s, orig))
    }
}

impl SampleSource for DatasetSource {
    type Error = DataError;

    fn len(&self) -> usize {
        self.dataset.len()
    }

    fn load(&self, index: usize) -> Result<Sample, DataError> {
        Ok(self.load_resized(index)?.0.as_ref().clone())
    }

    /// The buffered sample itself (no copy).
    fn load_shared(&self, index: usize) -> Result<Arc<Sample>, DataError> {
        Ok(self.load_resized(index)?.0)
    }
}

/// The training loader's source for one epoch: [`DatasetSource`] plus the epoch order, so that mosaic partners come
/// from recently loaded items, as in ultralytics.
///
/// Ultralytics 8.4.190: `Mosaic.get_indexes` returns `random.choices(list(self.dataset.buffer), k=3)`, where
/// `dataset.buffer` holds the last `max_buffer_length = min(n, batch * 8, 1000)` indices that `load_image` loaded
/// (the current item included; partners come from the buffer, so they are not appended again). Each dataloader
/// worker process has its own buffer, and what it holds depends on which worker loaded what, i.e. on timing.
///
/// Here the buffer content is replaced by a fixed window: a partner of the item at position `p` of the epoch order
/// is the item at position `p - k`, `k` uniform in `0..window` (drawn by the sample's own generator; `k = 0` is the
/// item itself, which ultralytics' buffer also contains), `window = min(n, 8 * batch, 1000)`. Positions before 0
/// are the previous epoch's last positions (epoch 0: the window is cut at position 0, as ultralytics' buffer starts
/// empty). The result depends only on (seed, epoch, position), never on thread timing; and since these items were
/// loaded for the most recent samples, the [`ImageBuffer`] (sized to the window plus the samples in flight) serves
/// almost all partners without decoding.
pub struct EpochSource {
    /// The dataset source (with the RAM buffer).
    pub source: Arc<DatasetSource>,
    order: Vec<usize>,
    prev: Option<Vec<usize>>,
    pos: Vec<usize>,
    window: usize,
}

impl EpochSource {
    /// The source for an epoch whose order is `order` (a permutation of `0..n`), with the previous epoch's order
    /// (`None` for the first epoch) and the partner window length (clamped to `1..=n`). Errors when the orders are
    /// not permutations of the dataset indices.
    pub fn new(
        source: Arc<DatasetSource>,
        order: Vec<usize>,
        prev: Option<Vec<usize>>,
        window: usize,
    ) -> Result<Self, DataError> {
        let n = source.dataset.len();
        let mut pos = vec![usize::MAX; n];
        for (p, &i) in order.iter().enumerate() {
            if i >= n || pos[i] != usize::MAX {
                return Err(DataError::Loader(format!("epoch order is not a permutation of 0..{n}")));
            }
            pos[i] = p;
        }
        if order.len() != n || prev.as_ref().is_some_and(|o| o.len() != n || o.iter().any(|&i| i >= n)) {
            return Err(DataError::Loader(format!("epoch order is not a permutation of 0..{n}")));
        }
        Ok(Self { source, order, prev, pos, window: window.clamp(1, n.max(1)) })
    }

    /// The partner window length.
    pub fn window(&self) -> usize {
        self.window
    }
}

impl SampleSource for EpochSource {
    type Error = DataError;

    fn len(&self) -> usize {
        self.source.len()
    }

    fn load(&self, index: usize) -> Result<Sample, DataError> {
        self.source.load(index)
    }

    fn load_shared(&self, index: usize) -> Result<Arc<Sample>, DataError> {
        self.source.load_shared(index)
    }

    /// The item `k` positions before `index`'s in the epoch order, `k` uniform in `0..window` (see the type docs).
    fn mosaic_partner(&self, index: usize, rng: &mut ChaCha8Rng) -> usize {
        let n = self.order.len();
        let Some(&p) = self.pos.get(index) else {
            return rng.random_range(0..n.max(1)); // not in the order: out of range anyway, apply reports it
        };
        let window = match self.prev {
            Some(_) => self.window,
            None => self.window.min(p + 1),
        };
        let k = rng.random_range(0..window);
        match (p.checked_sub(k), &self.prev) {
            (Some(q), _) => self.order[q],
            (None, Some(prev)) => prev[n + p - k],
            (None, None) => self.order[0], // unreachable: window <= p + 1 without a previous epoch
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::Recipe;

    fn source(n: usize) -> Arc<DatasetSource> {
        Arc::new(DatasetSource {
            dataset: Arc::new(Dataset::synthetic(Recipe::Full, 0, 0, n)),
            imgsz: 64,
            buffer: ImageBuffer::new(0),
        })
    }

    /// Partners lie in the window before the item (epoch 0: cut at position 0; later: the previous epoch's tail),
    /// cover it, and depend only on the generator.
    #[test]
    fn partners_come_from_the_recent_window() {
        let n = 50;
        let order: Vec<usize> = (0..n).map(|p| (p * 7) % n).collect();
        let prev: Vec<usize> = (0..n).rev().collect();
        let first = EpochSource::new(source(n), order.clone(), None, 10).unwrap();
        let later = EpochSource::new(source(n), order.clone(), Some(prev.clone()), 10).unwrap();
        for (p, &i) in order.iter().enumerate() {
            let mut rng = ChaCha8Rng::seed_from_u64(p as u64);
            let mut seen = std::collections::HashSet::new();
            for _ in 0..200 {
                let j = first.mosaic_partner(i, &mut rng);
                let q = order.iter().position(|&x| x == j).unwrap();
                assert!(q <= p && p - q < 10, "epoch 0, position {p}: partner at {q}");
                seen.insert(j);
            }
            assert_eq!(seen.len(), (p + 1).min(10));
            let window: std::collections::HashSet<usize> =
                (0..10).map(|k| if k <= p { order[p - k] } else { prev[n + p - k] }).collect();
            let mut seen = std::collections::HashSet::new();
            for _ in 0..200 {
                let j = later.mosaic_partner(i, &mut rng);
                assert!(window.contains(&j), "epoch 1, position {p}: partner {j} not in {window:?}");
                seen.insert(j);
            }
            assert_eq!(seen, window);
            let (mut a, mut b) = (ChaCha8Rng::seed_from_u64(9), ChaCha8Rng::seed_from_u64(9));
            assert_eq!(later.mosaic_partner(i, &mut a), later.mosaic_partner(i, &mut b));
        }
    }

    #[test]
    fn bad_orders_are_errors() {
        assert!(EpochSource::new(source(4), vec![0, 1, 2], None, 4).is_err());
        assert!(EpochSource::new(source(4), vec![0, 1, 1, 3], None, 4).is_err());
        assert!(EpochSource::new(source(4), vec![0, 1, 2, 4], None, 4).is_err());
        assert!(EpochSource::new(source(4), vec![0, 1, 2, 3], Some(vec![0, 1, 9, 3]), 4).is_err());
        assert_eq!(EpochSource::new(source(4), vec![3, 1, 2, 0], None, 99).unwrap().window(), 4);
    }
}
