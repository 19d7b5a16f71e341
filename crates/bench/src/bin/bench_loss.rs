//! YOLO26 `E2ELoss` (both branches: one2many top-k 10, one2one top-k 7/1, ProgLoss mix) forward, and
//! forward + backward under `Autodiff`, including the task-aligned assignment, at a 640 input (8400 anchors),
//! 80 classes and 8 ground-truth boxes per image. Inputs are fixed pseudo-random raw head outputs; the time
//! covers the whole loss on the device up to a synchronisation (no model forward).
//!
//! ```text
//! bench-loss --device cuda --batch 1,64     # the H200 run recorded in docs/BENCHMARKS.md
//! bench-loss --device cpu --batch 1,16      # Flex, for context
//! ```
use std::time::Duration;

use burn::backend::Autodiff;
use burn::prelude::*;
use burn::tensor::Distribution;
use clap::Parser;
use kernels_cubecl::decode::{detect_decode, BoxFormat};
use yolo26_bench::loss_inputs::{autodiff_inputs, ground_truth, head};
use yolo26_bench::median_us;
use yolo26_model::postprocess::Anchors;
use yolo26_train::{E2ELoss, LossGains, TrainBackend};

#[derive(Parser)]
struct Args {
    /// cpu (Flex) | wgpu | cuda (whichever is compiled in); cuda-cube: CUDA without Burn's fusion
    /// (`CubeBackend`), to separate the fusion stream's host cost from the kernels
    #[arg(long, default_value = "cuda")]
    device: String,
    /// Batch sizes, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "1,64")]
    batch: Vec<usize>,
    /// Input size (square); 640 gives 8400 anchors
    #[arg(long, default_value_t = 640)]
    imgsz: usize,
    #[arg(long, default_value_t = 80)]
    classes: usize,
    /// Ground-truth boxes per image
    #[arg(long, default_value_t = 8)]
    gt: usize,
    /// Time budget per measurement (seconds)
    #[arg(long, default_value_t = 3.0)]
    budget: f64,
}

/// Loss calls issued back to back before one synchronisation in the batched columns.
const BATCHED: usize = 10;

/// The host floor of this device: a synchronisation with nothing queued, and the host cost of one small
/// kernel launch (a `detect_decode` of 64 anchors, 100 per sync).
fn host_floor<B: TrainBackend>(dev: &B::Device, budget: Duration) {
    const LAUNCHES: usize = 100;
    let sync = median_us(|| B::sync(dev).expect("sync"), 5, 10, 1000, budget / 4);
    let boxes = Tensor::<B, 3>::random([1, 4, 64], Distribution::Uniform(0.0, 6.0), dev);
    let grid = Tensor::<B, 2>::random([3, 64], Distribution::Uniform(0.0, 6.0), dev);
    let launch = median_us(
        || {
            for _ in 0..LAUNCHES {
                let _ = detect_decode(boxes.clone(), grid.clone(), BoxFormat::Xyxy);
            }
            B::sync(dev).expect("sync");
        },
        2,
        3,
        200,
        budget / 4,
    );
    println!(
        "host floor: sync with nothing queued {sync:.1} µs; one small op ({LAUNCHES} per sync) {:.1} µs\n",
        launch / LAUNCHES as f64
    );
}

fn run<B>(args: &Args, dev: B::Device)
where
    B: TrainBackend,
    Autodiff<B>: TrainBackend,
{
    let f = args.imgsz / 8;
    let feats = [[f, f], [f / 2, f / 2], [f / 4, f / 4]];
    let a: usize = feats.iter().map(|[h, w]| h * w).sum();
    let budget = Duration::from_secs_f64(args.budget);
    let loss = E2ELoss::new(args.classes, 100, LossGains::default());
    host_floor::<B>(&dev, budget);
    println!(
        "| device | batch | anchors | classes | GT/image | E2ELoss forward ms | forward+backward ms | of which decode + assignment ms | forward, {BATCHED} per sync, ms/call | forward+backward, {BATCHED} per sync, ms/call | forward host issue ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for &b in &args.batch {
        let anchors = Anchors::<B>::new(&feats, &dev);
        let gt = ground_truth::<B>(b, args.gt, args.imgsz, args.classes, &dev);
        let (o2m, o2o) = (head::<B>(b, args.classes, a, &dev), head::<B>(b, args.classes, a, &dev));
        B::sync(&dev).expect("sync");
        let fwd = median_us(
            || {
                let out = loss.forward(&o2m, &o2o, &anchors, &gt);
                let _ = out.total;
                B::sync(&dev).expect("sync");
            },
            2,
            3,
            200,
            budget,
        );
        let fwd_batched = median_us(
            || {
                for _ in 0..BATCHED {
                    let _ = loss.forward(&o2m, &o2o, &anchors, &gt).total;
                }
                B::sync(&dev).expect("sync");
            },
            1,
            3,
            50,
            budget,
        ) / BATCHED as f64;
        // host time until the forward returns (the queued kernels finish in the untimed sync)
        let mut issue = Vec::new();
        for _ in 0..20 {
            let t = std::time::Instant::now();
            let out = loss.forward(&o2m, &o2o, &anchors, &gt);
            issue.push(t.elapsed().as_secs_f64() * 1e6);
            let _ = out.total;
            B::sync(&dev).expect("sync");
        }
        issue.sort_by(f64::total_cmp);
        let issue = issue[issue.len() / 2];
        // the part of the forward spent in box decoding and the two assignments (no loss terms)
        let anc_px = anchors.grid.clone().narrow(0, 0, 2) * anchors.grid.clone().narrow(0, 2, 1);
        let assign = median_us(
            || {
                for (h, branch) in [(&o2m, &loss.one2many), (&o2o, &loss.one2one)] {
                    let px = detect_decode(h.boxes.clone(), anchors.grid.clone(), BoxFormat::Xyxy);
                    let _ = branch.assigner.assign(h.scores.clone(), px, anc_px.clone(), &gt);
                }
                B::sync(&dev).expect("sync");
            },
            2,
            3,
            200,
            budget,
        );

        let (anchors_ad, gt_ad, [o2m_ad, o2o_ad]) = autodiff_inputs(&anchors, &gt, [&o2m, &o2o]);
        let fwd_bwd = median_us(
            || {
                let out = loss.forward(&o2m_ad, &o2o_ad, &anchors_ad, &gt_ad);
                let grads = out.total.backward();
                let g = o2m_ad.boxes.grad(&grads).expect("gradient of the one2many boxes");
                let _ = g;
                B::sync(&dev).expect("sync");
            },
            2,
            3,
            200,
            budget,
        );
        let fwd_bwd_batched = median_us(
            || {
                for _ in 0..BATCHED {
                    let out = loss.forward(&o2m_ad, &o2o_ad, &anchors_ad, &gt_ad);
                    let grads = out.total.backward();
                    let _ = o2m_ad.boxes.grad(&grads).expect("gradient of the one2many boxes");
                }
                B::sync(&dev).expect("sync");
            },
            1,
            3,
            50,
            budget,
        ) / BATCHED as f64;
        println!(
            "| {} | {b} | {a} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            args.device,
            args.classes,
            args.gt,
            fwd / 1e3,
            fwd_bwd / 1e3,
            assign / 1e3,
            fwd_batched / 1e3,
            fwd_bwd_batched / 1e3,
            issue / 1e3
        );
    }
}

fn main() {
    let args = Args::parse();
    match args.device.as_str() {
        "cpu" => run::<burn::backend::Flex>(&args, Default::default()),
        #[cfg(feature = "wgpu")]
        "wgpu" => run::<burn::backend::Wgpu>(&args, burn::backend::wgpu::WgpuDevice::DefaultDevice),
        #[cfg(feature = "cuda")]
        "cuda" => run::<burn::backend::Cuda>(&args, burn::backend::cuda::CudaDevice::new(0)),
        #[cfg(feature = "cuda")]
        "cuda-cube" => run::<burn_cubecl::CubeBackend<cubecl::cuda::CudaRuntime, f32, i32, u8>>(
            &args,
            burn::backend::cuda::CudaDevice::new(0),
        ),
        other => {
            eprintln!("bench-loss: device '{other}' is not compiled in (cpu always; features: cuda, cuda-cube, wgpu)");
            std::process::exit(2);
        }
    }
}
