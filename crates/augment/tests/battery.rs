//! Box bookkeeping proved on pixels: a filled rectangle's transformed box is the tight box of its pixels.
use yolo26_augment::*;

const FG: [u8; 3] = [250, 10, 10];

/// An image with mild texture and one filled rectangle covering pixels `[x1, x2) x [y1, y2)`.
fn rect_sample(w: u32, h: u32, r: [u32; 4], cls: u32) -> Sample {
    let mut img = RgbImage::from_fn(w, h, |x, y| image::Rgb([40 + (x % 7) as u8, 60 + (y % 5) as u8, 90]));
    for y in r[1]..r[3] {
        for x in r[0]..r[2] {
            img.put_pixel(x, y, image::Rgb(FG));
        }
    }
    Sample { img, boxes: vec![r.map(|v| v as f32)], cls: vec![cls] }
}

/// Tight box (pixel edges, xyxy) of the pixels close to the rectangle colour.
fn tight_box(img: &RgbImage) -> Option<[f32; 4]> {
    let mut b = [u32::MAX, u32::MAX, 0, 0];
    let mut any = false;
    for (x, y, p) in img.enumerate_pixels() {
        if p[0] > 200 && p[1] < 60 && p[2] < 60 {
            any = true;
            b = [b[0].min(x), b[1].min(y), b[2].max(x + 1), b[3].max(y + 1)];
        }
    }
    any.then(|| b.map(|v| v as f32))
}

fn assert_tight(s: &Sample, tol: f32, what: &str) {
    let t = tight_box(&s.img).expect("rectangle visible");
    assert_eq!(s.boxes.len(), 1, "{what}: one box");
    for k in 0..4 {
        assert!((s.boxes[0][k] - t[k]).abs() <= tol, "{what}: box {:?} vs pixels {t:?}", s.boxes[0]);
    }
}

#[test]
fn flips_twice_are_identity_and_boxes_follow_pixels() {
    let s = rect_sample(37, 23, [5, 3, 17, 11], 2);
    let mut t = s.clone();
    flip_lr(&mut t);
    assert_tight(&t, 0.0, "flip_lr");
    assert_ne!(t.img, s.img);
    flip_lr(&mut t);
    assert_eq!(t, s, "flip_lr twice");
    flip_ud(&mut t);
    assert_tight(&t, 0.0, "flip_ud");
    flip_ud(&mut t);
    assert_eq!(t, s, "flip_ud twice");
}

#[test]
fn mosaic_box_is_tight() {
    let a = rect_sample(60, 50, [10, 12, 30, 40], 0);
    let others: Vec<Sample> = (0..3)
        .map(|_| Sample { img: RgbImage::from_pixel(64, 64, image::Rgb([30; 3])), boxes: vec![], cls: vec![] })
        .collect();
    for (xc, yc) in [(64, 64), (40, 70), (100, 33)] {
        let m = mosaic4([&a, &others[0], &others[1], &others[2]], 64, xc, yc).unwrap();
        assert_eq!(m.img.dimensions(), (128, 128));
        assert_tight(&m, 0.0, "mosaic");
    }
}

#[test]
fn perspective_translate_scale_box_is_tight() {
    let s = rect_sample(80, 60, [20, 10, 52, 34], 1);
    for (scale, tx, ty) in [(1.0, 0.5, 0.5), (2.0, 0.45, 0.55), (0.75, 0.6, 0.4)] {
        let p = PerspectiveParams { scale, translate: [tx, ty], ..PerspectiveParams::centered() };
        let m = perspective_matrix(&p, 80, 60, [96, 96]);
        let out = random_perspective_with(&s, &m, scale, [96, 96], false).unwrap();
        // Bilinear edges blur over `scale` px, and cv2 samples pixel i at coordinate i while boxes use pixel edges
        // (ultralytics' convention, reproduced): ±1 px at scale 1, ±(1 + |scale - 1|) px otherwise.
        assert_tight(&out, 1.0 + (scale as f32 - 1.0).abs(), &format!("perspective scale {scale}"));
    }
}

#[test]
fn letterbox_box_is_tight() {
    let s = rect_sample(80, 40, [8, 4, 40, 20], 3);
    let (out, info) = letterbox_sample(&s, [64, 64], false, true, true, 32).unwrap();
    assert_eq!(out.img.dimensions(), (64, 64));
    assert_eq!(info.pad, [0.0, 16.0]);
    assert_tight(&out, 1.0, "letterbox");
}

#[test]
fn bad_samples_are_errors() {
    let mut s = rect_sample(20, 20, [1, 1, 5, 5], 0);
    s.cls.push(1);
    assert!(matches!(s.validate(), Err(AugmentError::LabelCount { boxes: 1, cls: 2 })));
    let mut s = rect_sample(20, 20, [1, 1, 5, 5], 0);
    s.boxes[0][2] = f32::NAN;
    assert!(matches!(s.validate(), Err(AugmentError::NonFiniteBox { index: 0, .. })));
    let e = Sample { img: RgbImage::new(0, 0), boxes: vec![], cls: vec![] };
    assert!(mosaic4([&e, &e, &e, &e], 64, 64, 64).is_err());
    let ok = rect_sample(20, 20, [1, 1, 5, 5], 0);
    assert!(mosaic4([&ok, &ok, &ok, &ok], 64, 200, 64).is_err(), "centre outside the canvas");
    assert!(letterbox_sample(&ok, [0, 64], false, true, true, 32).is_err());
    let other = rect_sample(21, 20, [1, 1, 5, 5], 0);
    assert!(mixup(&ok, &other, 0.5).is_err());
}
