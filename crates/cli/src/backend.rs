//! `--device cpu | wgpu[:N] | cuda[:N]`: picks one of the compiled-in Burn backends at run time and runs a
//! backend-generic job on it.

use anyhow::{anyhow, bail, Context};

/// A job that runs on any backend.
pub trait Job {
    /// Runs the job on backend `B`.
    fn run<B: yolo26_model::YoloBackend>(self, device: B::Device) -> anyhow::Result<()>;
}

/// Runs `job` on the backend named by `device`.
pub fn dispatch<J: Job>(device: &str, job: J) -> anyhow::Result<()> {
    let (kind, index) = parse_device(device)?;
    match kind {
        "cpu" => {
            if index.is_some() {
                bail!("--device cpu takes no index");
            }
            job.run::<burn::backend::Flex>(burn::backend::flex::FlexDevice)
        }
        #[cfg(feature = "wgpu")]
        "wgpu" => {
            let dev = match index {
                None => burn::backend::wgpu::WgpuDevice::DefaultDevice,
                Some(i) => burn::backend::wgpu::WgpuDevice::DiscreteGpu(i),
            };
            job.run::<burn::backend::Wgpu>(dev)
        }
        #[cfg(feature = "cuda")]
        "cuda" => {
            enable_ptx_cache();
            job.run::<burn::backend::Cuda>(burn::backend::cuda::CudaDevice::new(index.unwrap_or(0)))
        }
        #[allow(unreachable_patterns)]
        "wgpu" | "cuda" => Err(not_built(kind)),
        other => Err(unknown(other)),
    }
}

/// A training job: runs on the autodiff version of a backend (validation on the backend itself), on one device or,
/// data-parallel, on several of the same backend (the first is the main one).
pub trait TrainJob {
    /// Runs the job on `AB`'s `devices` (at least one).
    fn run<AB>(self, devices: Vec<AB::Device>) -> anyhow::Result<()>
    where
        AB: burn::tensor::backend::AutodiffBackend + yolo26_train::TrainBackend,
        AB::InnerBackend: yolo26_model::YoloBackend;
}

/// Runs a training `job` on `Autodiff<backend named by devices>`: one device (`cpu`, `wgpu[:N]`, `cuda[:N]`), a
/// comma-separated list of devices of one backend (`cuda:0,cuda:1`; `cpu,cpu` runs two workers on the one CPU
/// device, which tests the data-parallel path without GPUs), or `all` (every CUDA device).
pub fn dispatch_train<J: TrainJob>(devices: &str, job: J) -> anyhow::Result<()> {
    use burn::backend::Autodiff;
    let (kind, indices) = parse_devices(devices)?;
    match kind {
        "cpu" => {
            if indices.iter().any(Option::is_some) {
                bail!("--device cpu takes no index");
            }
            job.run::<Autodiff<burn::backend::Flex>>(vec![burn::backend::flex::FlexDevice; indices.len()])
        }
        #[cfg(feature = "wgpu")]
        "wgpu" => {
            use burn::backend::wgpu::WgpuDevice;
            let devs = indices.iter().map(|i| i.map_or(WgpuDevice::DefaultDevice, WgpuDevice::DiscreteGpu)).collect();
            job.run::<Autodiff<burn::backend::Wgpu>>(devs)
        }
        #[cfg(feature = "cuda")]
        "cuda" => {
            enable_ptx_cache();
            use burn::backend::cuda::CudaDevice;
            let indices = if devices == "all" {
                use burn::tensor::backend::Backend;
                let n = <burn::backend::Cuda as Backend>::device_count(0);
                if n == 0 {
                    bail!("--devices all: no CUDA device found");
                }
                (0..n).map(Some).collect()
            } else {
                indices
            };
            job.run::<Autodiff<burn::backend::Cuda>>(indices.iter().map(|i| CudaDevice::new(i.unwrap_or(0))).collect())
        }
        #[allow(unreachable_patterns)]
        "wgpu" | "cuda" => Err(not_built(kind)),
        other => Err(unknown(other)),
    }
}

/// `kind[:N](,kind[:N])*` → the backend kind and each device's index; `all` → `cuda` (indices filled in by the
/// caller). Errors name the offending entry: mixed backends, a GPU device given twice, an empty entry.
fn parse_devices(spec: &str) -> anyhow::Result<(&str, Vec<Option<usize>>)> {
    if spec == "all" {
        return Ok(("cuda", Vec::new()));
    }
    let mut kind = None;
    let mut indices = Vec::new();
    for entry in spec.split(',') {
        let entry = entry.trim();
        if entry.is_empty() {
            bail!("--devices {spec}: empty entry");
        }
        let (k, i) = parse_device(entry)?;
        match kind {
            None => kind = Some(k),
            Some(first) if first != k => bail!("--devices {spec}: every device must be of one backend ({first}, {k})"),
            Some(_) => {}
        }
        if k != "cpu" && indices.contains(&i) {
            bail!("--devices {spec}: {entry} is given twice");
        }
        indices.push(i);
    }
    Ok((kind.unwrap_or("cpu"), indices))
}

fn not_built(kind: &str) -> anyhow::Error {
    anyhow!("--device {kind}: this yolo26 was built without the '{kind}' feature (rebuild with --features {kind})")
}

fn unknown(kind: &str) -> anyhow::Error {
    anyhow!("--device {kind}: expected cpu, wgpu[:N] or cuda[:N]")
}

fn parse_device(device: &str) -> anyhow::Result<(&str, Option<usize>)> {
    Ok(match device.split_once(':') {
        Some((k, i)) => {
            (k, Some(i.parse::<usize>().ok().with_context(|| format!("--device {device}: bad device index '{i}'"))?))
        }
        None => (device, None),
    })
}

/// CubeCL compiles every CUDA kernel with NVRTC on its first launch in a process: several minutes for a whole
/// model (453 s for `predict` on an H200, docs/BENCHMARKS.md). Unless a `cubecl.toml` (or `burn.toml`) in the
/// working directory or above says otherwise, keep the compiled PTX in CubeCL's global cache directory so later
/// runs load it (2–3 s per run measured with the same cache configured by file). Must run before the first CUDA
/// call: CubeCL's configuration is fixed on first read.
#[cfg(feature = "cuda")]
fn enable_ptx_cache() {
    use cubecl::config::{cache::CacheConfig, CubeClRuntimeConfig, RuntimeConfig};
    let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
    if config.compilation.cache.is_none() {
        config.compilation.cache = Some(CacheConfig::Global);
        CubeClRuntimeConfig::set(config);
    }
}
