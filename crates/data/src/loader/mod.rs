//! Batches for training and validation: ultralytics `build_dataloader` / `InfiniteDataLoader` with
//! `YOLODataset.collate_fn` (8.4.190, `ultralytics/data/build.py`, `ultralytics/data/dataset.py`), on a dedicated
//! rayon pool with a background prefetch thread.
//!
//! Both loaders cut the epoch into batches (a list of dataset indices each), then a background thread builds the
//! batches in order — every image is a job on the loader's rayon pool (`workers` threads), made and converted to
//! CHW there, with the next batch's jobs queued while the current batch completes — and sends them through a
//! bounded channel of `prefetch` batches, so decoding and augmentation overlap with the consumer's compute. Every
//! sample is a pure function of its inputs (index, epoch, seed), never of scheduling, so batches are identical for
//! any number of workers.

mod source;
#[cfg(test)]
mod timing;
mod train;
mod val;

use std::path::PathBuf;
use std::sync::Arc;

pub use source::{DatasetSource, EpochSource, ImageBuffer};
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

/// One collated batch (ultralytics `collate_fn` output). Dropping a batch made by a loader hands its pixel buffer
/// back to that loader for a later batch ([`Recycler`]).
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
    /// Where `images` goes when the batch is dropped (`None`: freed).
    pub(crate) recycler: Option<Recycler>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        if let Some(r) = self.recycler.take() {
            r.give(std::mem::take(&mut self.images));
        }
    }
}

/// Pixel buffers of dropped batches, reused by the next batches of the same loader: a batch buffer (`B·3·H·W`
/// bytes, 78 MB at batch 64 and 640 px) is larger than glibc's largest mmap threshold, so a fresh one per batch
/// is an `mmap` whose ~19,000 pages all fault in on their first write, and an `munmap` (a TLB shootdown on every
/// core running a thread of the process) when the consumer drops it. At most [`Recycler::KEEP`] buffers are kept.
#[derive(Clone, Default)]
pub(crate) struct Recycler(Arc<std::sync::Mutex<Vec<Vec<u8>>>>);

impl Recycler {
    /// Buffers kept for reuse (the batches in the consumer's hands and in the prefetch queue come back one by one).
    const KEEP: usize = 4;

    /// A kept buffer of exactly `len` bytes (old contents), else a zeroed new one.
    fn take(&self, len: usize) -> Vec<u8> {
        let kept = self.0.lock().ok().and_then(|mut v| v.iter().position(|b| b.len() == len).map(|i| v.swap_remove(i)));
        kept.unwrap_or_else(|| vec![0u8; len])
    }

    /// Keep `buf` for a later [`Recycler::take`] (dropped when [`Recycler::KEEP`] buffers are kept already).
    fn give(&self, buf: Vec<u8>) {
        if buf.is_empty() {
            return;
        }
        let mut rejected = Some(buf);
        if let Ok(mut v) = self.0.lock() {
            if v.len() < Self::KEEP {
                v.extend(rejected.take());
            }
        }
        drop(rejected); // freed outside the lock
    }

    /// Number of buffers kept.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.0.lock().map(|v| v.len()).unwrap_or(0)
    }
}

impl std::fmt::Debug for Recycler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recycler")
    }
}

/// Batches compare by content: where their buffers go afterwards is not part of it.
impl PartialEq for Recycler {
    fn eq(&self, _: &Self) -> bool {
        true
    }
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

    /// The batch cut into at most `n` contiguous shards of `ceil(len / n)` images (the last ones smaller, none
    /// empty), each with its own targets (batch index re-based) and metadata: the per-device parts of a global
    /// batch in data-parallel training (ultralytics gives each DDP rank a contiguous part of the data,
    /// `ContiguousDistributedSampler`). The pixels are copied; `self` keeps its buffer (and gives it back to its
    /// loader when dropped). `n == 0` is taken as 1.
    pub fn shards(&self, n: usize) -> Vec<Batch> {
        let len = self.len();
        let per = len.div_ceil(n.max(1)).max(1);
        let [_, c, h, w] = self.shape;
        let image = c * h * w;
        (0..len)
            .step_by(per)
            .map(|start| {
                let end = (start + per).min(len);
                let targets = self
                    .targets
                    .iter()
                    .filter(|t| (start..end).contains(&(t[0] as usize)))
                    .map(|t| {
                        let mut t = *t;
                        t[0] -= start as f32;
                        t
                    })
                    .collect();
                Batch {
                    images: self.images[start * image..end * image].to_vec(),
                    shape: [end - start, c, h, w],
                    targets,
                    indices: self.indices[start..end].to_vec(),
                    paths: self.paths[start..end].to_vec(),
                    orig_shapes: self.orig_shapes[start..end].to_vec(),
                    resized_shapes: self.resized_shapes[start..end].to_vec(),
                    ratio_pad: self.ratio_pad[start..end].to_vec(),
                    recycler: None,
                }
            })
            .collect()
    }

    /// The batches one after another as one batch (the inverse of [`Batch::shards`]); an error names the first
    /// batch whose image size differs from the first's.
    pub fn concat(parts: &[Batch]) -> Result<Batch, DataError> {
        let first = parts.first().ok_or_else(|| DataError::Loader("concat of no batches".into()))?;
        let [_, c, h, w] = first.shape;
        let mut out = Batch {
            images: Vec::new(),
            shape: [0, c, h, w],
            targets: Vec::new(),
            indices: Vec::new(),
            paths: Vec::new(),
            orig_shapes: Vec::new(),
            resized_shapes: Vec::new(),
            ratio_pad: Vec::new(),
            recycler: None,
        };
        for (i, b) in parts.iter().enumerate() {
            if b.shape[1..] != first.shape[1..] {
                return Err(DataError::Loader(format!(
                    "batch {i} has images of {:?}, batch 0 of {:?}",
                    &b.shape[1..],
                    &first.shape[1..]
                )));
            }
            let base = out.shape[0] as f32;
            out.images.extend_from_slice(&b.images);
            out.targets.extend(b.targets.iter().map(|t| [t[0] + base, t[1], t[2], t[3], t[4], t[5]]));
            out.indices.extend_from_slice(&b.indices);
            out.paths.extend_from_slice(&b.paths);
            out.orig_shapes.extend_from_slice(&b.orig_shapes);
            out.resized_shapes.extend_from_slice(&b.resized_shapes);
            out.ratio_pad.extend_from_slice(&b.ratio_pad);
            out.shape[0] += b.len();
        }
        Ok(out)
    }

    /// The images (back to HWC) and their pixel boxes, e.g. for `yolo26_augment::plot_batch` (ultralytics
    /// `plot_training_samples`).
    pub fn samples(&self) -> Result<Vec<yolo26_augment::Sample>, DataError> {
        let [n, _, h, w] = self.shape;
        let plane = h * w;
        (0..n)
            .map(|i| {
                let chw = &self.images[i * 3 * plane..(i + 1) * 3 * plane];
                let mut hwc = Vec::with_capacity(3 * plane);
                for p in 0..plane {
                    hwc.extend([chw[p], chw[plane + p], chw[2 * plane + p]]);
                }
                let img = image::RgbImage::from_raw(w as u32, h as u32, hwc)
                    .ok_or_else(|| DataError::Loader("batch image buffer size".into()))?;
                let labels: Vec<(u32, [f32; 4])> = self
                    .targets
                    .iter()
                    .filter(|t| t[0] as usize == i)
                    .map(|t| (t[1] as u32, [t[2], t[3], t[4], t[5]]))
                    .collect();
                Ok(yolo26_augment::Sample::from_normalized_xywh(img, &labels)?)
            })
            .collect()
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

/// An [`Item`] whose pixels are already in CHW order (converted on the worker thread that made it, so that the
/// producer thread only concatenates).
pub(crate) struct Ready {
    item: Item,
    /// `[3, h, w]` planes of `item.img` (which is then dropped: `item.img` is an empty image).
    chw: Vec<u8>,
    /// `(w, h)` of the image.
    dims: (u32, u32),
}

impl Ready {
    /// Convert `item.img` to CHW planes.
    pub(crate) fn new(mut item: Item) -> Self {
        let dims = item.img.dimensions();
        let chw = hwc_to_chw(item.img.as_raw());
        item.img = image::RgbImage::new(0, 0);
        Self { item, chw, dims }
    }
}

/// `[h, w, 3]` → `[3, h, w]` (`img.transpose(2, 0, 1)`), one pass over the pixels.
pub(crate) fn hwc_to_chw(raw: &[u8]) -> Vec<u8> {
    let n = raw.len() / 3;
    let mut out = vec![0u8; n * 3];
    let (r, rest) = out.split_at_mut(n);
    let (g, b) = rest.split_at_mut(n);
    for (((px, r), g), b) in raw.chunks_exact(3).zip(r).zip(g).zip(b) {
        (*r, *g, *b) = (px[0], px[1], px[2]);
    }
    out
}

/// Collate items of equal size (`collate_fn`): stack CHW images, concatenate targets with their batch index.
/// The pixels are copied on the calling thread; [`collate_on`] copies them on a pool.
#[cfg(test)]
pub(crate) fn collate(items: Vec<Ready>) -> Result<Batch, DataError> {
    collate_with(items, None, |images, chw| {
        for (dst, src) in images.chunks_exact_mut(chw[0].len().max(1)).zip(chw) {
            dst.copy_from_slice(src);
        }
    })
}

/// [`collate`] with the pixels copied by `pool`'s threads, one image per task, into a buffer from `recycler`: a
/// fresh batch buffer's first writes fault its pages in, which on one thread took ~50 ms of kernel time per batch
/// on the 16-core GPU machine and capped the loader at ~1,190 images/s whatever the worker count (`bench-loader`'s
/// CPU accounting, 2026-12-06).
pub(crate) fn collate_on(pool: &rayon::ThreadPool, recycler: &Recycler, items: Vec<Ready>) -> Result<Batch, DataError> {
    use rayon::prelude::*;
    collate_with(items, Some(recycler), |images, chw| {
        pool.install(|| {
            images.par_chunks_mut(chw[0].len().max(1)).zip(chw.par_iter()).for_each(|(dst, src)| {
                dst.copy_from_slice(src);
            })
        })
    })
}

/// The shared part of [`collate`] / [`collate_on`]: checks, metadata, and `copy(images, chw)` to fill the
/// `[B, 3, H, W]` buffer (from `recycler`, else zeroed) from the per-image CHW planes (all of one length).
fn collate_with(
    items: Vec<Ready>,
    recycler: Option<&Recycler>,
    copy: impl FnOnce(&mut [u8], &[&[u8]]),
) -> Result<Batch, DataError> {
    let first = items.first().ok_or_else(|| DataError::Loader("empty batch".into()))?;
    let (w, h) = first.dims;
    let (w, h) = (w as usize, h as usize);
    let mut b = Batch {
        images: Vec::new(),
        shape: [items.len(), 3, h, w],
        targets: Vec::new(),
        indices: Vec::with_capacity(items.len()),
        paths: Vec::with_capacity(items.len()),
        orig_shapes: Vec::with_capacity(items.len()),
        resized_shapes: Vec::with_capacity(items.len()),
        ratio_pad: Vec::with_capacity(items.len()),
        recycler: None,
    };
    let mut planes = Vec::with_capacity(items.len());
    for (bi, Ready { item: it, chw, dims }) in items.into_iter().enumerate() {
        if dims != (w as u32, h as u32) || chw.len() != 3 * h * w {
            return Err(DataError::Loader(format!("image {} is {}x{}, batch is {w}x{h}", it.index, dims.0, dims.1)));
        }
        planes.push(chw);
        b.targets.extend(it.labels.iter().map(|(c, x)| [bi as f32, *c as f32, x[0], x[1], x[2], x[3]]));
        b.indices.push(it.index);
        b.paths.push(it.path);
        b.orig_shapes.push(it.orig);
        b.resized_shapes.push(it.resized);
        b.ratio_pad.push(it.ratio_pad);
    }
    // every byte is written once by `copy`: a recycled buffer's old contents do not matter
    let len = planes.len() * 3 * h * w;
    b.images = recycler.map_or_else(|| vec![0u8; len], |r| r.take(len));
    b.recycler = recycler.cloned();
    let refs: Vec<&[u8]> = planes.iter().map(Vec::as_slice).collect();
    copy(&mut b.images, &refs);
    drop(refs);
    // the per-image planes are freed on this thread after the copy
    drop(planes);
    Ok(b)
}

/// Iterator over the batches of one pass; batches are built ahead in a background thread.
/// Dropping it stops the producer after its current batch (images of the next batch already queued on the pool are
/// still made, then discarded).
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

/// Batches whose images are being made on the pool while the producer waits for (and collates) the oldest one.
/// Three: the collate of the oldest runs on the pool behind the jobs already queued (FIFO), so two more batches
/// keep every worker busy meanwhile.
const BATCHES_IN_FLIGHT: usize = 3;

/// The results of one batch's images, by position in the batch.
type ItemResults = crossbeam_channel::Receiver<(usize, std::thread::Result<Result<Ready, DataError>>)>;

/// Build `batches` (lists of positions) in a background thread on `pool`, `make(position)` per image.
///
/// Every image is its own pool job (made and converted to CHW on a worker); the jobs of the next batch are queued
/// while the producer waits for the current one, so the workers do not idle on a batch's last images or on the
/// collate. Results are put back in position order, so batches do not depend on the scheduling. A panic in `make`
/// is re-raised on the producer thread (the iterator then reports it).
pub(crate) fn spawn_batches<F>(
    pool: Arc<rayon::ThreadPool>,
    recycler: Recycler,
    batches: Vec<Vec<usize>>,
    prefetch: usize,
    make: F,
) -> Result<BatchIter, DataError>
where
    F: Fn(usize) -> Result<Item, DataError> + Send + Sync + 'static,
{
    let (tx, rx) = crossbeam_channel::bounded(prefetch.max(1));
    let remaining = batches.len();
    let make = Arc::new(make);
    let handle = std::thread::Builder::new()
        .name("yolo26-data-loader".into())
        .spawn(move || {
            let mut queued = batches.into_iter();
            let mut in_flight: std::collections::VecDeque<(usize, ItemResults)> = Default::default();
            loop {
                while in_flight.len() < BATCHES_IN_FLIGHT {
                    let Some(positions) = queued.next() else { break };
                    let (itx, irx) = crossbeam_channel::unbounded();
                    for (slot, p) in positions.iter().copied().enumerate() {
                        let (make, itx) = (make.clone(), itx.clone());
                        pool.spawn(move || {
                            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make(p).map(Ready::new)));
                            let _ = itx.send((slot, r)); // the receiver is gone when the pass was dropped
                        });
                    }
                    in_flight.push_back((positions.len(), irx));
                }
                let Some((len, irx)) = in_flight.pop_front() else { return };
                let mut slots: Vec<Option<Result<Ready, DataError>>> = (0..len).map(|_| None).collect();
                for _ in 0..len {
                    match irx.recv() {
                        Ok((slot, Ok(r))) => slots[slot] = Some(r),
                        Ok((_, Err(panic))) => std::panic::resume_unwind(panic),
                        Err(_) => return, // a job was dropped without running: the pool is gone
                    }
                }
                let batch = slots
                    .into_iter()
                    .map(|r| r.unwrap_or_else(|| Err(DataError::Loader("a batch image was not made".into()))))
                    .collect::<Result<Vec<Ready>, DataError>>()
                    .and_then(|items| collate_on(&pool, &recycler, items));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn item(index: usize) -> Item {
        let img = image::RgbImage::from_fn(5, 4, |x, y| image::Rgb([x as u8, y as u8, index as u8]));
        Item {
            img,
            labels: vec![(index as u32, [0.5; 4])],
            index,
            path: PathBuf::from(format!("{index}.jpg")),
            orig: [4, 5],
            resized: [4, 5],
            ratio_pad: RatioPad { ratio: [1.0, 1.0], pad: [0.0, 0.0] },
        }
    }

    /// Images finishing out of order still land in position order; CHW layout; a `make` error ends the pass.
    #[test]
    fn batches_in_position_order() {
        let pool = make_pool(3).unwrap();
        let batches: Vec<Vec<usize>> = vec![vec![0, 1, 2, 3], vec![4, 5, 6], vec![7], vec![8, 9]];
        let it = spawn_batches(pool.clone(), Recycler::default(), batches.clone(), 1, |p| {
            std::thread::sleep(std::time::Duration::from_millis(((10 - p) * 3) as u64));
            Ok(item(p))
        })
        .unwrap();
        let got: Vec<Batch> = it.map(|b| b.unwrap()).collect();
        assert_eq!(got.len(), 4);
        for (b, want) in got.iter().zip(&batches) {
            assert_eq!(&b.indices, want);
            assert_eq!(b.shape, [want.len(), 3, 4, 5]);
            for (bi, &p) in want.iter().enumerate() {
                let img = &b.images[bi * 60..(bi + 1) * 60];
                assert_eq!(img[..20], (0..20).map(|i| (i % 5) as u8).collect::<Vec<_>>()[..], "R plane = x");
                assert_eq!(img[20..40], (0..20).map(|i| (i / 5) as u8).collect::<Vec<_>>()[..], "G plane = y");
                assert!(img[40..].iter().all(|&v| v == p as u8), "B plane = index");
                assert_eq!(b.targets[bi][..2], [bi as f32, p as f32]);
            }
        }
        let it = spawn_batches(pool, Recycler::default(), batches, 1, |p| {
            if p == 5 {
                Err(DataError::Loader("bad image".into()))
            } else {
                Ok(item(p))
            }
        })
        .unwrap();
        let got: Vec<Result<Batch, DataError>> = it.collect();
        assert_eq!(got.len(), 2);
        assert!(got[0].is_ok() && got[1].is_err());
    }

    /// Dropped batches hand their buffers back and later batches of the same size are collated into them (every
    /// byte rewritten: contents as in a fresh buffer); at most `KEEP` buffers are kept; other sizes get new ones.
    #[test]
    fn batch_buffers_are_recycled() {
        let pool = make_pool(2).unwrap();
        let recycler = Recycler::default();
        let batches: Vec<Vec<usize>> = (0..12).map(|b| vec![2 * b, 2 * b + 1]).collect();
        let it = spawn_batches(pool.clone(), recycler.clone(), batches.clone(), 1, |p| Ok(item(p))).unwrap();
        for (b, want) in it.zip(&batches) {
            let b = b.unwrap();
            assert_eq!(&b.indices, want);
            for (bi, &p) in want.iter().enumerate() {
                let img = &b.images[bi * 60..(bi + 1) * 60];
                assert_eq!(img[..20], (0..20).map(|i| (i % 5) as u8).collect::<Vec<_>>()[..], "R plane = x");
                assert!(img[40..].iter().all(|&v| v == p as u8), "B plane = index");
            }
            // `b` is dropped here: its buffer goes back to the recycler, and a later batch takes it
        }
        assert!(recycler.kept() >= 1 && recycler.kept() <= Recycler::KEEP);
        // a batch of another size does not take a kept buffer of the wrong length
        let kept = recycler.kept();
        let it = spawn_batches(pool, recycler.clone(), vec![vec![0, 1, 2]], 1, |p| Ok(item(p))).unwrap();
        let b: Vec<Batch> = it.map(|b| b.unwrap()).collect();
        assert_eq!(b[0].images.len(), 180);
        assert_eq!(recycler.kept(), kept);
        drop(b);
        assert_eq!(recycler.kept(), (kept + 1).min(Recycler::KEEP));
    }

    /// Shards are contiguous (`ceil(len / n)` images, none empty), their targets re-based; `concat` undoes
    /// `shards` exactly; mismatched image sizes are an error naming the batch.
    #[test]
    fn shards_and_concat() {
        let pool = make_pool(2).unwrap();
        let mut it = spawn_batches(pool, Recycler::default(), vec![(0..5).collect()], 1, |p| Ok(item(p))).unwrap();
        let b = it.next().unwrap().unwrap();
        let parts = b.shards(2);
        assert_eq!(parts.iter().map(|p| p.indices.clone()).collect::<Vec<_>>(), vec![vec![0, 1, 2], vec![3, 4]]);
        assert_eq!(parts[1].shape, [2, 3, 4, 5]);
        assert_eq!(parts[1].images, b.images[3 * 60..]);
        assert_eq!(parts[1].targets.iter().map(|t| [t[0], t[1]]).collect::<Vec<_>>(), vec![[0.0, 3.0], [1.0, 4.0]]);
        assert_eq!(b.shards(4).iter().map(Batch::len).collect::<Vec<_>>(), vec![2, 2, 1]);
        assert_eq!(b.shards(9).len(), 5);
        assert_eq!(b.shards(0).len(), 1);
        let mut whole = Batch::concat(&parts).unwrap();
        whole.recycler = b.recycler.clone(); // (where the buffer goes is not compared: `Option` is)
        assert_eq!(whole, b);
        let mut odd = parts[1].clone();
        odd.shape[3] = 6;
        let e = Batch::concat(&[parts[0].clone(), odd]).unwrap_err().to_string();
        assert!(e.contains("batch 1"), "{e}");
    }

    /// `take` hands back a kept buffer of the asked length (the same allocation), else a new zeroed one.
    #[test]
    fn recycler_take_and_give() {
        let r = Recycler::default();
        assert_eq!(r.take(7), vec![0u8; 7]);
        let buf = vec![9u8; 7];
        let ptr = buf.as_ptr();
        r.give(buf);
        r.give(Vec::new());
        assert_eq!(r.kept(), 1);
        assert_eq!(r.take(8), vec![0u8; 8]);
        let again = r.take(7);
        assert_eq!((again.as_ptr(), again.len(), r.kept()), (ptr, 7, 0));
        for _ in 0..Recycler::KEEP + 2 {
            r.give(vec![1u8; 3]);
        }
        assert_eq!(r.kept(), Recycler::KEEP);
    }

    /// A panic while making an image is reported by the iterator (not a process abort from a rayon job).
    #[test]
    fn panic_in_make_is_reported() {
        let pool = make_pool(2).unwrap();
        let mut it = spawn_batches(pool, Recycler::default(), vec![vec![0, 1], vec![2]], 1, |p| {
            assert!(p != 1, "synthetic failure");
            Ok(item(p))
        })
        .unwrap();
        let err = it.next().unwrap().unwrap_err();
        assert!(err.to_string().contains("panicked"), "{err}");
        assert!(it.next().is_none());
    }
}
