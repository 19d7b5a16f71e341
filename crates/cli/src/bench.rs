//! `yolo26 bench`: inference (or, with `--train`, training-step) speed of a YOLO26 scale on one device.
//!
//! Inference is what `predict` runs on the device for a letterboxed batch: BatchNorm folded, the one-to-one head
//! and its top-k decode (`Detector::infer_device`, ultralytics `model(x)` of a fused end-to-end model, output
//! `[B, 300, 6]`), on a fixed random `[B, 3, imgsz, imgsz]` input, without image decoding or host post-processing.
//! `--train` times one training step: forward with both heads in training mode, `E2ELoss` on fixed random boxes,
//! backward, and the optimizer step (SGD, ultralytics' update rule) — ultralytics' `trainer.optimizer_step` after
//! `model.loss(batch)`, without the data loader.
//!
//! Each call is timed on the host between two device synchronisations; the first call (kernel compilation on a
//! GPU; CubeCL keeps compiled CUDA kernels in its cache directory, so a later process compiles less) is reported
//! apart, then `--warmup` calls, then the median of `--runs` calls. Memory: what the device's memory pool holds
//! after the runs (CubeCL `bytes_reserved`, comparable to `torch.cuda.max_memory_reserved`), GPU backends only.

use std::any::Any;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};
use burn::prelude::*;
use burn::tensor::Distribution;
use clap::Args;
use serde::Serialize;
use yolo26_model::detector::load_model;
use yolo26_model::names::default_names;
use yolo26_model::nn::conv::ConvMath;
use yolo26_model::weights::read_weights;
use yolo26_model::{DecodeMode, Detector, DetectorOptions, Scale, Yolo26Config};

use crate::backend::{dispatch, dispatch_train, Job, TrainJob};

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Model scale: n, s, m, l or x.
    #[arg(long, default_value = "n")]
    pub model: Scale,
    /// Weights (.pt or safetensors); default: random initialisation (speed does not depend on the values).
    #[arg(long)]
    pub weights: Option<PathBuf>,
    /// cpu, wgpu[:N] or cuda[:N] (those compiled in).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Batch sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub batch: Vec<usize>,
    /// Square input size, a multiple of 32.
    #[arg(long, default_value_t = 640)]
    pub imgsz: usize,
    /// Inference in f16 (parameters and activations) on tensor cores, as `predict --half`; with --train: a
    /// mixed-precision step as `train --amp` (f16 activations, f32 parameters, scaled loss).
    #[arg(long)]
    pub half: bool,
    /// f32 storage, convolutions on TF32 tensor cores (PyTorch's cuDNN default); GPU backends.
    #[arg(long)]
    pub tf32: bool,
    /// Untimed calls after the first one.
    #[arg(long, default_value_t = 10)]
    pub warmup: usize,
    /// Timed calls (the median is reported).
    #[arg(long, default_value_t = 100)]
    pub runs: usize,
    /// Time a training step (forward, loss, backward, optimizer step) instead of inference.
    #[arg(long)]
    pub train: bool,
    /// One JSON object per batch size instead of the table.
    #[arg(long)]
    pub json: bool,
    /// With --train: also time the phases of a step apart (backbone + neck, heads, loss, backward, optimizer step; a device
    /// synchronisation after each), over --runs more steps, printed as one extra line per batch size.
    #[arg(long, requires = "train")]
    pub phases: bool,
}

/// One batch size's result.
#[derive(Serialize)]
struct Row {
    model: String,
    mode: &'static str,
    device: String,
    dtype: &'static str,
    batch: usize,
    imgsz: usize,
    first_call_ms: f64,
    median_ms: f64,
    min_ms: f64,
    images_per_s: f64,
    runs: usize,
    /// Device memory pool after the runs (bytes), GPU backends only.
    memory_reserved_bytes: Option<u64>,
}

impl BenchArgs {
    /// The storage / arithmetic label of the rows.
    fn dtype(&self) -> &'static str {
        match (self.half, self.tf32) {
            (true, _) if self.train => "amp",
            (true, _) => "f16",
            (false, true) => "tf32",
            (false, false) => "f32",
        }
    }

    /// Sets the convolutions' arithmetic for this run (`--half`, `--tf32`: tensor cores).
    fn set_math(&self) {
        let fast = self.half || self.tf32;
        yolo26_model::nn::conv::set_conv_math(if fast { ConvMath::Fast } else { ConvMath::Exact });
    }

    fn check(&self) -> anyhow::Result<()> {
        if self.batch.is_empty() || self.batch.contains(&0) {
            bail!("--batch: give one or more positive batch sizes, e.g. 1,16,64");
        }
        if self.imgsz == 0 || !self.imgsz.is_multiple_of(32) {
            bail!("--imgsz {} must be a positive multiple of 32", self.imgsz);
        }
        if self.runs == 0 {
            bail!("--runs must be at least 1");
        }
        if self.half && self.tf32 {
            bail!("--half and --tf32: pick one (f16 storage already runs on tensor cores)");
        }
        if self.train && self.weights.is_some() {
            bail!("--weights with --train: a training step's speed does not depend on the weights; drop --weights");
        }
        Ok(())
    }

    fn emit(&self, row: &Row) -> anyhow::Result<()> {
        if self.json {
            println!("{}", serde_json::to_string(row)?);
        } else {
            let mem =
                row.memory_reserved_bytes.map_or("-".to_string(), |b| format!("{:.2} GiB", b as f64 / 1073741824.0));
            println!(
                "{:>5} {:>12.1} {:>10.3} {:>10.3} {:>10.1} {:>12}",
                row.batch, row.first_call_ms, row.median_ms, row.min_ms, row.images_per_s, mem
            );
        }
        Ok(())
    }

    fn header(&self) {
        if !self.json {
            let what = if self.train { "training step" } else { "inference" };
            let dtype = self.dtype();
            println!(
                "yolo26{} {what}, {}x{} input, {dtype}, --device {}, median of {} runs after {} warm-up",
                self.model.letter(),
                self.imgsz,
                self.imgsz,
                self.device,
                self.runs,
                self.warmup
            );
            println!(
                "{:>5} {:>12} {:>10} {:>10} {:>10} {:>12}",
                "batch", "first (ms)", "median", "min", "images/s", "memory"
            );
        }
    }
}

/// Times `call` (which ends with a device sync): first call, warm-up, then `runs` timed calls.
fn time_calls(args: &BenchArgs, mut call: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<(f64, Vec<f64>)> {
    let t = Instant::now();
    call()?;
    let first = t.elapsed().as_secs_f64() * 1e3;
    for _ in 0..args.warmup {
        call()?;
    }
    let mut times = Vec::with_capacity(args.runs);
    for _ in 0..args.runs {
        let t = Instant::now();
        call()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((first, times))
}

fn row(args: &BenchArgs, batch: usize, first: f64, times: &[f64], mem: Option<u64>) -> Row {
    let median = times[times.len() / 2];
    Row {
        model: format!("yolo26{}", args.model.letter()),
        mode: if args.train { "train" } else { "inference" },
        device: args.device.clone(),
        dtype: args.dtype(),
        batch,
        imgsz: args.imgsz,
        first_call_ms: first,
        median_ms: median,
        min_ms: times[0],
        images_per_s: batch as f64 / median * 1e3,
        runs: times.len(),
        memory_reserved_bytes: mem,
    }
}

/// The memory pool of a CubeCL device (`bytes_reserved`); `None` on Flex.
fn memory_reserved(device: &dyn Any) -> Option<u64> {
    #[cfg(feature = "cuda")]
    if let Some(d) = device.downcast_ref::<burn::backend::cuda::CudaDevice>() {
        use cubecl::Runtime;
        return cubecl::cuda::CudaRuntime::client(d).memory_usage().ok().map(|m| m.bytes_reserved);
    }
    #[cfg(feature = "wgpu")]
    if let Some(d) = device.downcast_ref::<burn::backend::wgpu::WgpuDevice>() {
        use cubecl::Runtime;
        return cubecl::wgpu::WgpuRuntime::client(d).memory_usage().ok().map(|m| m.bytes_reserved);
    }
    let _ = device;
    None
}

fn sync<B: Backend>(device: &B::Device) -> anyhow::Result<()> {
    B::sync(device).map_err(|e| anyhow::anyhow!("device synchronisation failed: {e:?}"))
}

impl Job for BenchArgs {
    fn run<B: yolo26_model::YoloBackend>(self, device: B::Device) -> anyhow::Result<()> {
        self.set_math();
        self.header();
        bench_inference::<B>(&self, &device, |row| self.emit(&row))
    }
}

/// Times inference for each batch size of `args`, handing each result to `emit`.
fn bench_inference<B: yolo26_model::YoloBackend>(
    args: &BenchArgs,
    device: &B::Device,
    mut emit: impl FnMut(Row) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let model = match &args.weights {
        Some(w) => {
            let map = read_weights(w)?;
            load_model::<B>(args.model, &map, None, device).with_context(|| format!("--weights {}", w.display()))?
        }
        None => Yolo26Config::new(args.model, 80).init::<B>(device),
    };
    let nc = model.num_classes();
    let opts = DetectorOptions { imgsz: args.imgsz, mode: DecodeMode::EndToEnd, half: args.half, ..Default::default() };
    let det = Detector::<B>::from_model(model, default_names(nc), opts, device)?;
    for &batch in &args.batch {
        B::memory_cleanup(device);
        let x = Tensor::<B, 4>::random([batch, 3, args.imgsz, args.imgsz], Distribution::Uniform(0.0, 1.0), device);
        let (first, times) = time_calls(args, || {
            let _ = det.infer_device(x.clone());
            sync::<B>(device)
        })?;
        emit(row(args, batch, first, &times, memory_reserved(device)))?;
    }
    Ok(())
}

impl TrainJob for BenchArgs {
    fn run<AB>(self, devices: Vec<AB::Device>) -> anyhow::Result<()>
    where
        AB: burn::tensor::backend::AutodiffBackend + yolo26_train::TrainBackend,
        AB::InnerBackend: yolo26_model::YoloBackend,
    {
        let [device] = devices.as_slice() else {
            anyhow::bail!("yolo26 bench --train times one device (--device {})", self.device);
        };
        let device = device.clone();
        self.set_math();
        self.header();
        bench_train::<AB>(&self, &device, |row| self.emit(&row))
    }
}

/// Times a training step for each batch size of `args`, handing each result to `emit`.
fn bench_train<AB>(
    args: &BenchArgs,
    device: &AB::Device,
    mut emit: impl FnMut(Row) -> anyhow::Result<()>,
) -> anyhow::Result<()>
where
    AB: burn::tensor::backend::AutodiffBackend + yolo26_train::TrainBackend,
    AB::InnerBackend: yolo26_model::YoloBackend,
{
    use std::collections::HashMap;

    use burn::module::AutodiffModule;
    use burn::optim::GradientsParams;
    use burn::tensor::DType;
    use yolo26_train::amp::GradScaler;
    use yolo26_train::optim::{accumulate_grads, Optimizer, OptimizerChoice};
    use yolo26_train::params::set_trainable;
    use yolo26_train::step::{f32_outputs, random_targets, train_forward};
    use yolo26_train::trainer::init_detect_bias;
    use yolo26_train::{E2ELoss, LossGains};

    let nc = 80;
    let inner = init_detect_bias(Yolo26Config::new(args.model, nc).init::<AB::InnerBackend>(device));
    let mut model = Some(set_trainable(yolo26_model::Yolo26::<AB>::from_inner(inner)));
    let choice = OptimizerChoice::resolve("SGD", 0.01, 0.937, nc, 0).map_err(anyhow::Error::msg)?;
    let mut opt = Optimizer::<AB::InnerBackend>::new(choice, 0.0005);
    let loss = E2ELoss::new(nc, 100, LossGains::default());
    // --half: mixed precision as `train --amp` (f16 activations, the loss scaled, the step unscaled or skipped)
    let mut scaler = args.half.then(GradScaler::default);
    for &batch in &args.batch {
        AB::memory_cleanup(device);
        let images =
            Tensor::<AB, 4>::random([batch, 3, args.imgsz, args.imgsz], Distribution::Uniform(0.0, 1.0), device);
        let images = if args.half { images.cast(DType::F16) } else { images };
        // 8 boxes per image (COCO averages 7.3), sides 5–45% of the image, as torch_bench.py draws them
        let side = (0.05 * args.imgsz as f32, 0.45 * args.imgsz as f32);
        let gt = random_targets::<AB>(batch, 8, args.imgsz, nc, side, device);
        let (first, times) = time_calls(args, || {
            let m = model.take().context("the model was lost in an earlier step")?;
            let out = train_forward(&m, &loss, images.clone(), &gt);
            let total = match scaler {
                Some(s) => out.total.mul_scalar(s.scale),
                None => out.total,
            };
            let grads = GradientsParams::from_grads(total.backward(), &m);
            let mut named = HashMap::new();
            accumulate_grads::<AB, _>(&m, grads, &mut named);
            model = Some(opt.step_amp::<AB, _>(m, named, scaler.as_mut()));
            sync::<AB>(device)
        })?;
        emit(row(args, batch, first, &times, memory_reserved(device)))?;
        if args.phases {
            // the phases of `train_forward` + backward + optimizer step, each ended by a device sync
            const NAMES: [&str; 5] = ["backbone+neck", "heads", "loss", "backward", "optimizer"];
            let mut phases: [Vec<f64>; 5] = Default::default();
            for _ in 0..args.runs {
                let m = model.take().context("the model was lost in an earlier step")?;
                let mut marks = vec![Instant::now()];
                let mark = |marks: &mut Vec<Instant>| -> anyhow::Result<()> {
                    sync::<AB>(device)?;
                    marks.push(Instant::now());
                    Ok(())
                };
                let feats = m.forward_features(images.clone());
                mark(&mut marks)?;
                let shapes = yolo26_model::nn::head::feature_shapes(&feats);
                let o2m = f32_outputs(m.layer23.forward_one2many(&feats));
                let detached: Vec<_> = feats.iter().map(|f| f.clone().detach()).collect();
                let o2o = f32_outputs(m.layer23.forward_one2one(&detached));
                mark(&mut marks)?;
                let anchors = yolo26_model::postprocess::Anchors::<AB>::new(&shapes, device);
                let out = loss.forward(&o2m, &o2o, &anchors, &gt);
                mark(&mut marks)?;
                let total = match scaler {
                    Some(s) => out.total.mul_scalar(s.scale),
                    None => out.total,
                };
                let grads = GradientsParams::from_grads(total.backward(), &m);
                let mut named = HashMap::new();
                accumulate_grads::<AB, _>(&m, grads, &mut named);
                mark(&mut marks)?;
                model = Some(opt.step_amp::<AB, _>(m, named, scaler.as_mut()));
                mark(&mut marks)?;
                for (v, w) in phases.iter_mut().zip(marks.windows(2)) {
                    v.push((w[1] - w[0]).as_secs_f64() * 1e3);
                }
            }
            let parts: Vec<String> = NAMES
                .iter()
                .zip(phases.iter_mut())
                .map(|(name, v)| {
                    v.sort_by(f64::total_cmp);
                    format!("{name} {:.1}", v[v.len() / 2])
                })
                .collect();
            println!("phases, batch {batch} (median ms of {} steps): {}", args.runs, parts.join(", "));
        }
    }
    Ok(())
}

/// Runs `yolo26 bench`.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    args.check()?;
    let device = args.device.clone();
    if args.train {
        dispatch_train(&device, args)
    } else {
        dispatch(&device, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{flex::FlexDevice, Autodiff, Flex};

    fn args(batch: Vec<usize>, train: bool) -> BenchArgs {
        BenchArgs {
            model: Scale::N,
            weights: None,
            device: "cpu".into(),
            batch,
            imgsz: 64,
            half: false,
            tf32: false,
            warmup: 0,
            runs: 2,
            train,
            json: true,
            phases: false,
        }
    }

    fn check_rows(a: &BenchArgs, rows: &[Row]) {
        assert_eq!(rows.iter().map(|r| r.batch).collect::<Vec<_>>(), a.batch);
        for r in rows {
            assert!(
                r.first_call_ms > 0.0 && r.min_ms > 0.0 && r.min_ms <= r.median_ms,
                "{}",
                serde_json::to_string(r).unwrap()
            );
            assert!((r.images_per_s - r.batch as f64 / r.median_ms * 1e3).abs() < 1e-9);
            assert_eq!((r.runs, r.imgsz, r.memory_reserved_bytes), (2, 64, None));
        }
    }

    /// The rows `bench` hands out for `a`.
    fn rows(a: &BenchArgs, bench: impl FnOnce(&mut dyn FnMut(Row) -> anyhow::Result<()>)) -> Vec<Row> {
        let mut rows = Vec::new();
        bench(&mut |r| {
            rows.push(r);
            Ok(())
        });
        check_rows(a, &rows);
        rows
    }

    #[test]
    fn inference_rows_per_batch() {
        let a = args(vec![1, 2], false);
        let rows = rows(&a, |emit| bench_inference::<Flex>(&a, &FlexDevice, emit).unwrap());
        assert_eq!(rows[0].mode, "inference");
    }

    #[test]
    fn train_step_rows() {
        let a = args(vec![2], true);
        let f32_rows = rows(&a, |emit| bench_train::<Autodiff<Flex>>(&a, &FlexDevice, emit).unwrap());
        assert_eq!(f32_rows[0].mode, "train");
        // --half --train: the mixed-precision step (f16 activations, scaled loss; phases too)
        let a = BenchArgs { half: true, phases: true, ..args(vec![2], true) };
        let amp = rows(&a, |emit| bench_train::<Autodiff<Flex>>(&a, &FlexDevice, emit).unwrap());
        assert_eq!((amp[0].mode, amp[0].dtype), ("train", "amp"));
    }

    #[test]
    fn bad_arguments_are_named() {
        let msg = |a: BenchArgs| a.check().unwrap_err().to_string();
        assert!(msg(args(vec![0], false)).contains("--batch"));
        assert!(msg(BenchArgs { imgsz: 100, ..args(vec![1], false) }).contains("--imgsz 100"));
        assert!(msg(BenchArgs { runs: 0, ..args(vec![1], false) }).contains("--runs"));
        assert!(msg(BenchArgs { half: true, tf32: true, ..args(vec![1], true) }).contains("--half and --tf32"));
        assert!(BenchArgs { half: true, ..args(vec![1], true) }.check().is_ok(), "--half --train: mixed precision");
        assert!(args(vec![1, 16], false).check().is_ok());
    }
}
