//! Fixture helpers shared by the integration tests (fixtures made by `tests/fixtures/generate.py`).
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;
use yolo26_augment::{RgbImage, Sample};

pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn fixtures() -> Value {
    let text = std::fs::read_to_string(dir().join("fixtures.json")).expect("fixtures.json (run generate.py)");
    serde_json::from_str(&text).expect("fixtures.json parses")
}

/// A raw RGB image described by `{"file", "h", "w"}`.
pub fn image(meta: &Value) -> RgbImage {
    let bytes = std::fs::read(dir().join(meta["file"].as_str().expect("file"))).expect("fixture image");
    let (w, h) = (meta["w"].as_u64().expect("w") as u32, meta["h"].as_u64().expect("h") as u32);
    RgbImage::from_raw(w, h, bytes).expect("fixture image size")
}

pub fn f64s(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(|x| x.as_f64().expect("number")).collect()
}

pub fn boxes(v: &Value) -> Vec<[f32; 4]> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|b| {
            let b = f64s(b);
            [b[0] as f32, b[1] as f32, b[2] as f32, b[3] as f32]
        })
        .collect()
}

pub fn u32s(v: &Value) -> Vec<u32> {
    v.as_array().expect("array").iter().map(|x| x.as_u64().expect("int") as u32).collect()
}

pub fn mat3(v: &Value) -> [[f32; 3]; 3] {
    let rows: Vec<Vec<f64>> = v.as_array().expect("rows").iter().map(f64s).collect();
    std::array::from_fn(|i| std::array::from_fn(|j| rows[i][j] as f32))
}

/// Max abs difference and the fraction of differing bytes.
pub fn diff(a: &RgbImage, b: &RgbImage) -> (u8, f64) {
    assert_eq!(a.dimensions(), b.dimensions(), "image sizes");
    let mut max = 0u8;
    let mut n = 0usize;
    for (x, y) in a.iter().zip(b.iter()) {
        let d = x.abs_diff(*y);
        max = max.max(d);
        n += (d != 0) as usize;
    }
    (max, n as f64 / a.len() as f64)
}

pub fn assert_boxes_close(got: &[[f32; 4]], want: &[[f32; 4]], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: box count: got {got:?}, want {want:?}");
    for (g, w) in got.iter().zip(want) {
        for k in 0..4 {
            assert!((g[k] - w[k]).abs() <= tol, "{what}: got {g:?}, want {w:?}");
        }
    }
}

/// The fixture labels `{"cls", "xywhn"}` on `img` as a sample.
pub fn sample(img: RgbImage, cls: &[u32], xywhn: &Value) -> Sample {
    let labels: Vec<(u32, [f32; 4])> = cls
        .iter()
        .zip(xywhn.as_array().expect("rows"))
        .map(|(&c, b)| {
            let b = f64s(b);
            (c, [b[0] as f32, b[1] as f32, b[2] as f32, b[3] as f32])
        })
        .collect();
    Sample::from_normalized_xywh(img, &labels).expect("valid labels")
}
