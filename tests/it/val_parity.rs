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
    let cfg = ValConfig { imgsz: 320, batch: 16, mode, workers: 2, ..ValConfig::default() };
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
