//! Against fixtures made by `fixtures/gen_fixtures.py` with ultralytics 8.4.190.

use serde_json::Value;
use yolo26_data::labels::{parse_label_text, LabelStatus};
use yolo26_data::rect::set_rectangle;

fn fixture(name: &str) -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    serde_json::from_slice(&std::fs::read(&p).expect("fixture present")).expect("fixture is JSON")
}

/// Every label case: same accept/skip decision as `verify_image_label`, bit-identical f32 boxes, same classes and
/// row order (incl. the `np.unique` reordering after duplicate removal), same empty/duplicate flags.
#[test]
fn label_cases_match_verify_image_label() {
    let cases = fixture("label_cases.json");
    let cases = cases.as_array().expect("array");
    assert!(cases.len() >= 20);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let text = c["text"].as_str().unwrap();
        let nc = c["nc"].as_u64().unwrap() as usize;
        let got = parse_label_text(text, nc);
        if c["corrupt"].as_bool().unwrap() {
            let err = got.expect_err(name);
            assert!(err.contains("line"), "{name}: error should name the line: {err}");
            continue;
        }
        let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got.status == LabelStatus::Empty, c["empty"].as_bool().unwrap(), "{name}");
        let cls: Vec<u32> = c["cls"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
        assert_eq!(got.labels.cls, cls, "{name}");
        let bits: Vec<[u32; 4]> = c["boxes_bits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let r: Vec<u32> = r.as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
                [r[0], r[1], r[2], r[3]]
            })
            .collect();
        let got_bits: Vec<[u32; 4]> = got.labels.boxes.iter().map(|b| b.map(f32::to_bits)).collect();
        assert_eq!(got_bits, bits, "{name}: boxes {:?}", got.labels.boxes);
        assert_eq!(got.duplicates_removed > 0, c["duplicates_removed"].as_bool().unwrap(), "{name}");
    }
}

/// `set_rectangle` batch shapes equal `YOLODataset(rect=True, stride=32, pad=0.5).batch_shapes`; the order equals
/// ultralytics' up to images with exactly equal aspect ratios (numpy's argsort orders ties its own way).
#[test]
fn rect_batch_shapes_match_ultralytics() {
    let f = fixture("rect_shapes.json");
    let sizes: Vec<[u32; 2]> = f["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| [s[0].as_u64().unwrap() as u32, s[1].as_u64().unwrap() as u32])
        .collect();
    let ar = |i: usize| sizes[i][0] as f64 / sizes[i][1] as f64;
    for case in f["cases"].as_array().unwrap() {
        let imgsz = case["imgsz"].as_u64().unwrap() as usize;
        let bs = case["batch_size"].as_u64().unwrap() as usize;
        let r = set_rectangle(&sizes, imgsz, bs, 32, 0.5);
        let want: Vec<[usize; 2]> = case["batch_shapes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| [s[0].as_u64().unwrap() as usize, s[1].as_u64().unwrap() as usize])
            .collect();
        assert_eq!(r.batch_shapes, want, "imgsz {imgsz} batch {bs}");
        let order: Vec<usize> =
            case["order"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
        let a: Vec<f64> = r.order.iter().map(|&i| ar(i)).collect();
        let b: Vec<f64> = order.iter().map(|&i| ar(i)).collect();
        assert_eq!(a, b, "aspect-ratio order");
        let batch: Vec<usize> =
            case["batch"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
        assert_eq!(r.batch_of, batch);
    }
}

/// The validation loader against ultralytics' val items (`fixtures/gen_val_fixture.py`): the same 7 synthetic
/// val images written as PNG, `YOLODataset(rect=True, batch=3, imgsz=320)`: identical order, batch shapes, image
/// bytes (sha256 of the CHW RGB tensor), ori/resized shapes, ratio_pad, classes; boxes within 1 f32 ulp.
#[test]
fn val_loader_matches_ultralytics_val_items() {
    use sha2::Digest;
    use std::sync::Arc;
    let f = fixture("val_items.json");
    let dir = tempfile::tempdir().unwrap();
    let yaml = yolo26_data::write_ultralytics(dir.path(), yolo26_data::Recipe::Full, 6, 7, 11).unwrap();
    let src = yolo26_data::DataSource::parse(yaml.to_str().unwrap(), None).unwrap();
    let ds = Arc::new(src.open(yolo26_data::Split::Val).unwrap());
    let cfg = yolo26_data::ValLoaderConfig { batch_size: 3, imgsz: 320, workers: 2, ..Default::default() };
    let loader = yolo26_data::ValLoader::new(ds, cfg).unwrap();
    let want_shapes: Vec<[usize; 2]> = f["batch_shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| [s[0].as_u64().unwrap() as usize, s[1].as_u64().unwrap() as usize])
        .collect();
    assert_eq!(loader.rect().batch_shapes, want_shapes);
    let items = f["items"].as_array().unwrap();
    let mut k = 0;
    let mut max_ulp = 0u32;
    for b in loader.iter().unwrap() {
        let b = b.unwrap();
        let [n, _, h, w] = b.shape;
        for i in 0..n {
            let it = &items[k];
            k += 1;
            assert_eq!(b.paths[i].file_name().unwrap().to_str().unwrap(), it["file"].as_str().unwrap());
            let img = &b.images[i * 3 * h * w..(i + 1) * 3 * h * w];
            let sha: String = sha2::Sha256::digest(img).iter().map(|x| format!("{x:02x}")).collect();
            assert_eq!(sha, it["img_sha256"].as_str().unwrap(), "image bytes of {}", it["file"]);
            let u = |v: &Value| -> Vec<usize> {
                v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect()
            };
            assert_eq!(b.orig_shapes[i].to_vec(), u(&it["ori_shape"]));
            assert_eq!(b.resized_shapes[i].to_vec(), u(&it["resized_shape"]));
            let rp = &it["ratio_pad"];
            assert_eq!(b.ratio_pad[i].ratio, [rp[0][0].as_f64().unwrap(), rp[0][1].as_f64().unwrap()]);
            assert_eq!(b.ratio_pad[i].pad, [rp[1][0].as_f64().unwrap(), rp[1][1].as_f64().unwrap()]);
            let t: Vec<&[f32; 6]> = b.targets.iter().filter(|t| t[0] as usize == i).collect();
            let cls: Vec<u64> = it["cls"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            assert_eq!(t.iter().map(|t| t[1] as u64).collect::<Vec<_>>(), cls);
            for (tt, bits) in t.iter().zip(it["bboxes_bits"].as_array().unwrap()) {
                for c in 0..4 {
                    let want = bits[c].as_u64().unwrap() as u32;
                    let ulp = tt[2 + c].to_bits().abs_diff(want);
                    max_ulp = max_ulp.max(ulp);
                    assert!(ulp <= 1, "{}: box {c}: {} vs {}", it["file"], tt[2 + c], f32::from_bits(want));
                }
            }
        }
    }
    assert_eq!(k, items.len());
    eprintln!("val loader vs ultralytics: images identical, boxes max {max_ulp} f32 ulp");
}

/// The deterministic part of the training pipeline against ultralytics' train items (same fixture): every random
/// augmentation off, so `load_image` resize + `RandomPerspective` centring + `Format` must give the same bytes.
#[test]
fn train_loader_without_random_augmentation_matches_ultralytics() {
    use sha2::Digest;
    use std::sync::Arc;
    let f = fixture("val_items.json");
    let dir = tempfile::tempdir().unwrap();
    let yaml = yolo26_data::write_ultralytics(dir.path(), yolo26_data::Recipe::Full, 6, 7, 11).unwrap();
    let src = yolo26_data::DataSource::parse(yaml.to_str().unwrap(), None).unwrap();
    let ds = Arc::new(src.open(yolo26_data::Split::Train).unwrap());
    let off = yolo26_augment::AugmentConfig {
        hsv_h: 0.0,
        hsv_s: 0.0,
        hsv_v: 0.0,
        degrees: 0.0,
        translate: 0.0,
        scale: 0.0,
        shear: 0.0,
        perspective: 0.0,
        flipud: 0.0,
        fliplr: 0.0,
        bgr: 0.0,
        mosaic: 0.0,
        mixup: 0.0,
        cutmix: 0.0,
    };
    let cfg =
        yolo26_data::TrainLoaderConfig { batch_size: 4, imgsz: 320, workers: 2, augment: off, ..Default::default() };
    let loader = yolo26_data::TrainLoader::new(ds, cfg).unwrap();
    let items = f["train_items"].as_array().unwrap();
    let mut seen = 0;
    let mut max_ulp = 0u32;
    for b in loader.epoch(0).unwrap() {
        let b = b.unwrap();
        let [n, _, h, w] = b.shape;
        for i in 0..n {
            let it = &items[b.indices[i]];
            assert_eq!(b.paths[i].file_name().unwrap().to_str().unwrap(), it["file"].as_str().unwrap());
            let img = &b.images[i * 3 * h * w..(i + 1) * 3 * h * w];
            let sha: String = sha2::Sha256::digest(img).iter().map(|x| format!("{x:02x}")).collect();
            assert_eq!(sha, it["img_sha256"].as_str().unwrap(), "image bytes of {}", it["file"]);
            let t: Vec<&[f32; 6]> = b.targets.iter().filter(|t| t[0] as usize == i).collect();
            let cls: Vec<u64> = it["cls"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            assert_eq!(t.iter().map(|t| t[1] as u64).collect::<Vec<_>>(), cls, "{}", it["file"]);
            for (tt, bits) in t.iter().zip(it["bboxes_bits"].as_array().unwrap()) {
                for c in 0..4 {
                    let want = bits[c].as_u64().unwrap() as u32;
                    let ulp = tt[2 + c].to_bits().abs_diff(want);
                    max_ulp = max_ulp.max(ulp);
                    assert!(ulp <= 1, "{}: box {c}: {} vs {}", it["file"], tt[2 + c], f32::from_bits(want));
                }
            }
            seen += 1;
        }
    }
    assert_eq!(seen, items.len());
    eprintln!("train loader (random augmentation off) vs ultralytics: images identical, boxes max {max_ulp} f32 ulp");
}
