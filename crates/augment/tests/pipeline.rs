//! The whole `TrainTransform` pipeline: shapes, determinism, close-mosaic, MixUp/CutMix, errors, speed.
use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use yolo26_augment::*;

/// A synthetic in-memory dataset: textured images (long side imgsz, like load_resize output) with boxes.
struct Synth {
    items: Vec<Sample>,
}

impl Synth {
    fn new(n: usize, imgsz: u32) -> Self {
        let items = (0..n)
            .map(|i| {
                let (w, h) = if i % 2 == 0 { (imgsz, imgsz * 3 / 4) } else { (imgsz * 2 / 3, imgsz) };
                let img = RgbImage::from_fn(w, h, |x, y| {
                    image::Rgb([(x * 255 / w) as u8, (y * 255 / h) as u8, ((x ^ y) as usize * (i + 1) % 256) as u8])
                });
                let labels = vec![(i as u32 % 3, [0.5, 0.5, 0.4, 0.3]), (7, [0.25, 0.3, 0.2, 0.2])];
                Sample::from_normalized_xywh(img, &labels).unwrap()
            })
            .collect();
        Self { items }
    }
}

impl SampleSource for Synth {
    type Error = AugmentError;
    fn len(&self) -> usize {
        self.items.len()
    }
    fn load(&self, index: usize) -> Result<Sample, AugmentError> {
        self.items.get(index).cloned().ok_or_else(|| AugmentError::InvalidArgument(format!("no item {index}")))
    }
}

fn check(s: &Sample, imgsz: u32) {
    assert_eq!(s.img.dimensions(), (imgsz, imgsz));
    assert_eq!(s.boxes.len(), s.cls.len());
    for b in &s.boxes {
        assert!(b[0] >= 0.0 && b[1] >= 0.0 && b[2] <= imgsz as f32 && b[3] <= imgsz as f32, "clipped {b:?}");
        assert!(b[2] - b[0] > 2.0 && b[3] - b[1] > 2.0, "box_candidates wh_thr {b:?}");
    }
}

#[test]
fn default_pipeline_shapes_and_determinism() {
    let src = Synth::new(6, 128);
    let t = TrainTransform::new(AugmentConfig::default(), 128);
    let mut total = 0;
    for i in 0..6 {
        let a = t.apply(&src, i, &mut ChaCha8Rng::seed_from_u64(i as u64)).unwrap();
        let b = t.apply(&src, i, &mut ChaCha8Rng::seed_from_u64(i as u64)).unwrap();
        assert_eq!(a, b, "same rng state, same sample");
        check(&a, 128);
        total += a.boxes.len();
    }
    assert!(total > 6, "mosaics carry boxes ({total})");
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let a = t.apply(&src, 0, &mut rng).unwrap();
    let b = t.apply(&src, 0, &mut rng).unwrap();
    assert_ne!(a.img, b.img, "the rng advances");
}

#[test]
fn close_mosaic_and_mixup_cutmix() {
    let src = Synth::new(4, 96);
    let close = TrainTransform::new(AugmentConfig::default().close_mosaic(), 96);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for i in 0..4 {
        let s = close.apply(&src, i, &mut rng).unwrap();
        check(&s, 96);
        assert!(s.boxes.len() <= 2, "no mosaic: only the item's own boxes");
    }
    let cfg = AugmentConfig { mixup: 1.0, cutmix: 1.0, ..AugmentConfig::default() };
    let mix = TrainTransform::new(cfg, 96);
    for i in 0..4 {
        check(&mix.apply(&src, i, &mut rng).unwrap(), 96);
    }
    // MixUp blends exactly like NumPy: (a * r + b * (1 - r)).astype(uint8)
    let a = src.load(0).unwrap();
    let mut b = a.clone();
    b.img.iter_mut().for_each(|v| *v = 255 - *v);
    let m = mixup(&a, &b, 0.3).unwrap();
    assert_eq!(m.boxes.len(), 4);
    let (p, q) = (a.img.as_raw()[5] as f64, b.img.as_raw()[5] as f64);
    assert_eq!(m.img.as_raw()[5], (p * 0.3 + q * 0.7) as u8);
}

#[test]
fn invalid_config_and_source_are_errors() {
    let src = Synth::new(2, 64);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let bad = TrainTransform::new(AugmentConfig { mosaic: 1.5, ..AugmentConfig::default() }, 64);
    assert!(matches!(bad.apply(&src, 0, &mut rng), Err(AugmentError::InvalidConfig { name: "mosaic", .. })));
    let bad = TrainTransform::new(AugmentConfig { scale: f64::NAN, ..AugmentConfig::default() }, 64);
    assert!(bad.apply(&src, 0, &mut rng).is_err());
    let t = TrainTransform::new(AugmentConfig::default(), 64);
    assert!(t.apply(&src, 2, &mut rng).is_err(), "index out of range");
    assert!(matches!(t.apply(&Synth { items: vec![] }, 0, &mut rng), Err(AugmentError::EmptySource)));
    let json = r#"{"mosaic": 0.0, "fliplr": 0.25}"#;
    let cfg: AugmentConfig = serde_json::from_str(json).unwrap();
    assert_eq!((cfg.mosaic, cfg.fliplr, cfg.hsv_s), (0.0, 0.25, 0.7));
    assert!(serde_json::from_str::<AugmentConfig>(r#"{"mosiac": 1}"#).is_err(), "typos are rejected");
}

#[test]
fn throughput_default_pipeline_640() {
    let src = Synth::new(8, 640);
    let t = TrainTransform::new(AugmentConfig::default(), 640);
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let n = 40;
    let (start, cpu0) = (Instant::now(), thread_cpu_seconds());
    for i in 0..n {
        check(&t.apply(&src, i % 8, &mut rng).unwrap(), 640);
    }
    let dt = start.elapsed().as_secs_f64();
    let cpu = thread_cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
    // includes cloning the 4 source images per sample (the in-memory source), excludes decoding
    println!(
        "default pipeline at 640 (mosaic4 + perspective + HSV + flip), one thread: {:.1} samples/s wall{}",
        n as f64 / dt,
        cpu.map(|c| format!(", {:.1} samples/s of thread CPU time", n as f64 / c)).unwrap_or_default()
    );
}

#[test]
#[ignore = "timing breakdown, run with --ignored --nocapture"]
fn timing_breakdown() {
    let src = Synth::new(4, 640);
    for _ in 0..5 {
        let t0 = Instant::now();
        let tiles: Vec<Sample> = (0..4).map(|i| src.load(i).unwrap()).collect();
        let m = mosaic4([&tiles[0], &tiles[1], &tiles[2], &tiles[3]], 640, 600, 700).unwrap();
        let t1 = Instant::now();
        let p = PerspectiveParams { scale: 1.2, ..PerspectiveParams::centered() };
        let mat = perspective_matrix(&p, 1280, 1280, [640, 640]);
        let mut s = random_perspective_with(&m, &mat, 1.2, [640, 640], false).unwrap();
        let t2 = Instant::now();
        random_hsv(&mut s.img, [0.01, 0.3, -0.2]);
        let t3 = Instant::now();
        flip_lr(&mut s);
        let t4 = Instant::now();
        println!("load+mosaic {:?} perspective {:?} hsv {:?} flip {:?}", t1 - t0, t2 - t1, t3 - t2, t4 - t3);
    }
}

/// CPU time of the calling thread (Linux `/proc/thread-self/stat`, fields utime + stime, 100 Hz ticks).
fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}
