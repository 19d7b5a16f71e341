//! Timing harness of the training loader (ignored tests; run with
//! `cargo test --release -p yolo26-data --lib timing -- --ignored --nocapture`): where one training sample's CPU time
//! goes (image load + `load_image` resize, the augmentation pipeline) and the loader's throughput per core.

use std::hint::black_box;
use std::sync::Arc;

use yolo26_augment::{AugmentConfig, SampleSource, TrainTransform};

use super::source::{DatasetSource, ImageBuffer};
use super::{sample_rng, TrainLoader, TrainLoaderConfig};
use crate::{Dataset, Recipe};

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// CPU time in seconds of the calling thread (`clock` 3, `CLOCK_THREAD_CPUTIME_ID`) or of the whole process
/// (`clock` 2, `CLOCK_PROCESS_CPUTIME_ID`), Linux.
fn cpu(clock: i32) -> f64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clocks 2 and 3 exist on Linux.
    let rc = unsafe { clock_gettime(clock, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    ts.sec as f64 + ts.nsec as f64 * 1e-9
}

/// Mean thread CPU time per call of `f(i)` over `i in 0..n`, the minimum of 3 rounds (robust to a loaded machine).
fn time<T>(n: usize, mut f: impl FnMut(usize) -> T) -> f64 {
    (0..3)
        .map(|_| {
            let t = cpu(3);
            for i in 0..n {
                black_box(f(i));
            }
            (cpu(3) - t) / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

#[test]
#[ignore = "timing, run with --ignored --nocapture"]
fn train_sample_breakdown() {
    let n = 400;
    let ds = Arc::new(Dataset::synthetic(Recipe::Full, 0, 0, n));
    let imgsz = 640;
    let render = time(30, |i| ds.load_image(i).unwrap());
    let fresh = DatasetSource { dataset: ds.clone(), imgsz, buffer: ImageBuffer::new(0) };
    let load = time(30, |i| fresh.load_shared(i).unwrap());
    let all = DatasetSource { dataset: ds.clone(), imgsz, buffer: ImageBuffer::new(n) };
    for i in 0..n {
        all.load_resized(i).unwrap();
    }
    let tf = TrainTransform::new(AugmentConfig::default(), imgsz);
    let cached = time(30, |i| tf.apply(&all, i, &mut sample_rng(0, 0, i)).unwrap());
    let uncached = time(10, |i| tf.apply(&fresh, i, &mut sample_rng(0, 0, i)).unwrap());
    println!(
        "per call (thread CPU, best of 3): synthetic render {:.2} ms, load (render + load_image resize) {:.2} ms; \
         TrainTransform::apply with all images buffered {:.2} ms ({:.1} samples/s), without a buffer {:.2} ms \
         ({:.1} samples/s)",
        render * 1e3,
        load * 1e3,
        cached * 1e3,
        1.0 / cached,
        uncached * 1e3,
        1.0 / uncached
    );
}

/// Images per second of process CPU time and of wall time for `batches` batches of `loader`'s `epoch`.
fn loader_rate(loader: &TrainLoader, epoch: usize, batches: usize) -> (usize, f64, f64) {
    let (t, w) = (cpu(2), std::time::Instant::now());
    let mut images = 0;
    for b in loader.epoch(epoch).unwrap().take(batches) {
        images += b.unwrap().len();
    }
    let (c, w) = (cpu(2) - t, w.elapsed().as_secs_f64());
    (images, images as f64 / c, images as f64 / w)
}

#[test]
#[ignore = "timing, run with --ignored --nocapture"]
fn train_loader_per_core() {
    let n = 2000;
    let ds = Arc::new(Dataset::synthetic(Recipe::Full, 0, 0, n));
    let cfg = TrainLoaderConfig { batch_size: 16, imgsz: 640, workers: 1, ..Default::default() };
    let loader = TrainLoader::new(ds.clone(), cfg.clone()).unwrap();
    let (images, c, w) = loader_rate(&loader, 0, 12);
    let (hits, misses) = loader.source().buffer.stats();
    println!(
        "TrainLoader synthetic:{n}, 1 worker, default buffer (partner window {}): {images} images, {c:.1} images/s \
         of process CPU time, {w:.1} images/s wall; buffer {hits} hits / {misses} misses",
        loader.partner_window()
    );
    // a later epoch: the window wraps to the previous epoch's tail, which the buffer holds
    let (images, c, w) = loader_rate(&loader, 1, 12);
    let (h1, m1) = loader.source().buffer.stats();
    println!(
        "  epoch 1 (after a partial epoch 0): {images} images, {c:.1} images/s of process CPU time, {w:.1} images/s \
         wall; buffer {} hits / {} misses",
        h1 - hits,
        m1 - misses
    );
    // every image buffered (what ultralytics' cache="ram" keeps; its partners are then uniform, ours the window)
    let full = TrainLoader::new(ds, TrainLoaderConfig { buffer: Some(n), ..cfg }).unwrap();
    for i in 0..n {
        full.source().load_resized(i).unwrap();
    }
    let (images, c, w) = loader_rate(&full, 0, 12);
    println!(
        "TrainLoader synthetic:{n}, 1 worker, all {n} images buffered: {images} images, {c:.1} images/s of process \
         CPU time, {w:.1} images/s wall"
    );
}

#[test]
#[ignore = "timing, run with --ignored --nocapture"]
fn collate_per_image() {
    let items = || {
        (0..16)
            .map(|i| {
                super::Ready::new(super::Item {
                    img: image::RgbImage::from_fn(640, 640, |x, y| image::Rgb([x as u8, y as u8, i as u8])),
                    labels: vec![(1, [0.5, 0.5, 0.1, 0.1])],
                    index: i,
                    path: std::path::PathBuf::from("x"),
                    orig: [640, 640],
                    resized: [640, 640],
                    ratio_pad: super::RatioPad { ratio: [1.0, 1.0], pad: [0.0, 0.0] },
                })
            })
            .collect::<Vec<_>>()
    };
    let (mut best, mut chw) = (f64::INFINITY, f64::INFINITY);
    let img = image::RgbImage::from_fn(640, 640, |x, y| image::Rgb([x as u8, y as u8, 7]));
    for _ in 0..5 {
        let t = cpu(3);
        for _ in 0..16 {
            black_box(super::hwc_to_chw(img.as_raw()));
        }
        chw = chw.min((cpu(3) - t) / 16.0);
        let it = items();
        let t = cpu(3);
        black_box(super::collate(it).unwrap());
        best = best.min((cpu(3) - t) / 16.0);
    }
    println!(
        "per 640x640 image: HWC -> CHW {:.3} ms (on the worker), collate {:.3} ms (on the producer thread)",
        chw * 1e3,
        best * 1e3
    );
}
