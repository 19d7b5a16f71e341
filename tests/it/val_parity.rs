//! `yolo26_train::val` against ultralytics' `model.val()`: a yolo26n that ultralytics trained on the built-in
//! synthetic dataset, validated on the 100 val images of `synthetic:500@0` at imgsz 320, batch 16, both heads
//! (`tests/fixtures/val/gen_val_reference.py` wrote the reference on the same pixels, PNG-lossless).
//! Target: every number within 1e-3 absolute (the issue's bar), on Flex.

use std::sync::Arc;

use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use serde_json::Value;
use yolo26_data::{DataSource, Split};
use yolo26_model::detector::load_model;
use yolo26_model::weights::read_weights;
use yolo26_model::{DecodeMode, Scale};
use yolo26_tests::fixture;
use yolo26_train::val::{validate, ValConfig};

const TOL: f64 = 1e-3;

fn check(mode: DecodeMode, key: &str) {
    let reference: Value =
        serde_json::from_slice(&std::fs::read(fixture("tests/fixtures/val/val_reference.json")).unwrap()).unwrap();
    let want = &reference[key];
    let dataset = DataSource::parse("synthetic:500@0", None).unwrap().open(Split::Val).unwrap();
    assert_eq!(dataset.len(), 100);
    let device = FlexDevice;
    let map = read_weights(&fixture("tests/fixtures/val/yolo26n-synth.pt")).unwrap();
    let model = load_model::<Flex>(Scale::N, &map, Some(dataset.names.len()), &device).unwrap();
    let cfg = ValConfig { imgsz: 320, batch: 16, mode, workers: 2, save_json: true, ..ValConfig::default() };
    let report = validate(model, Arc::new(dataset), &cfg, &device, |_, _| {}).unwrap();
    print!("{key}:\n{}", report.table());
    let r = report.results();
    let max_diff = std::cell::Cell::new(0f64);
    let close = |got: f64, want: &Value, what: &str| {
        let w = want.as_f64().unwrap_or_else(|| panic!("{what} missing in the reference"));
        assert!((got - w).abs() <= TOL, "{key} {what}: ours {got} vs ultralytics {w}");
        max_diff.set(max_diff.get().max((got - w).abs()));
    };
    close(r.precision, &want["mp"], "P");
    close(r.recall, &want["mr"], "R");
    close(r.map50, &want["map50"], "mAP50");
    close(r.map, &want["map"], "mAP50-95");
    close(r.fitness, &want["fitness"], "fitness");
    assert_eq!(report.instances() as u64, want["instances"].as_u64().unwrap(), "{key} instances");
    let rows = report.class_rows();
    let classes = want["classes"].as_array().unwrap();
    assert_eq!(rows.len(), classes.len(), "{key}: classes with targets");
    for (row, c) in rows.iter().zip(classes) {
        assert_eq!(row.class, c["name"].as_str().unwrap());
        assert_eq!(row.instances as u64, c["instances"].as_u64().unwrap(), "{key} {} instances", row.class);
        assert_eq!(row.images as u64, c["images"].as_u64().unwrap(), "{key} {} images", row.class);
        close(row.precision, &c["p"], &format!("{} P", row.class));
        close(row.recall, &c["r"], &format!("{} R", row.class));
        close(row.map50, &c["ap50"], &format!("{} AP50", row.class));
        close(row.map50_95, &c["ap"], &format!("{} AP50-95", row.class));
    }
    println!("{key}: max |ours - ultralytics| over all compared numbers: {:.3e}", max_diff.get());
    coco_round_trip(&report, key);
    // A model that learned: the reference is not a degenerate all-zero case.
    assert!(want["map50"].as_f64().unwrap() > 0.1, "{key}: reference mAP50 too low to be a meaningful check");
}

#[test]
fn val_nms_head_matches_ultralytics() {
    check(DecodeMode::Nms, "nms");
}

#[test]
fn val_end2end_head_matches_ultralytics() {
    check(DecodeMode::EndToEnd, "end2end");
}

/// `--save-json` output read by the COCO evaluator against the `val_coco.json` that `yolo26 synth` writes for the
/// same images: every image id and category id resolves (an unknown image id is an error), and the COCO mAP is that
/// of a detector that learned.
fn coco_round_trip(report: &yolo26_train::val::ValReport, key: &str) {
    let dir = std::env::temp_dir().join(format!("yolo26-val-parity-{key}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    yolo26_data::write_ultralytics(&dir, yolo26_data::Recipe::Full, 1, 100, 0).unwrap();
    let out = dir.join("run");
    let written = report.write(&out, true).unwrap();
    for f in ["metrics.json", "per_class.csv", "predictions.json", "BoxPR_curve.png", "confusion_matrix.png"] {
        assert!(written.contains(&out.join(f)), "{key}: {f} not written");
    }
    let e = yolo26_eval::eval_files(&dir.join("val_coco.json"), &out.join("predictions.json")).unwrap();
    assert_eq!(e.n_dets_unknown_category, 0);
    println!("{key}: COCO eval of our predictions.json: mAP50-95 {:.4}, mAP50 {:.4}", e.stats[0], e.stats[1]);
    assert!(e.stats[1] > 0.3, "{key}: COCO mAP50 {}", e.stats[1]);
    let _ = std::fs::remove_dir_all(&dir);
}
