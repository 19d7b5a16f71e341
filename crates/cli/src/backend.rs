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

/// A training job: runs on the autodiff version of a backend (validation on the backend itself).
pub trait TrainJob {
    /// Runs the job on `AB`.
    fn run<AB>(self, device: AB::Device) -> anyhow::Result<()>
    where
        AB: burn::tensor::backend::AutodiffBackend + yolo26_train::TrainBackend,
        AB::InnerBackend: yolo26_model::YoloBackend;
}

/// Runs a training `job` on `Autodiff<backend named by device>`.
pub fn dispatch_train<J: TrainJob>(device: &str, job: J) -> anyhow::Result<()> {
    use burn::backend::Autodiff;
    let (kind, index) = parse_device(device)?;
    match kind {
        "cpu" => {
            if index.is_some() {
                bail!("--device cpu takes no index");
            }
            job.run::<Autodiff<burn::backend::Flex>>(burn::backend::flex::FlexDevice)
        }
        #[cfg(feature = "wgpu")]
        "wgpu" => {
            let dev = match index {
                None => burn::backend::wgpu::WgpuDevice::DefaultDevice,
                Some(i) => burn::backend::wgpu::WgpuDevice::DiscreteGpu(i),
            };
            job.run::<Autodiff<burn::backend::Wgpu>>(dev)
        }
        #[cfg(feature = "cuda")]
        "cuda" => {
            enable_ptx_cache();
            job.run::<Autodiff<burn::backend::Cuda>>(burn::backend::cuda::CudaDevice::new(index.unwrap_or(0)))
        }
        #[allow(unreachable_patterns)]
        "wgpu" | "cuda" => Err(not_built(kind)),
        other => Err(unknown(other)),
    }
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
