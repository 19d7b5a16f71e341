//! Runs burn-onnx's `ModelGen` on `model/yolo26n.onnx` (written by `export_onnx.py`) when the file exists;
//! without it the crate builds and its test fails with instructions.
use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_onnx_model)");
    println!("cargo:rerun-if-changed=model/yolo26n.onnx");
    if Path::new("model/yolo26n.onnx").exists() {
        burn_onnx::ModelGen::new().input("model/yolo26n.onnx").out_dir("model/").run_from_script();
        println!("cargo:rustc-cfg=has_onnx_model");
    }
}
