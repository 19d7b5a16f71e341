//! Flash Attention 2 (`kernels_cubecl::attention::flash_attention`) against Burn 0.21's built-in
//! `burn::tensor::module::attention`: forward alone, and forward + backward under `Autodiff` (where Burn's
//! attention materialises the `N × N` scores and probabilities for its backward).
//!
//! For each shape and dtype it prints the median time (µs), TFLOP/s (forward `4·B·H·N²·D`; forward +
//! backward counted as 3.5× the forward, FA2's convention) and the device memory held after the forward
//! (Autodiff graph alive, i.e. what the backward keeps), measured with CubeCL's `memory_usage()`.
//! Plain rows time one call followed by a device sync; for the PSA-like shapes the "N calls per sync" rows
//! issue 20 calls back to back and then sync (per-call time: the throughput of a training loop, which does
//! not sync per step, and what CUDA-event timings such as the PyTorch SDPA anchors measure).
//!
//! ```text
//! bench-attention --device cuda --dtypes f16,f32 --long-first   # the H200 run for docs/BENCHMARKS.md
//! ```
//!
//! Build it with the `autotune` feature: without it Burn's CubeCL attention is its naive fallback, with it
//! Burn autotunes between its flash kernels (unit and tensor-core).
//!
//! ```text
//! bench-attention --device wgpu --quick    # small shapes only
//! bench-attention --device cuda --dtypes f16 --long-first --cmma-sweep auto,64x4,64x8,32x4   # tuning
//! ```
use std::time::Duration;

use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{DType, Distribution, Tensor};
use clap::Parser;
use kernels_cubecl::attention::{flash_attention, FlashAttentionBackend};
use yolo26_bench::{median_us, tflops};

#[derive(Parser)]
struct Args {
    /// cuda | wgpu (whichever is compiled in)
    #[arg(long, default_value = "cuda")]
    device: String,
    /// Only the PSA-like shapes with B = 1 (for slow devices)
    #[arg(long)]
    quick: bool,
    /// Skip Burn's attention on shapes whose N×N scores exceed this many GiB (per tensor)
    #[arg(long, default_value_t = 40.0)]
    max_scores_gib: f64,
    /// Dtypes to run, in this order (f16, bf16, f32)
    #[arg(long, value_delimiter = ',', default_value = "f16,f32")]
    dtypes: Vec<String>,
    /// Run the long shape (B16 H8 N4096 D64) before the PSA-like ones
    #[arg(long)]
    long_first: bool,
    /// Batch sizes of the PSA-like shapes (N = 400, H ∈ {2, 4}, D ∈ {32, 64})
    #[arg(long, value_delimiter = ',', default_value = "1,64")]
    psa_batches: Vec<usize>,
    /// Tuning sweep instead of the comparison: FA2 forward only, once per tensor-core configuration
    /// `BNxP[xM]` (key-tile width × planes × 16-row query blocks per plane), e.g. `64x4,64x4x2,32x4`; `auto`
    /// is the built-in choice. Applies to the kernel the device selects: `mma` (BN 32|64|128, P 1|2|4|8,
    /// M 1|2, 16·P·M ≤ 2·BN) or `cmma` (BN 32|64, P 1–8, M 1)
    #[arg(long, value_delimiter = ',')]
    cmma_sweep: Vec<String>,
}

/// `BNxP` or `BNxPxM` → `Some((block_n, planes, m-tiles))` (M defaults to 1); `auto` → `None`.
fn parse_cmma(s: &str) -> Option<(usize, usize, usize)> {
    if s == "auto" {
        return None;
    }
    let parts: Vec<Option<usize>> = s.split('x').map(|p| p.parse().ok()).collect();
    match parts[..] {
        [Some(bn @ (32 | 64 | 128)), Some(p @ 1..=8)] => Some((bn, p, 1)),
        [Some(bn @ (32 | 64 | 128)), Some(p @ 1..=8), Some(m @ 1..=2)] => Some((bn, p, m)),
        _ => {
            eprintln!(
                "bench-attention: bad --cmma-sweep entry '{s}' (BNxP[xM] with BN 32|64|128, P 1–8, M 1|2, or auto)"
            );
            std::process::exit(2);
        }
    }
}

/// FA2 forward once per tensor-core configuration of `args.cmma_sweep`.
fn sweep_shape<B: FlashAttentionBackend>(s: Shape, dtype: DType, dev: &B::Device, args: &Args) {
    use kernels_cubecl::bench_internals::{forward_cmma, forward_mma};
    let scale = 1.0 / (s.d as f32).sqrt();
    let dt = format!("{dtype:?}").to_lowercase();
    let [q, k, v] = inputs::<B>(s, dtype, dev);
    B::sync(dev).unwrap();
    for cfg in &args.cmma_sweep {
        let c = parse_cmma(cfg);
        let mma = c.map(|(block_n, planes, mtiles)| forward_mma::MmaConfig { block_n, planes, mtiles });
        if !mma.is_none_or(|m| m.is_valid()) {
            eprintln!("bench-attention: skipping {cfg} (not an mma configuration)");
            continue;
        }
        let cmma_ok = c.is_none_or(|(bn, _, m)| bn <= 64 && m == 1);
        forward_mma::set_config_override(mma);
        forward_cmma::set_config_override(c.filter(|_| cmma_ok).map(|(bn, p, _)| (bn, p)));
        let (us, _) = time::<B>(dev, || {
            let _o = flash_attention(q.clone(), k.clone(), v.clone(), scale);
            B::sync(dev).unwrap();
            0
        });
        println!(
            "| B{} H{} N{} D{} {dt} | FA2 forward, tile {cfg} | {us:.1} | {:.2} | - |",
            s.b,
            s.h,
            s.n,
            s.d,
            tflops(s.fwd_flops(), us)
        );
    }
    forward_mma::set_config_override(None);
    forward_cmma::set_config_override(None);
}

fn parse_dtype(s: &str) -> DType {
    match s {
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        "f32" => DType::F32,
        other => {
            eprintln!("bench-attention: unknown dtype '{other}' (f16, bf16, f32)");
            std::process::exit(2);
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Shape {
    b: usize,
    h: usize,
    n: usize,
    d: usize,
}

impl Shape {
    fn fwd_flops(&self) -> f64 {
        4.0 * (self.b * self.h) as f64 * (self.n * self.n) as f64 * self.d as f64
    }
    fn scores_gib(&self, dtype: DType) -> f64 {
        (self.b * self.h * self.n * self.n * dtype.size()) as f64 / (1u64 << 30) as f64
    }
}

fn inputs<B: Backend>(s: Shape, dtype: DType, dev: &B::Device) -> [Tensor<B, 4>; 3] {
    let t = || Tensor::<B, 4>::random([s.b, s.h, s.n, s.d], Distribution::Normal(0.0, 1.0), dev).cast(dtype);
    [t(), t(), t()]
}

/// Burn's attention with its default scale `1/√D` (the one used here): an explicit `scale` would send Burn
/// 0.21's CubeCL backend to its naive fallback instead of its flash kernel.
fn burn_attention<B: Backend>(q: Tensor<B, 4>, k: Tensor<B, 4>, v: Tensor<B, 4>) -> Tensor<B, 4> {
    let opts = AttentionModuleOptions { scale: None, softcap: None, is_causal: false };
    attention(q, k, v, None, None, opts)
}

/// One timed configuration: median µs and the bytes in use after the forward (graph alive).
fn time<B: Backend>(dev: &B::Device, mut run: impl FnMut() -> u64) -> (f64, u64) {
    let mut held = 0;
    let us = median_us(
        || {
            held = held.max(run());
            B::sync(dev).expect("device sync");
        },
        2,
        3,
        50,
        Duration::from_millis(600),
    );
    (us, held)
}

/// Median µs per call of `run` issued `calls` times back to back between two device syncs (the
/// throughput of a training loop, which does not sync per step; comparable to CUDA-event timings).
fn time_batched<B: Backend>(dev: &B::Device, calls: usize, mut run: impl FnMut()) -> f64 {
    let us = median_us(
        || {
            for _ in 0..calls {
                run();
            }
            B::sync(dev).expect("device sync");
        },
        1,
        3,
        20,
        Duration::from_millis(600),
    );
    us / calls as f64
}

/// Calls per sync in the batched rows.
const BATCH_CALLS: usize = 20;

fn bench_shape<B: FlashAttentionBackend>(s: Shape, dtype: DType, dev: &B::Device, mem: &dyn Fn() -> u64, max_gib: f64)
where
    Autodiff<B>: FlashAttentionBackend,
{
    let scale = 1.0 / (s.d as f32).sqrt();
    let flops = s.fwd_flops();
    let burn_ok = s.scores_gib(dtype) <= max_gib;
    let dt = format!("{dtype:?}").to_lowercase();
    let label = format!("B{} H{} N{} D{} {dt}", s.b, s.h, s.n, s.d);
    let row = |what: &str, us: f64, f: f64, held: Option<u64>| {
        let held = held.map(|b| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)).unwrap_or_else(|| "-".into());
        println!("| {label} | {what} | {us:.1} | {:.2} | {held} |", tflops(f, us));
    };

    // forward
    let [q, k, v] = inputs::<B>(s, dtype, dev);
    B::sync(dev).unwrap();
    let (us, _) = time::<B>(dev, || {
        let _o = flash_attention(q.clone(), k.clone(), v.clone(), scale);
        0
    });
    row("FA2 forward", us, flops, None);
    // Batched rows only where a call is short enough for host overhead to matter.
    let batched = s.n <= 1024;
    if batched {
        let us = time_batched::<B>(dev, BATCH_CALLS, || {
            let _o = flash_attention(q.clone(), k.clone(), v.clone(), scale);
        });
        row(&format!("FA2 forward, {BATCH_CALLS} calls per sync"), us, flops, None);
    }
    if burn_ok {
        let (us, _) = time::<B>(dev, || {
            let _o = burn_attention(q.clone(), k.clone(), v.clone());
            0
        });
        row("burn attention forward", us, flops, None);
        if batched {
            let us = time_batched::<B>(dev, BATCH_CALLS, || {
                let _o = burn_attention(q.clone(), k.clone(), v.clone());
            });
            row(&format!("burn attention forward, {BATCH_CALLS} calls per sync"), us, flops, None);
        }
    }

    // forward + backward
    type A<B> = Autodiff<B>;
    let [q, k, v] = [q, k, v].map(|t| Tensor::<A<B>, 4>::from_inner(t).require_grad());
    let base = mem();
    let (us, held) = time::<B>(dev, || {
        let o = flash_attention(q.clone(), k.clone(), v.clone(), scale);
        B::sync(dev).unwrap();
        let held = mem().saturating_sub(base);
        let _g = o.sum().backward();
        held
    });
    row("FA2 forward+backward", us, 3.5 * flops, Some(held));
    if batched {
        let us = time_batched::<B>(dev, BATCH_CALLS, || {
            let _g = flash_attention(q.clone(), k.clone(), v.clone(), scale).sum().backward();
        });
        row(&format!("FA2 forward+backward, {BATCH_CALLS} calls per sync"), us, 3.5 * flops, None);
    }
    if burn_ok {
        let (us, held) = time::<B>(dev, || {
            let o = burn_attention(q.clone(), k.clone(), v.clone());
            B::sync(dev).unwrap();
            let held = mem().saturating_sub(base);
            let _g = o.sum().backward();
            held
        });
        row("burn autodiff attention forward+backward", us, 3.5 * flops, Some(held));
        if batched {
            let us = time_batched::<B>(dev, BATCH_CALLS, || {
                let _g = burn_attention(q.clone(), k.clone(), v.clone()).sum().backward();
            });
            let what = format!("burn autodiff attention forward+backward, {BATCH_CALLS} calls per sync");
            row(&what, us, 3.5 * flops, None);
        }
    } else {
        println!("| {label} | burn attention | skipped: scores {:.1} GiB per tensor | | |", s.scores_gib(dtype));
    }
}

fn run_all<B: FlashAttentionBackend>(dev: B::Device, mem: &dyn Fn() -> u64, args: &Args)
where
    Autodiff<B>: FlashAttentionBackend,
{
    let mut shapes = Vec::new();
    let long = Shape { b: 16, h: 8, n: 4096, d: 64 };
    if args.long_first && !args.quick {
        shapes.push(long);
    }
    for &b in if args.quick { &[1usize][..] } else { &args.psa_batches[..] } {
        for h in [2, 4] {
            for d in [32, 64] {
                shapes.push(Shape { b, h, n: 400, d });
            }
        }
    }
    if !args.quick && !args.long_first {
        shapes.push(long);
    }
    println!("| shape | op | median µs | TFLOP/s | memory held after forward |");
    println!("|---|---|---|---|---|");
    for dtype in args.dtypes.iter().map(|d| parse_dtype(d)) {
        for &s in &shapes {
            if args.cmma_sweep.is_empty() {
                bench_shape::<B>(s, dtype, &dev, mem, args.max_scores_gib);
            } else {
                sweep_shape::<B>(s, dtype, &dev, args);
            }
        }
    }
}

fn main() {
    let args = Args::parse();
    match args.device.as_str() {
        #[cfg(feature = "cuda")]
        "cuda" => {
            use cubecl::Runtime;
            let dev = burn::backend::cuda::CudaDevice::new(0);
            let client = cubecl::cuda::CudaRuntime::client(&dev);
            let mem = move || client.memory_usage().map(|m| m.bytes_in_use).unwrap_or(0);
            run_all::<burn::backend::Cuda>(dev, &mem, &args);
        }
        #[cfg(feature = "wgpu")]
        "wgpu" => {
            use cubecl::Runtime;
            let dev = burn::backend::wgpu::WgpuDevice::DefaultDevice;
            let client = cubecl::wgpu::WgpuRuntime::client(&dev);
            let mem = move || client.memory_usage().map(|m| m.bytes_in_use).unwrap_or(0);
            run_all::<burn::backend::Wgpu>(dev, &mem, &args);
        }
        other => {
            eprintln!("bench-attention: device '{other}' is not compiled in (features: cuda, wgpu)");
            std::process::exit(2);
        }
    }
}
