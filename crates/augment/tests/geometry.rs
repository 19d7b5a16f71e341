//! Boxes and geometry against ultralytics 8.4.190 (fixtures) and against the pixels themselves.
mod common;

use yolo26_augment::*;

#[test]
fn box_candidates_match_ultralytics() {
    let fx = common::fixtures();
    let f = &fx["box_candidates"];
    let (b1, b2) = (common::boxes(&f["box1"]), common::boxes(&f["box2"]));
    let want: Vec<bool> = f["keep"].as_array().unwrap().iter().map(|v| v.as_bool().unwrap()).collect();
    let got = box_candidates(&b1, &b2, 2.0, 100.0, 0.1).unwrap();
    assert_eq!(got, want);
    assert!(want.iter().any(|&k| k) && want.iter().any(|&k| !k), "the fixture exercises both outcomes");
    assert!(box_candidates(&b1, &b2[1..], 2.0, 100.0, 0.1).is_err());
}

#[test]
fn random_perspective_matches_ultralytics() {
    let fx = common::fixtures();
    let f = &fx["perspective"];
    let src = common::image(&f["src"]);
    let s = common::sample(src, &[0, 1, 2, 3, 4], &f["boxes_norm_xywh"]);
    for (k, case) in f["cases"].as_array().unwrap().iter().enumerate() {
        common::assert_boxes_close(&s.boxes, &common::boxes(&case["boxes_in"]), 0.0, "denormalised input");
        let d = common::f64s(&case["draws"]);
        let pr = &case["params"];
        let persp = case["perspective"].as_f64().unwrap();
        let cfg = AugmentConfig {
            degrees: pr["degrees"].as_f64().unwrap(),
            translate: pr["translate"].as_f64().unwrap(),
            scale: pr["scale"].as_f64().unwrap(),
            shear: pr["shear"].as_f64().unwrap(),
            perspective: persp,
            ..AugmentConfig::default()
        };
        // Replay the 8 uniform draws with the same formula a + (b - a) * u.
        let u = |i: usize, lo: f64, hi: f64| lo + (hi - lo) * d[i];
        let p = PerspectiveParams {
            perspective: [u(0, -persp, persp), u(1, -persp, persp)],
            angle: u(2, -cfg.degrees, cfg.degrees),
            scale: u(3, 1.0 - cfg.scale, 1.0 + cfg.scale),
            shear: [u(4, -cfg.shear, cfg.shear), u(5, -cfg.shear, cfg.shear)],
            translate: [u(6, 0.4, 0.6), u(7, 0.4, 0.6)],
        };
        let m = perspective_matrix(&p, 128, 128, [64, 64]);
        let want_m = common::mat3(&case["m"]);
        for i in 0..3 {
            for j in 0..3 {
                let tol = 1e-6 * want_m[i][j].abs().max(1.0);
                assert!((m[i][j] - want_m[i][j]).abs() <= tol, "case {k}: M {m:?} vs {want_m:?}");
            }
        }
        assert_eq!(p.scale, case["scale"].as_f64().unwrap());
        // apply_bboxes with ultralytics' own matrix
        let ab = apply_bboxes(&s.boxes, &want_m, persp != 0.0);
        common::assert_boxes_close(&ab, &common::boxes(&case["apply_bboxes"]), 1e-4, "apply_bboxes");
        // whole transform with ultralytics' matrix: image + clipped, filtered boxes
        let out = random_perspective_with(&s, &want_m, p.scale, [64, 64], persp != 0.0).unwrap();
        common::assert_boxes_close(&out.boxes, &common::boxes(&case["boxes_out"]), 1e-4, "RandomPerspective boxes");
        assert_eq!(out.cls, common::u32s(&case["cls_out"]), "case {k}: kept classes");
        let (max, frac) = common::diff(&out.img, &common::image(&case["out"]));
        println!("RandomPerspective case {k}: image max diff {max}, differing bytes {frac:.6}, boxes {:?}", out.cls);
        assert!(max <= 1 && frac < 1e-3, "case {k}: image max {max}, fraction {frac}");
    }
}

fn tiles(fx: &serde_json::Value) -> Vec<Sample> {
    let m = &fx["mosaic"];
    m["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .zip(m["labels"].as_array().unwrap())
        .map(|(t, l)| common::sample(common::image(t), &common::u32s(&l["cls"]), &l["xywhn"]))
        .collect()
}

#[test]
fn mosaic_matches_ultralytics() {
    let fx = common::fixtures();
    let t = tiles(&fx);
    for (k, case) in fx["mosaic"]["cases"].as_array().unwrap().iter().enumerate() {
        let c = common::f64s(&case["center_xy"]);
        let out = mosaic4([&t[0], &t[1], &t[2], &t[3]], 64, c[0] as i64, c[1] as i64).unwrap();
        assert_eq!(out.img, common::image(&case["mosaic_img"]), "case {k}: mosaic canvas bytes");
        assert_eq!(out.cls, common::u32s(&case["mosaic_cls"]), "case {k}: classes");
        common::assert_boxes_close(&out.boxes, &common::boxes(&case["mosaic_boxes"]), 0.0, "mosaic boxes");
    }
}

#[test]
fn mosaic_perspective_hsv_flips_chain_matches_ultralytics() {
    let fx = common::fixtures();
    let t = tiles(&fx);
    let case = &fx["mosaic"]["cases"][2];
    let ch = &case["chain"];
    let c = common::f64s(&case["center_xy"]);
    let m = mosaic4([&t[0], &t[1], &t[2], &t[3]], 64, c[0] as i64, c[1] as i64).unwrap();
    let d = common::f64s(&ch["perspective_draws"]);
    let u = |i: usize, lo: f64, hi: f64| lo + (hi - lo) * d[i];
    let p = PerspectiveParams {
        perspective: [0.0; 2],
        angle: 0.0,
        scale: u(3, 0.5, 1.5),
        shear: [0.0; 2],
        translate: [u(6, 0.4, 0.6), u(7, 0.4, 0.6)],
    };
    let mat = perspective_matrix(&p, 128, 128, [64, 64]);
    let mut s = random_perspective_with(&m, &mat, p.scale, [64, 64], false).unwrap();
    let hu = common::f64s(&ch["hsv_u"]);
    random_hsv(&mut s.img, [hu[0] * 0.015, hu[1] * 0.7, hu[2] * 0.4]);
    flip_ud(&mut s);
    flip_lr(&mut s);
    let (max, frac) = common::diff(&s.img, &common::image(&ch["img"]));
    println!("mosaic+perspective+hsv+flips: image max diff {max}, differing bytes {frac:.6}");
    assert!(max <= 1 && frac < 1e-3);
    assert_eq!(s.cls, common::u32s(&ch["cls"]));
    common::assert_boxes_close(&s.boxes, &common::boxes(&ch["boxes"]), 1e-4, "chain boxes");
    assert!(!s.boxes.is_empty());
}

#[test]
fn letterbox_sample_matches_ultralytics() {
    let fx = common::fixtures();
    let f = &fx["letterbox"];
    let s = common::sample(common::image(&f["src"]), &[0, 1], &f["boxes_norm_xywh"]);
    for case in f["cases"].as_array().unwrap() {
        let ns = common::f64s(&case["new_shape"]);
        let (auto, scaleup) = (case["auto"].as_bool().unwrap(), case["scaleup"].as_bool().unwrap());
        let (out, _) = letterbox_sample(&s, [ns[0] as usize, ns[1] as usize], auto, scaleup, true, 32).unwrap();
        assert_eq!(out.img, common::image(&case["out"]), "letterbox image {ns:?}");
        common::assert_boxes_close(&out.boxes, &common::boxes(&case["boxes"]), 1e-5, "letterbox boxes");
    }
}

#[test]
fn load_resize_matches_load_image() {
    let fx = common::fixtures();
    let f = &fx["load_image"];
    for case in f["cases"].as_array().unwrap() {
        let src = common::image(&case["src"]);
        let l = load_resize(src, 64).unwrap();
        let hw = common::f64s(&case["hw"]);
        assert_eq!([l.img.height() as f64, l.img.width() as f64], [hw[0], hw[1]]);
        assert_eq!(l.img, common::image(&case["out"]), "load_image pixels");
        assert_eq!(l.orig_hw.map(|v| v as f64).to_vec(), common::f64s(&case["hw0"]));
    }
    assert!(load_resize(RgbImage::new(0, 5), 64).is_err());
    assert!(load_resize(RgbImage::new(5, 5), 0).is_err());
}
