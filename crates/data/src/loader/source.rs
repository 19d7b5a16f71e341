//! The dataset as the augmentation pipeline sees it, with ultralytics' RAM buffer of recently loaded images.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use yolo26_augment::{load_resize, Sample, SampleSource};

use crate::{DataError, Dataset};

/// A bounded buffer of recently loaded, resized samples: ultralytics `BaseDataset.buffer` / `self.ims` with
/// `max_buffer_length` (`min(ni, batch * 8, 1000)` when augmenting): once full, the oldest entry is evicted.
/// It only saves decoding; a buffered sample equals a freshly loaded one, so results do not depend on it.
/// (Ultralytics also draws mosaic partners from this buffer; `TrainTransform` draws them uniformly instead.)
pub struct ImageBuffer {
    max_len: usize,
    inner: Mutex<BufferState>,
}

/// Buffered samples by index, and the indices in insertion order (oldest first).
type BufferState = (HashMap<usize, Arc<Sample>>, VecDeque<usize>);

impl ImageBuffer {
    /// A buffer of at most `max_len` samples (`0` disables it).
    pub fn new(max_len: usize) -> Self {
        Self { max_len, inner: Mutex::new((HashMap::new(), VecDeque::new())) }
    }

    /// Ultralytics' default length: `min(n, batch_size * 8, 1000)`.
    pub fn ultralytics_len(n: usize, batch_size: usize) -> usize {
        n.min(batch_size * 8).min(1000)
    }

    fn get(&self, i: usize) -> Option<Arc<Sample>> {
        if self.max_len == 0 {
            return None;
        }
        self.inner.lock().ok()?.0.get(&i).cloned()
    }

    fn put(&self, i: usize, s: Arc<Sample>) {
        if self.max_len == 0 {
            return;
        }
        if let Ok(mut g) = self.inner.lock() {
            if g.0.insert(i, s).is_none() {
                g.1.push_back(i);
            }
            while g.1.len() > self.max_len {
                if let Some(j) = g.1.pop_front() {
                    g.0.remove(&j);
                }
            }
        }
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
}
