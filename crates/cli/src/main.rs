//! `yolo26`: YOLO26 inference and tooling on CPU (Flex), wgpu or CUDA.

mod backend;
mod bench;
mod eval;
mod info;
mod plot_batch;
mod predict;
mod ranges;
mod synth;
mod train;
mod val;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "yolo26", version, about = "YOLO26 object detection on Burn (CPU, wgpu, CUDA)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Detect objects in an image or a directory of images.
    Predict(predict::PredictArgs),
    /// Train YOLO26 (ultralytics recipe: optimizer groups, warmup, EMA, ProgLoss) on a dataset.
    Train(train::TrainCliArgs),
    /// COCO bbox evaluation of a detections JSON against COCO instances (equal to pycocotools' COCOeval).
    Eval(eval::EvalArgs),
    /// Validate a model on a dataset split: P, R, mAP50, mAP50-95 as ultralytics' validator computes them.
    Val(val::ValArgs),
    /// Write the built-in synthetic dataset in the ultralytics layout (data.yaml, images/, labels/, val_coco.json).
    Synth(synth::SynthArgs),
    /// Plot the first training batches (augmented) as labelled mosaics, like ultralytics' train_batch0.jpg.
    PlotBatch(plot_batch::PlotBatchArgs),
    /// Time inference (or, with --train, a training step) per batch size: median latency, images/s, memory.
    Bench(bench::BenchArgs),
    /// Print the layer table, parameter count and GFLOPs of a model scale.
    Info(info::InfoArgs),
    /// Convert a weight file (ultralytics .pt or safetensors) to safetensors with ultralytics names, or (--out
    /// NAME.pt) to an ultralytics checkpoint that `YOLO("NAME.pt")` loads.
    Convert {
        /// Input weights (.pt or .safetensors).
        #[arg(long)]
        weights: PathBuf,
        /// Output file: .safetensors, or .pt for ultralytics.
        #[arg(long)]
        out: PathBuf,
        /// Store floats as f16 instead of f32 (ultralytics' own checkpoints are f16).
        #[arg(long)]
        half: bool,
    },
}

fn main() {
    restore_sigpipe();
    keep_freed_memory();
    let cli = Cli::parse();
    // opt-in until measured on a GPU (see `kernels_cubecl::conv::set_tensor_core_gradients`)
    if std::env::var("YOLO26_TC_GRADS").is_ok_and(|v| v == "1") {
        yolo26_model::nn::conv::set_tensor_core_gradients(true);
    }
    let result = match cli.cmd {
        Cmd::Predict(a) => predict::run(a),
        Cmd::Train(a) => train::run(a),
        Cmd::Info(a) => info::run(a),
        Cmd::Bench(a) => bench::run(a),
        Cmd::Eval(a) => eval::run(a),
        Cmd::Val(a) => val::run(a),
        Cmd::Synth(a) => synth::run(a),
        Cmd::PlotBatch(a) => plot_batch::run(a),
        Cmd::Convert { weights, out, half } => convert(&weights, &out, half),
    };
    if let Err(e) = result {
        eprintln!("error: {}", describe(&e));
        std::process::exit(1);
    }
}

/// `{e:#}` (the error and its causes, `: `-separated) without the causes that a message already shows: the
/// typed errors of the library crates print their source inside their own message (`{path}: {source}`) and
/// also return it from `source()`.
fn describe(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let msg = cause.to_string();
        if out.contains(&msg) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&msg);
    }
    out
}

fn convert(weights: &Path, out: &Path, half: bool) -> anyhow::Result<()> {
    use yolo26_model::detector::{infer_nc, infer_scale};
    use yolo26_model::weights::{read_weights, write_pt, write_safetensors, FileDType, PtMeta};
    let map = read_weights(weights)?;
    if same_file(weights, out) {
        bail!("--out {} is the input file; write the conversion elsewhere", out.display());
    }
    if out.extension().is_some_and(|e| e.eq_ignore_ascii_case("pt")) {
        let scale = infer_scale(&map)
            .with_context(|| format!("{}: not a YOLO26 n/s/m/l/x state_dict (layer shapes)", weights.display()))?;
        let nc = infer_nc(&map).with_context(|| format!("{}: no model.23.cv3.0.2.bias", weights.display()))?;
        let meta = PtMeta { scale, nc, names: map.names.clone(), train_args: Vec::new(), half };
        write_pt(&map, &meta, out)?;
        println!(
            "wrote {} tensors to {} (ultralytics checkpoint: YOLO(\"{}\") loads it)",
            map.tensors.len(),
            out.display(),
            out.display()
        );
        return Ok(());
    }
    let dtype = if half { FileDType::F16 } else { FileDType::F32 };
    write_safetensors(&map, out, dtype)?;
    println!("wrote {} tensors to {}", map.tensors.len(), out.display());
    Ok(())
}

/// Whether `a` and `b` name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// glibc's `malloc` gives freed blocks of 128 KiB and more back to the kernel (`munmap`, or trimming the heap top),
/// so the activations of every forward pass on the CPU are fresh pages that fault in and are zeroed by the kernel
/// again. Up to 32 MiB blocks now come from the heap and the heap keeps up to 1 GiB of freed memory (with 256 MiB of
/// padding per growth). Measured on a 2-core VM (2026-12-07, `bench --device cpu`, yolo26n 640 batch 1, the same
/// settings given as `GLIBC_TUNABLES`): median 107–120 → 89–93 ms, minimum 90 → 74–75 ms; peak RSS unchanged.
/// The mmap threshold alone (without the trim threshold) did not help.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc tuning at start-up, before any thread exists; the values are in glibc's accepted ranges.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TOP_PAD, 256 << 20);
    }
}

/// Rust ignores SIGPIPE, so printing into a closed pipe (`yolo26 info | head`) panics in `println!`. Restoring the
/// default action ends the process quietly with status 141 as Unix tools do.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to its default at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
