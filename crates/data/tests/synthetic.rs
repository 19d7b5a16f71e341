//! The synthetic dataset: tight boxes, occlusion rule, determinism, the ultralytics writer round trip.

use yolo26_data::synthetic::{
    self, render, render_recipe, render_with_mask, Recipe, SyntheticSpec, CLASS_NAMES, EASY_CLASSES, KEEP_FRACTION,
    MIN_VISIBLE,
};
use yolo26_data::{DataSource, Split};

#[test]
fn boxes_are_tight_boxes_of_visible_pixels() {
    // full recipe: sizes 256..=640, 8 classes, objects from 8 px to most of the image
    let (n_obj, classes, small, large) = tight_boxes(Recipe::Full, 256..=640);
    assert!(n_obj > 150, "{n_obj} objects");
    assert!(classes.iter().all(|&c| c > 5), "all classes appear: {classes:?}");
    assert!(small > 5 && large > 5, "sizes vary: {small} small, {large} large");
    // easy recipe: sizes 160..=320, 3 classes, no small object
    let (n_obj, classes, small, large) = tight_boxes(Recipe::Easy, 160..=320);
    assert!(n_obj > 60, "{n_obj} objects");
    assert!(classes[..EASY_CLASSES].iter().all(|&c| c > 10) && classes[EASY_CLASSES..].iter().all(|&c| c == 0));
    assert!(small == 0 && large > 5, "easy sizes: {small} small, {large} large");
    const { assert!(KEEP_FRACTION >= 0.5) };
}

/// Check 40 images of `recipe` (boxes = tight boxes of the owner mask, sizes in `dims`); returns (objects, per-class
/// counts, boxes under 24 px, boxes over 0.4·min(w, h)).
fn tight_boxes(recipe: Recipe, dims: std::ops::RangeInclusive<usize>) -> (usize, [usize; 8], usize, usize) {
    let mut n_obj = 0;
    let mut classes = [0usize; 8];
    let (mut small, mut large) = (0, 0);
    for i in 0..40 {
        let r = render_with_mask(recipe, 3, 0, i);
        assert_eq!(r.img, render_recipe(recipe, 3, 0, i).img);
        let (w, h) = (r.img.width() as usize, r.img.height() as usize);
        assert!(dims.contains(&w) && dims.contains(&h));
        let owner = r.owner.as_ref().unwrap();
        for (k, b) in r.boxes.iter().enumerate() {
            let id = k as u16 + 1;
            // recompute from the mask
            let (mut x1, mut y1, mut x2, mut y2, mut cnt) = (usize::MAX, usize::MAX, 0, 0, 0);
            for y in 0..h {
                for x in 0..w {
                    if owner[y * w + x] == id {
                        x1 = x1.min(x);
                        y1 = y1.min(y);
                        x2 = x2.max(x + 1);
                        y2 = y2.max(y + 1);
                        cnt += 1;
                    }
                }
            }
            assert_eq!([x1, y1, x2, y2].map(|v| v as u32), *b, "image {i} object {k}");
            assert_eq!(cnt, r.visible[k]);
            assert!(cnt >= MIN_VISIBLE);
            // the object's colour is on every box edge: each edge row/column has an owned pixel
            assert!((x1..x2).any(|x| owner[y1 * w + x] == id) && (x1..x2).any(|x| owner[(y2 - 1) * w + x] == id));
            let bw = (b[2] - b[0]).max(b[3] - b[1]);
            small += (bw < 24) as usize;
            large += (bw as f32 > 0.4 * w.min(h) as f32) as usize;
            classes[r.cls[k] as usize] += 1;
            n_obj += 1;
        }
    }
    (n_obj, classes, small, large)
}

#[test]
fn deterministic_per_seed_and_split() {
    let a = render(11, 0, 5);
    let b = render(11, 0, 5);
    assert_eq!(a.img, b.img);
    assert_eq!(a.boxes, b.boxes);
    assert_ne!(render(12, 0, 5).img, a.img);
    assert_ne!(render(11, 1, 5).img, a.img);
    assert_ne!(render(11, 0, 6).img, a.img);
    assert_eq!(render_recipe(Recipe::Full, 11, 0, 5).img, a.img);
    assert_ne!(render_recipe(Recipe::Easy, 11, 0, 5).img, a.img);
    // images are textured, not flat
    let px: std::collections::HashSet<[u8; 3]> = a.img.pixels().map(|p| p.0).collect();
    assert!(px.len() > 100);
}

#[test]
fn spec_parsing() {
    let spec = |recipe, n, seed| Some(SyntheticSpec { recipe, n, seed });
    let (full, easy) = (Recipe::Full, Recipe::Easy);
    assert_eq!(SyntheticSpec::parse("synthetic").unwrap(), spec(full, 1000, 0));
    assert_eq!(SyntheticSpec::parse("synthetic:2000").unwrap(), spec(full, 2000, 0));
    assert_eq!(SyntheticSpec::parse("synthetic:500@7").unwrap(), spec(full, 500, 7));
    assert_eq!(SyntheticSpec::parse("synthetic@9").unwrap(), spec(full, 1000, 9));
    assert_eq!(SyntheticSpec::parse("synthetic-easy").unwrap(), spec(easy, 1000, 0));
    assert_eq!(SyntheticSpec::parse("synthetic-easy:400").unwrap(), spec(easy, 400, 0));
    assert_eq!(SyntheticSpec::parse("synthetic-easy:400@3").unwrap(), spec(easy, 400, 3));
    assert_eq!(SyntheticSpec::parse("synthetic.yaml").unwrap(), None);
    assert_eq!(SyntheticSpec::parse("synthetic-easy.yaml").unwrap(), None);
    assert_eq!(SyntheticSpec::parse("synthetic-hard").unwrap(), None);
    assert_eq!(SyntheticSpec::parse("coco.yaml").unwrap(), None);
    for bad in ["synthetic:", "synthetic:x", "synthetic:0", "synthetic:5@", "synthetic:5@-1", "synthetic-easy:0"] {
        let e = SyntheticSpec::parse(bad).unwrap_err().to_string();
        assert!(e.contains(bad), "{e}");
    }
    assert_eq!(SyntheticSpec { recipe: full, n: 12, seed: 0 }.val_n(), 2);
    assert_eq!(SyntheticSpec { recipe: easy, n: 3, seed: 0 }.val_n(), 1);
    assert_eq!(DataSource::parse("synthetic-easy:5", None).unwrap().names().unwrap(), ["circle", "square", "triangle"]);
}

#[test]
fn written_dataset_parses_back_to_the_same_boxes() {
    written_round_trip(Recipe::Full, &CLASS_NAMES);
    written_round_trip(Recipe::Easy, &CLASS_NAMES[..EASY_CLASSES]);
}

fn written_round_trip(recipe: Recipe, names: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let yaml = synthetic::write_ultralytics(dir.path(), recipe, 12, 2, 5).unwrap();
    let src = DataSource::parse(yaml.to_str().unwrap(), None).unwrap();
    let DataSource::Yaml(cfg) = &src else { panic!("yaml") };
    assert_eq!(cfg.names, names);
    let mem = DataSource::parse(&format!("{}:12@5", recipe.name()), None).unwrap();
    for split in [Split::Train, Split::Val] {
        let files = src.open(split).unwrap();
        let memory = mem.open(split).unwrap();
        assert_eq!(files.len(), memory.len());
        assert_eq!(files.summary.corrupt, 0);
        for (i, (f, m)) in files.entries.iter().zip(&memory.entries).enumerate() {
            assert_eq!(f.shape, m.shape);
            assert_eq!(f.labels.cls, m.labels.cls);
            for (a, b) in f.labels.boxes.iter().zip(&m.labels.boxes) {
                for k in 0..4 {
                    assert!((a[k] - b[k]).abs() <= 5.5e-7, "{split:?} {i}: {a:?} vs {b:?}");
                }
            }
            // identical pixels through PNG
            assert_eq!(files.load_image(i).unwrap(), memory.load_image(i).unwrap());
        }
    }
    let coco: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("val_coco.json")).unwrap()).unwrap();
    assert_eq!(coco["images"].as_array().unwrap().len(), 2);
    assert_eq!(coco["categories"].as_array().unwrap().len(), names.len());
    // the COCO file read back through our COCO reader gives the same labels as the val split
    let c = yolo26_data::Dataset::from_coco(&dir.path().join("val_coco.json"), &dir.path().join("images/val")).unwrap();
    let v = mem.open(Split::Val).unwrap();
    for (a, b) in c.entries.iter().zip(&v.entries) {
        assert_eq!(a.labels.cls, b.labels.cls);
        for (x, y) in a.labels.boxes.iter().zip(&b.labels.boxes) {
            assert_eq!(x, y);
        }
    }
    assert_eq!(c.coco.as_ref().unwrap().class_to_category, (1..=names.len() as i64).collect::<Vec<i64>>());
}

#[test]
fn render_speed() {
    use rayon::prelude::*;
    let t = std::time::Instant::now();
    let n = 64;
    let objs: usize = (0..n).into_par_iter().map(|i| render(1, 0, i).boxes.len()).sum();
    let dt = t.elapsed().as_secs_f64();
    eprintln!("synthetic render: {:.0} images/s ({objs} objects)", n as f64 / dt);
    assert!(objs > 0);
}
