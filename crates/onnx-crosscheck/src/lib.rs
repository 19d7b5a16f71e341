//! The burn-onnx import of ultralytics' ONNX export of `assets/yolo26n-calib.pt` (one-to-many head, 224 input,
//! Conv+BN fused by the exporter), generated at build time from `model/yolo26n.onnx`.
//!
//! `Model::forward(images [1, 3, 224, 224]) -> output0 [1, 84, 1029]`: rows 0–3 the decoded boxes (cx, cy, w, h
//! in input pixels), rows 4–83 the class scores (sigmoid), as ultralytics' `Detect` in eval mode without end2end.
#[cfg(has_onnx_model)]
#[allow(clippy::all, unused)]
pub mod model {
    include!(concat!(env!("OUT_DIR"), "/model/yolo26n.rs"));
}

/// Whether `model/yolo26n.onnx` was present at build time.
pub const HAS_ONNX_MODEL: bool = cfg!(has_onnx_model);
