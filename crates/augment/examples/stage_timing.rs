//! Per-stage timing of the default training pipeline at imgsz 640 on realistic inputs (four 640x480 textured
//! images with filled rectangles, like `load_resize` output of a 4:3 photo), one thread.
//!
//!     cargo run --release -p yolo26-augment --example stage_timing [-- ITERATIONS]
//!
//! Reports thread CPU time per call (best of 5 rounds) (`CLOCK_THREAD_CPUTIME_ID`, so a loaded machine does not skew it) and the
//! whole `TrainTransform::apply` throughput in samples per second of CPU time.

use std::hint::black_box;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yolo26_augment::*;

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// CPU time of the calling thread in seconds (Linux `CLOCK_THREAD_CPUTIME_ID`).
fn cpu() -> f64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clock id 3 is CLOCK_THREAD_CPUTIME_ID on Linux.
    let rc = unsafe { clock_gettime(3, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    ts.sec as f64 + ts.nsec as f64 * 1e-9
}

/// A `w x h` image: smooth gradient + noise background and a few flat rectangles, with their boxes.
fn synth(w: u32, h: u32, seed: u64) -> Sample {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let base: [f32; 3] = std::array::from_fn(|_| rng.random_range(40.0..200.0));
    let mut img = RgbImage::from_fn(w, h, |x, y| {
        let g = (x as f32 / w as f32 - 0.5) * 60.0 + (y as f32 / h as f32 - 0.5) * 40.0;
        image::Rgb(std::array::from_fn(|k| (base[k] + g + (((x * 7 + y * 13 + k as u32 * 5) % 17) as f32)) as u8))
    });
    let mut labels = Vec::new();
    for i in 0..6 {
        let (bw, bh) = (rng.random_range(20..w / 3), rng.random_range(20..h / 3));
        let (x0, y0) = (rng.random_range(0..w - bw), rng.random_range(0..h - bh));
        let col: [u8; 3] = std::array::from_fn(|_| rng.random());
        for y in y0..y0 + bh {
            for x in x0..x0 + bw {
                img.put_pixel(x, y, image::Rgb(col));
            }
        }
        let c = |v: u32, s: u32| v as f32 / s as f32;
        labels.push((i, [c(x0 + bw / 2, w), c(y0 + bh / 2, h), c(bw, w), c(bh, h)]));
    }
    Sample::from_normalized_xywh(img, &labels).expect("valid sample")
}

struct Mem(Vec<Sample>);

impl SampleSource for Mem {
    type Error = AugmentError;
    fn len(&self) -> usize {
        self.0.len()
    }
    fn load(&self, index: usize) -> Result<Sample, AugmentError> {
        self.0.get(index).cloned().ok_or(AugmentError::EmptySource)
    }
}

/// Mean thread CPU time per call of `f` over `n` calls, the minimum of 5 such rounds (robust to a loaded machine).
fn time<T>(n: usize, mut f: impl FnMut(usize) -> T) -> f64 {
    (0..5)
        .map(|_| {
            let t = cpu();
            for i in 0..n {
                black_box(f(i));
            }
            (cpu() - t) / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let imgsz = 640;
    let src = Mem((0..8).map(|i| synth(640, 480, i)).collect());
    let cfg = AugmentConfig::default();
    let big = synth(1280, 960, 99);
    let load = time(n, |i| src.load(i % 8).unwrap());
    let resize = time(n, |_| load_resize(big.img.clone(), imgsz).unwrap());
    let tiles: Vec<Sample> = (0..4).map(|i| src.load(i).unwrap()).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let centres: Vec<(i64, i64)> = (0..n).map(|_| mosaic_center(&mut rng, imgsz)).collect();
    let mosaic = time(n, |i| mosaic4([&tiles[0], &tiles[1], &tiles[2], &tiles[3]], imgsz, centres[i].0, centres[i].1));
    let m = mosaic4([&tiles[0], &tiles[1], &tiles[2], &tiles[3]], imgsz, 640, 640).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let wm = [[1.357341, 0.0, -493.44547], [0.0, 1.357341, -610.58026]];
    let warp = time(n, |_| warp_affine(&m.img, wm, 640, 640, 114).unwrap());
    let wr = [[1.357341, 0.01, -493.44547], [0.0, 1.357341, -610.58026]];
    let warp_rot = time(n, |_| warp_affine(&m.img, wr, 640, 640, 114).unwrap());
    eprintln!("warp_affine diagonal {:.3} ms, with shear {:.3} ms", warp * 1e3, warp_rot * 1e3);
    let persp = time(n, |_| random_perspective(&m, &cfg, [imgsz, imgsz], &mut rng).unwrap());
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut out = random_perspective(&m, &cfg, [imgsz, imgsz], &mut rng).unwrap();
    let gains: Vec<[f64; 3]> = (0..n).map(|_| hsv_gains(&mut rng, cfg.hsv_h, cfg.hsv_s, cfg.hsv_v)).collect();
    let hsv = time(n, |i| random_hsv(&mut out.img, gains[i]));
    let mut nrng = ChaCha8Rng::seed_from_u64(5);
    let mut noise = RgbImage::from_fn(640, 640, |_, _| image::Rgb(nrng.random()));
    let hsv_noise = time(n, |i| random_hsv(&mut noise, gains[i]));
    eprintln!("random_hsv on 640x640 uniform noise (no equal neighbours) {:.3} ms", hsv_noise * 1e3);
    let flip = time(n, |_| flip_lr(&mut out));
    let tf = TrainTransform::new(cfg, imgsz);
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let whole = time(n, |i| tf.apply(&src, i % 8, &mut rng).unwrap());
    let ms = |v: f64| v * 1e3;
    println!(
        "per call (thread CPU, best of 5 x {n} iterations): load(clone 640x480) {:.3} ms, load_resize 1280x960->640 {:.3} ms, \
         mosaic4 {:.3} ms, random_perspective {:.3} ms, random_hsv {:.3} ms, flip_lr {:.3} ms",
        ms(load),
        ms(resize),
        ms(mosaic),
        ms(persp),
        ms(hsv),
        ms(flip)
    );
    println!(
        "TrainTransform::apply (in-memory source, no decode): {:.3} ms = {:.1} samples/s per core",
        ms(whole),
        1.0 / whole
    );
}
