//! `bench-conv`: what each convolution kernel Burn 0.21 ships takes on every convolution of YOLO26, next to cuDNN
//! (issue 18: measure what exists before writing kernels).
//!
//! The shapes (and, when present, cuDNN's times) come from `crates/bench/scripts/torch_convs.py`, which hooks the
//! `nn.Conv2d`s of ultralytics' fused yolo26{n,s}. Each distinct conv runs alone on random data, on `CubeBackend<Cuda>`
//! (no fusion: one kernel per call), in each variant:
//!
//! | variant | what |
//! |---|---|
//! | `burn` | `burn::tensor::module::conv2d` on NCHW tensors: what the model runs today (default strategy `Direct`, which permutes NCHW→NHWC and back around the kernel); for `--pass dgrad|wgrad` `conv_data_backward` / `conv_weight_backward` with `Direct`, what Burn's autodiff runs |
//! | `direct` | `burn_cubecl::kernel::conv::conv_forward_nhwc(.., ConvStrategy::Direct)`: the same kernel on NHWC tensors, no permutes (forward only) |
//! | `burn_gemm` | Burn's public NCHW entry points with `ConvStrategy::ImplicitGemm` (cmma; permutes around the kernel; Burn falls back to the direct kernel for groups != 1 and, in dgrad, stride != 1) |
//! | `ours`, `ours_fast` | this crate's `kernels_cubecl::conv` op on NHWC / OHWI tensors (`Conv2dBackend` on `CubeBackend`): the exact implicit GEMM / depthwise kernels, and `ConvMath::Fast` (cubek's tensor-core GEMM for forward and input gradient); the weight gradient includes the sum of its split-K partials |
//! | `sync_cmma`, `sync_mma`, `async_cmma`, `async_mma`, `tma_cmma`, `tma_mma` | cubek-convolution's implicit GEMM (`launch_ref`, `Strategy::Inferred`), NHWC, groups = 1 only: the kernels Burn's autotune chooses among |
//!
//! A sample is `--runs` back-to-back calls and one device sync (per call = elapsed / runs); the median of 5 samples is
//! printed, after 3 warm-up calls (which compile the kernel). A variant that cannot run a shape (an error or a panic
//! of the launcher) prints `-`. Per batch size the table ends with the network's sum (time × count) per variant and
//! of the best variant per conv.
//!
//!     python3 crates/bench/scripts/torch_convs.py --scales n,s --batches 1,64 --out convs.json
//!     bench-conv --shapes convs.json --scales n --batches 1,64 --dtypes f32,f16 [--pass fwd|dgrad|wgrad]
//!         [--variants burn,sync_mma,…] [--json out.jsonl]
//!
//! `--pass dgrad` times the input gradient (`dy`, `w` → `dx`), `--pass wgrad` the weight gradient (`x`, `dy` → `dw`),
//! with the same variants (cubek's backward-data kernels have no TMA path).

use std::collections::BTreeMap;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::Instant;

use burn::prelude::*;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{DType, Distribution};
use burn_cubecl::kernel::conv::{
    conv_data_backward, conv_forward, conv_forward_nhwc, conv_weight_backward, ConvStrategy,
};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use clap::Parser;
use cubecl::cuda::CudaRuntime;
use cubek::convolution::{
    launch_ref, AcceleratedTileKind, ConvAlgorithm, ConvolutionArgs, ConvolutionInputs, Strategy,
};
use cubek::matmul::definition::{MatmulElems, MatmulGlobalElems};
use cubek::std::InputBinding;
use kernels_cubecl::conv::{Conv2dBackend, Conv2dSpec, ConvMath};
use serde_json::Value;

type R = CudaRuntime;
type Cube = burn_cubecl::CubeBackend<R, f32, i32, u8>;

#[derive(Parser)]
#[command(about = "Per-conv timings of Burn's convolution kernels on YOLO26's shapes (CUDA)")]
struct Args {
    /// torch_convs.py output (shapes, optional cuDNN timings)
    #[arg(long)]
    shapes: PathBuf,
    /// Model scales to run (keys of the shapes file), comma-separated
    #[arg(long, default_value = "n")]
    scales: String,
    /// Batch sizes, comma-separated
    #[arg(long, default_value = "1,64")]
    batches: String,
    /// f32 and/or f16, comma-separated
    #[arg(long, default_value = "f32,f16")]
    dtypes: String,
    /// Variants to run, comma-separated (default: all)
    #[arg(long)]
    variants: Option<String>,
    /// Which pass: fwd (forward), dgrad (input gradient) or wgrad (weight gradient)
    #[arg(long, default_value = "fwd")]
    pass: String,
    /// Calls per timed sample
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Also write one JSON line per measurement here
    #[arg(long)]
    json: Option<PathBuf>,
}

/// One distinct convolution of the network (a row of the shapes file).
#[derive(Clone, Debug)]
struct Conv {
    id: usize,
    count: usize,
    c_in: usize,
    h: usize,
    w: usize,
    c_out: usize,
    k: [usize; 2],
    stride: usize,
    pad: usize,
    groups: usize,
}

impl Conv {
    fn from_json(v: &Value) -> Result<Self, String> {
        let get = |k: &str| v[k].as_u64().map(|x| x as usize).ok_or_else(|| format!("conv row without '{k}': {v}"));
        Ok(Conv {
            id: get("id")?,
            count: get("count")?,
            c_in: get("c_in")?,
            h: get("h")?,
            w: get("w")?,
            c_out: get("c_out")?,
            k: [get("kh")?, get("kw")?],
            stride: get("stride")?,
            pad: get("pad")?,
            groups: get("groups")?,
        })
    }

    fn out_hw(&self) -> [usize; 2] {
        let o = |x: usize, k: usize| (x + 2 * self.pad - k) / self.stride + 1;
        [o(self.h, self.k[0]), o(self.w, self.k[1])]
    }

    fn options(&self) -> ConvOptions<2> {
        ConvOptions::new([self.stride; 2], [self.pad; 2], [1, 1], self.groups)
    }

    fn label(&self) -> String {
        format!(
            "{}→{} {}x{} s{} g{} @{}x{}",
            self.c_in, self.c_out, self.k[0], self.k[1], self.stride, self.groups, self.h, self.w
        )
    }

    fn gflop(&self, batch: usize) -> f64 {
        let [oh, ow] = self.out_hw();
        2.0 * (batch * oh * ow * self.c_out * (self.c_in / self.groups) * self.k[0] * self.k[1]) as f64 * 1e-9
    }
}

const GEMMS: [(&str, ConvAlgorithm, AcceleratedTileKind); 6] = [
    ("sync_cmma", ConvAlgorithm::SimpleSyncCyclic, AcceleratedTileKind::Cmma),
    ("sync_mma", ConvAlgorithm::SimpleSyncStrided, AcceleratedTileKind::Mma),
    ("async_cmma", ConvAlgorithm::SimpleAsyncCyclic, AcceleratedTileKind::Cmma),
    ("async_mma", ConvAlgorithm::SimpleAsyncStrided, AcceleratedTileKind::Mma),
    ("tma_cmma", ConvAlgorithm::SimpleAsyncTma, AcceleratedTileKind::Cmma),
    ("tma_mma", ConvAlgorithm::SimpleAsyncTma, AcceleratedTileKind::Mma),
];

fn variant_names() -> Vec<&'static str> {
    let mut v = vec!["burn", "direct", "burn_gemm", "ours", "ours_fast"];
    v.extend(GEMMS.iter().map(|g| g.0));
    v
}

/// The inputs of one conv in both layouts, in `dtype`.
struct Inputs {
    nchw: (Tensor<Cube, 4>, Tensor<Cube, 4>),
    nhwc: (CubeTensor<R>, CubeTensor<R>),
    bias: Tensor<Cube, 1>,
    /// The output gradient, NCHW and NHWC (backward passes).
    dy: (Tensor<Cube, 4>, CubeTensor<R>),
}

/// A dense NHWC copy of an NCHW tensor.
fn nhwc(t: Tensor<Cube, 4>) -> CubeTensor<R> {
    into_contiguous(t.permute([0, 2, 3, 1]).into_primitive().tensor())
}

fn inputs(c: &Conv, batch: usize, dtype: DType, dev: &burn::backend::cuda::CudaDevice) -> Inputs {
    let d = Distribution::Normal(0.0, 1.0);
    let x = Tensor::<Cube, 4>::random([batch, c.c_in, c.h, c.w], d, dev).cast(dtype);
    let w = Tensor::<Cube, 4>::random([c.c_out, c.c_in / c.groups, c.k[0], c.k[1]], d, dev).cast(dtype);
    let bias = Tensor::<Cube, 1>::random([c.c_out], d, dev).cast(dtype);
    let x_nhwc = nhwc(x.clone());
    let w_nhwc = nhwc(w.clone());
    let [oh, ow] = c.out_hw();
    let dy = Tensor::<Cube, 4>::random([batch, c.c_out, oh, ow], d, dev).cast(dtype);
    let dy_nhwc = nhwc(dy.clone());
    Inputs { nchw: (x, w), nhwc: (x_nhwc, w_nhwc), bias, dy: (dy, dy_nhwc) }
}

/// Forward, input-gradient or weight-gradient pass.
#[derive(Clone, Copy, PartialEq)]
enum Pass {
    Fwd,
    Dgrad,
    Wgrad,
}

/// cubek's implicit-GEMM kernels on NHWC tensors (what burn-cubecl's private `launch_convolution_forward`,
/// `launch_backwards_data` and `launch_backwards_weight` do).
fn gemm(strategy: &Strategy, pass: Pass, c: &Conv, inp: &Inputs) -> Result<CubeTensor<R>, String> {
    let (x, w) = &inp.nhwc;
    let dy = &inp.dy.1;
    let [oh, ow] = c.out_hw();
    let batch = x.meta.shape()[0];
    let shape: [usize; 4] = match pass {
        Pass::Fwd => [batch, oh, ow, c.c_out],
        Pass::Dgrad => [batch, c.h, c.w, c.c_in],
        Pass::Wgrad => [c.c_out, c.k[0], c.k[1], c.c_in],
    };
    let out = empty_device_dtype(x.client.clone(), x.device.clone(), shape.into(), x.dtype);
    let bind = |t: &CubeTensor<R>| InputBinding::new(t.clone().binding(), t.dtype.into());
    let (lhs, rhs, inputs) = match pass {
        Pass::Fwd => {
            let b = inp.bias.clone().into_primitive().tensor();
            let bias = Some(InputBinding::Normal(b.clone().binding(), b.dtype.into()));
            (x, w, ConvolutionInputs::Forward { input: bind(x), weight: bind(w), bias, out: out.clone().binding() })
        }
        Pass::Dgrad => (
            dy,
            w,
            ConvolutionInputs::BackwardData { out_grad: bind(dy), weights: bind(w), in_grad: out.clone().binding() },
        ),
        Pass::Wgrad => (
            x,
            dy,
            ConvolutionInputs::BackwardWeight {
                input: bind(x),
                out_grad: bind(dy),
                weight_grad: out.clone().binding(),
            },
        ),
    };
    let dtypes = MatmulElems::from_globals(&MatmulGlobalElems {
        lhs: lhs.dtype.into(),
        rhs: rhs.dtype.into(),
        out: x.dtype.into(),
    });
    launch_ref::<R, 2>(
        strategy,
        &x.client,
        inputs,
        ConvolutionArgs { stride: [c.stride; 2], padding: [c.pad; 2], dilation: [1, 1] },
        dtypes,
    )
    .map_err(|e| format!("{e:?}"))?;
    Ok(out)
}

/// Burn's public NCHW entry points (they permute to NHWC and back around the kernel).
fn burn_pass(pass: Pass, strategy: ConvStrategy, c: &Conv, inp: &Inputs) -> Result<(), String> {
    let (x, w) = inp.nchw.clone();
    let dy = inp.dy.0.clone().into_primitive().tensor();
    let (x, w) = (x.into_primitive().tensor(), w.into_primitive().tensor());
    let r = match pass {
        Pass::Fwd => conv_forward(x, w, Some(inp.bias.clone().into_primitive().tensor()), c.options(), strategy),
        Pass::Dgrad => {
            let shape = [x.meta.shape()[0], c.c_in, c.h, c.w];
            conv_data_backward(dy, w, shape.into(), c.options(), strategy)
        }
        Pass::Wgrad => {
            let shape = [c.c_out, c.c_in / c.groups, c.k[0], c.k[1]];
            conv_weight_backward(x, dy, shape.into(), c.options(), strategy)
        }
    };
    r.map(|_| ()).map_err(|e| format!("{e:?}"))
}

/// Runs one call of `variant`; `Err` when the variant does not apply or its launcher fails.
fn call(variant: &str, pass: Pass, c: &Conv, inp: &Inputs) -> Result<(), String> {
    match variant {
        "burn" if pass == Pass::Fwd => {
            let (x, w) = inp.nchw.clone();
            let _ = burn::tensor::module::conv2d(x, w, Some(inp.bias.clone()), c.options());
            Ok(())
        }
        "burn" => burn_pass(pass, ConvStrategy::Direct, c, inp),
        "burn_gemm" => burn_pass(pass, ConvStrategy::ImplicitGemm, c, inp),
        "direct" if pass == Pass::Fwd => {
            let (x, w) = inp.nhwc.clone();
            let b = inp.bias.clone().into_primitive().tensor();
            conv_forward_nhwc(x, w, Some(b), c.options(), ConvStrategy::Direct)
                .map(|_| ())
                .map_err(|e| format!("{e:?}"))
        }
        "direct" => Err("forward only".into()),
        "ours" | "ours_fast" => {
            let math = if variant == "ours" { ConvMath::Exact } else { ConvMath::Fast };
            let spec = Conv2dSpec::new(c.stride, c.pad, c.groups).with_math(math);
            let (x, w) = inp.nhwc.clone();
            let dy = inp.dy.1.clone();
            let _ = match pass {
                Pass::Fwd => Cube::conv2d_nhwc(x, w, Some(inp.bias.clone().into_primitive().tensor()), spec),
                Pass::Dgrad => Cube::conv2d_nhwc_backward_data(x, w, dy, spec),
                Pass::Wgrad => Cube::conv2d_nhwc_backward_weight(x, w, dy, spec),
            };
            Ok(())
        }
        name => {
            let &(_, algorithm, tile_kind) =
                GEMMS.iter().find(|g| g.0 == name).ok_or_else(|| format!("unknown variant {name}"))?;
            if c.groups != 1 {
                return Err("groups != 1".into());
            }
            gemm(&Strategy::Inferred { algorithm, tile_kind }, pass, c, inp).map(|_| ())
        }
    }
}

/// Median per-call µs of `variant`, or why it did not run.
fn time(
    variant: &str,
    pass: Pass,
    c: &Conv,
    inp: &Inputs,
    runs: usize,
    dev: &burn::backend::cuda::CudaDevice,
) -> Result<f64, String> {
    let once = || -> Result<(), String> {
        match catch_unwind(AssertUnwindSafe(|| call(variant, pass, c, inp))) {
            Ok(r) => r,
            Err(p) => Err(p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into())),
        }
    };
    for _ in 0..3 {
        once()?;
    }
    Cube::sync(dev).map_err(|e| format!("sync: {e:?}"))?;
    let mut samples = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..runs {
            once()?;
        }
        Cube::sync(dev).map_err(|e| format!("sync: {e:?}"))?;
        samples.push(t.elapsed().as_secs_f64() * 1e6 / runs as f64);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[2])
}

fn list(s: &str) -> Vec<String> {
    s.split(',').filter(|x| !x.is_empty()).map(str::to_string).collect()
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("bench-conv: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.shapes).map_err(|e| format!("{}: {e}", args.shapes.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", args.shapes.display()))?;
    // cuDNN's times from the same file: (scale, id, batch, config) → µs.
    let mut cudnn: BTreeMap<(String, usize, usize, String), f64> = BTreeMap::new();
    for t in doc["timings"].as_array().into_iter().flatten() {
        if let (Some(s), Some(id), Some(b), Some(cfg), Some(us)) =
            (t["scale"].as_str(), t["id"].as_u64(), t["batch"].as_u64(), t["config"].as_str(), t["us"].as_f64())
        {
            cudnn.insert((s.into(), id as usize, b as usize, cfg.into()), us);
        }
    }
    let variants: Vec<String> = match &args.variants {
        Some(v) => list(v),
        None => variant_names().into_iter().map(str::to_string).collect(),
    };
    for v in &variants {
        if !variant_names().contains(&v.as_str()) {
            return Err(format!("unknown variant '{v}' (known: {})", variant_names().join(", ")));
        }
    }
    let mut json = match &args.json {
        Some(p) => Some(std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => None,
    };
    let pass = match args.pass.as_str() {
        "fwd" => Pass::Fwd,
        "dgrad" => Pass::Dgrad,
        "wgrad" => Pass::Wgrad,
        other => return Err(format!("--pass {other}: expected fwd, dgrad or wgrad")),
    };
    let dev = burn::backend::cuda::CudaDevice::new(0);
    for scale in list(&args.scales) {
        let rows =
            doc["scales"][&scale].as_array().ok_or_else(|| format!("{}: no scale '{scale}'", args.shapes.display()))?;
        let convs = rows.iter().map(Conv::from_json).collect::<Result<Vec<_>, _>>()?;
        for batch in list(&args.batches) {
            let batch: usize = batch.parse().map_err(|_| format!("bad batch '{batch}'"))?;
            for dt in list(&args.dtypes) {
                let (dtype, ref_cfgs): (DType, &[&str]) = match dt.as_str() {
                    "f32" => (DType::F32, &["fp32", "tf32"]),
                    "f16" => (DType::F16, &["fp16", "fp16_cl"]),
                    other => return Err(format!("bad dtype '{other}' (f32, f16)")),
                };
                // the shapes file holds cuDNN's forward times only
                let ref_cfgs: &[&str] = if pass == Pass::Fwd { ref_cfgs } else { &[] };
                println!(
                    "\n== yolo26{scale} {} batch {batch} {dt}: µs per call (cuDNN forward: {})",
                    args.pass,
                    ref_cfgs.join(", ")
                );
                print!("{:>3} {:>3} {:<34} {:>8}", "id", "n", "conv", "GFLOP");
                for v in &variants {
                    print!(" {v:>10}");
                }
                for r in ref_cfgs {
                    print!(" {r:>10}");
                }
                println!();
                let mut sums = vec![0.0f64; variants.len()];
                let mut best_sum = 0.0;
                let mut ref_sums = vec![0.0f64; ref_cfgs.len()];
                for c in &convs {
                    let inp = inputs(c, batch, dtype, &dev);
                    print!("{:>3} {:>3} {:<34} {:>8.3}", c.id, c.count, c.label(), c.gflop(batch));
                    let mut best = f64::INFINITY;
                    for (i, v) in variants.iter().enumerate() {
                        let r = time(v, pass, c, &inp, args.runs, &dev);
                        match &r {
                            Ok(us) => {
                                print!(" {us:>10.1}");
                                sums[i] += us * c.count as f64;
                                best = best.min(*us);
                            }
                            Err(_) => {
                                print!(" {:>10}", "-");
                                sums[i] = f64::NAN;
                            }
                        }
                        if let Some(f) = json.as_mut() {
                            let line = serde_json::json!({"scale": scale, "id": c.id, "batch": batch, "dtype": dt,
                                "variant": v, "pass": args.pass, "us": r.as_ref().ok(), "error": r.as_ref().err()});
                            writeln!(f, "{line}").map_err(|e| format!("--json: {e}"))?;
                        }
                    }
                    best_sum += best * c.count as f64;
                    for (i, r) in ref_cfgs.iter().enumerate() {
                        match cudnn.get(&(scale.clone(), c.id, batch, r.to_string())) {
                            Some(us) => {
                                print!(" {us:>10.1}");
                                ref_sums[i] += us * c.count as f64;
                            }
                            None => {
                                print!(" {:>10}", "-");
                                ref_sums[i] = f64::NAN;
                            }
                        }
                    }
                    println!();
                    std::io::stdout().flush().ok();
                }
                print!("{:>3} {:>3} {:<34} {:>8}", "", "", "network sum (µs, time × n)", "");
                for s in &sums {
                    print!(" {s:>10.0}");
                }
                for s in &ref_sums {
                    print!(" {s:>10.0}");
                }
                println!("\n    best Burn variant per conv, summed: {best_sum:.0} µs");
            }
        }
    }
    Ok(())
}
