//! A YOLO26 training run as ultralytics 8.4.190 sets it up (`BaseTrainer._setup_train`): arguments, datasets,
//! loader, optimizer choice and groups, schedule, initial weights (`--weights`, bias init) or the resume state,
//! the run directory; then the loop runs on burn-train ([`crate::learner`]).

pub mod checkpoint;
pub mod config;
pub mod results;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use burn::backend::Flex;
use burn::module::AutodiffModule;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use yolo26_data::{DataSource, Dataset, Split, TrainLoader, TrainLoaderConfig};
use yolo26_model::load::{collect_weights, load_weights};
use yolo26_model::nn::conv::{set_conv_math, ConvMath};
use yolo26_model::weights::{read_weights, WeightMap};
use yolo26_model::{DecodeMode, Scale, Yolo26, Yolo26Config, YoloBackend};

pub use checkpoint::TrainState;
pub use config::TrainArgs;
pub use results::EpochRow;

use crate::amp::SharedScaler;
use crate::backend::TrainBackend;
use crate::ema::ModelEma;
use crate::learner::{launch, EpochLoader, LossControl, Run, Ui, ValJob, YoloOptimizer};
use crate::loss::LossGains;
use crate::optim::{Optimizer, OptimizerChoice};
use crate::params::{map_named, set_trainable};
use crate::schedule::{Schedule, ScheduleConfig};
use crate::val::ValConfig;

/// What a run reports besides burn-train's metrics.
#[derive(Clone, Debug)]
pub enum Event {
    /// A line for the log (dataset summary, optimizer, resume point, early stop, …).
    Info(String),
    /// The epoch's row of `results.csv`, after its checkpoints were written.
    EpochEnd(EpochRow),
}

/// Result of a run.
#[derive(Clone, Debug)]
pub struct TrainSummary {
    pub dir: PathBuf,
    pub rows: Vec<EpochRow>,
    pub best_fitness: Option<f64>,
    pub best_epoch: Option<usize>,
    pub last: PathBuf,
    pub best: PathBuf,
}

/// ultralytics `Detect.bias_init`: box output biases 2.0, class output biases `log(5/nc/(640/s)²)` for strides
/// 8, 16, 32, in both heads.
pub fn init_detect_bias<B: Backend>(model: Yolo26<B>) -> Yolo26<B> {
    let nc = model.num_classes() as f64;
    map_named(model, |info, t| {
        let rest = info.name.strip_prefix("model.23.").unwrap_or("");
        let (branch, tail) = rest.split_once('.').unwrap_or(("", ""));
        let Some(level) = tail.strip_suffix(".2.bias").and_then(|l| l.parse::<usize>().ok()) else {
            return t;
        };
        let stride = yolo26_model::config::STRIDES[level] as f64;
        match branch {
            "cv2" | "one2one_cv2" => t.ones_like().mul_scalar(2.0),
            "cv3" | "one2one_cv3" => t.ones_like().mul_scalar((5.0 / nc / (640.0 / stride).powi(2)).ln()),
            _ => t,
        }
    })
}

/// The random initial weights of a run from scratch, drawn on the host (Flex's generator seeded with `seed`, the
/// layers' PyTorch-default initialisers, then [`init_detect_bias`]) and copied to `device`: one seed gives the same
/// model on every backend, so a run on a GPU can be compared step by step with one on the CPU (each backend's own
/// generator would draw other numbers: CubeCL's is a per-thread generator on the device).
pub fn host_init<B: Backend>(scale: Scale, nc: usize, seed: u64, device: &B::Device) -> Result<Yolo26<B>, String> {
    let host_device = Default::default();
    Flex::seed(&host_device, seed);
    let host = init_detect_bias(Yolo26Config::new(scale, nc).init::<Flex>(&host_device));
    // the device model's own random draw is overwritten here (Burn has no record transfer between backends; a
    // yolo26x draw is a few milliseconds on a GPU, once per run)
    load_weights(Yolo26Config::new(scale, nc).init::<B>(device), &collect_weights(&host)).map_err(|e| e.to_string())
}

/// Initial weights from a file: every tensor whose name and shape match is transferred (ultralytics
/// `intersect_dicts`), the rest keep `model`'s values (a different `nc` re-initialises only the class outputs).
fn transfer_weights<B: Backend>(model: Yolo26<B>, file: &WeightMap) -> Result<(Yolo26<B>, usize, usize), String> {
    let mut merged = collect_weights(&model);
    let total = merged.tensors.len();
    let mut moved = 0;
    for (k, t) in merged.tensors.iter_mut() {
        if let Some(f) = file.tensors.get(k).filter(|f| f.shape == t.shape) {
            *t = f.clone();
            moved += 1;
        }
    }
    merged.source = file.source.clone();
    Ok((load_weights(model, &merged).map_err(|e| e.to_string())?, moved, total))
}

fn open_split(source: &DataSource, split: Split) -> Result<Arc<Dataset>, String> {
    source.open(split).map(Arc::new).map_err(|e| format!("{} split: {e}", split.name()))
}

/// Trains YOLO26 as `args` says, on the autodiff backend `AB` (validation on its inner backend). With `resume`,
/// continues the run in that directory from its `weights/last.state.safetensors`, with the arguments saved there
/// (of `args`, only `device` and `workers` are used). `ui` chooses burn-train's renderer; `on_event` gets the log
/// lines and each epoch's results row.
pub fn train<AB>(
    args: TrainArgs,
    device: &AB::Device,
    resume: Option<&Path>,
    ui: Ui,
    on_event: impl FnMut(Event) + Send + 'static,
) -> Result<TrainSummary, String>
where
    AB: AutodiffBackend + TrainBackend,
    AB::InnerBackend: YoloBackend,
{
    train_on::<AB>(args, std::slice::from_ref(device), resume, ui, on_event)
}

/// [`train`] on several devices of one backend, data-parallel (ultralytics DDP, see [`crate::learner::multi`]):
/// `args.batch` is the global batch, `args.batch / devices.len()` images per device (it must divide); the
/// accumulation, weight-decay scaling and schedule are those of the global batch, as ultralytics' (whose
/// `accumulate` and `weight_decay` use the global batch too); validation runs on the first device with the
/// per-device batch × 2, as ultralytics' rank 0. One device is [`train`].
pub fn train_on<AB>(
    mut args: TrainArgs,
    devices: &[AB::Device],
    resume: Option<&Path>,
    ui: Ui,
    on_event: impl FnMut(Event) + Send + 'static,
) -> Result<TrainSummary, String>
where
    AB: AutodiffBackend + TrainBackend,
    AB::InnerBackend: YoloBackend,
{
    let device = devices.first().ok_or("no device to train on")?;
    let mut on_event: Box<dyn FnMut(Event) + Send> = Box::new(on_event);
    let restored = match resume {
        Some(dir) => {
            let path = dir.join("weights").join("last.state.safetensors");
            if !path.is_file() {
                return Err(format!("--resume {}: no {} (nothing to resume)", dir.display(), path.display()));
            }
            Some(path)
        }
        None => None,
    };
    // a resumed run takes its saved arguments; only device, workers and profile come from the command line
    let state0 = restored.as_deref().map(read_state_only).transpose()?;
    if let Some(s) = &state0 {
        let (device_arg, workers, profile) = (args.device.clone(), args.workers, args.profile);
        args = s.args.clone();
        args.device = device_arg;
        args.workers = workers.or(args.workers);
        args.profile = profile;
    }
    let scale = args.validate()?;
    if !args.batch.is_multiple_of(devices.len()) {
        return Err(format!(
            "--batch {} is not a multiple of the {} devices (each device trains batch / devices images of every \
             batch)",
            args.batch,
            devices.len()
        ));
    }
    let per_device = args.batch / devices.len();
    // tensor cores: TF32 for f32 storage (`tf32`), f16 products with f32 accumulation for mixed precision (`amp`)
    set_conv_math(if args.tf32 || args.amp { ConvMath::Fast } else { ConvMath::Exact });
    let source = DataSource::parse(&args.data, args.images.as_deref()).map_err(|e| e.to_string())?;
    let train_set = open_split(&source, Split::Train)?;
    let val_set = open_split(&source, Split::Val)?;
    on_event(Event::Info(train_set.summary.line("train: ")));
    on_event(Event::Info(val_set.summary.line("val: ")));
    if train_set.names != val_set.names {
        return Err("the train and val splits have different class names".into());
    }
    let names = train_set.names.clone();
    let nc = names.len();
    let dir = run_dir(&args, resume);
    let wdir = dir.join("weights");
    std::fs::create_dir_all(&wdir).map_err(|e| format!("{}: {e}", wdir.display()))?;
    let args_yaml = serde_yaml::to_string(&args).map_err(|e| e.to_string())?;
    yolo26_model::weights::write_atomic(&dir.join("args.yaml"), args_yaml.as_bytes()).map_err(|e| e.to_string())?;

    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = args.workers.unwrap_or(cpus.min(8)).max(1);
    let loader = TrainLoader::new(
        train_set.clone(),
        TrainLoaderConfig {
            batch_size: args.batch,
            imgsz: args.imgsz,
            workers,
            seed: args.seed,
            epochs: args.epochs,
            close_mosaic: args.close_mosaic,
            ..TrainLoaderConfig::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let nb = loader.num_batches();
    let iterations = train_set.len().div_ceil(args.batch.max(args.nbs)) * args.epochs;
    let choice = OptimizerChoice::resolve(&args.optimizer, args.lr0, args.momentum, nc, iterations)?;
    let mut warmup_bias_lr = args.warmup_bias_lr;
    if choice.auto {
        on_event(Event::Info(format!(
            "optimizer: 'optimizer=auto' found, ignoring 'lr0={}' and 'momentum={}' and determining best \
             'optimizer', 'lr0' and 'momentum' automatically... ",
            args.lr0, args.momentum
        )));
        warmup_bias_lr = 0.0;
    }
    let schedule = Schedule::new(ScheduleConfig {
        epochs: args.epochs,
        batches_per_epoch: nb,
        batch: args.batch,
        nbs: args.nbs,
        lrf: args.lrf,
        cos_lr: args.cos_lr,
        warmup_epochs: args.warmup_epochs,
        warmup_momentum: args.warmup_momentum,
        warmup_bias_lr,
        momentum: args.momentum,
        weight_decay: args.weight_decay,
    });

    let init = || Yolo26Config::new(scale, nc).init::<AB::InnerBackend>(device);
    let (model, ema, opt, st, pending) = match &restored {
        Some(path) => {
            let r = checkpoint::load_state::<AB::InnerBackend>(path, device, init)?;
            let opt = Optimizer::from_record(&r.state.optimizer, &r.optim_tensors, device)?;
            on_event(Event::Info(format!(
                "Resuming training {} from epoch {} to {} total epochs",
                dir.display(),
                r.state.epoch + 2,
                args.epochs
            )));
            let ema = ModelEma::new(r.ema, r.state.ema_updates);
            (set_trainable(Yolo26::<AB>::from_inner(r.model)), ema, opt, r.state, r.pending_grads)
        }
        None => {
            AB::InnerBackend::seed(device, args.seed);
            let mut model = host_init::<AB::InnerBackend>(scale, nc, args.seed, device)?;
            if let Some(w) = &args.weights {
                let map = read_weights(w).map_err(|e| e.to_string())?;
                let (m, moved, total) = transfer_weights(model, &map)?;
                model = m;
                on_event(Event::Info(format!("Transferred {moved}/{total} items from {}", w.display())));
            }
            let opt = Optimizer::<AB::InnerBackend>::new(choice, schedule.weight_decay);
            let ema = ModelEma::new(model.clone(), 0);
            let st = TrainState {
                epoch: 0,
                ema_updates: 0,
                best_fitness: None,
                best_epoch: None,
                last_opt_step: -1,
                accumulate: schedule.accumulate,
                optimizer: opt.to_record().0,
                args: args.clone(),
                names: names.clone(),
                rows: Vec::new(),
                scaler: None,
                pending_non_finite: false,
            };
            (set_trainable(Yolo26::<AB>::from_inner(model)), ema, opt, st, HashMap::new())
        }
    };
    let resumed_epoch = restored.is_some().then_some(st.epoch + 1);
    if devices.len() > 1 {
        on_event(Event::Info(format!(
            "data-parallel on {} devices ({}): {per_device} images each per batch of {}",
            devices.len(),
            args.device,
            args.batch
        )));
    }
    on_event(Event::Info(format!(
        "optimizer: {}(lr={}, momentum={}) with {} parameter groups, weight_decay={} ; accumulate {} (nbs {}), \
         warmup {} iterations",
        opt.kind.name(),
        choice.lr0,
        choice.momentum,
        opt.groups.len(),
        schedule.weight_decay,
        schedule.accumulate,
        args.nbs,
        schedule.warmup_iters
    )));
    // mixed precision: the loss scaler, restored on resume (shared by the train step and the optimizer)
    let scaler = args.amp.then(|| SharedScaler::new(st.scaler.unwrap_or_default()));
    if let Some(s) = &scaler {
        on_event(Event::Info(format!("amp: f16 activations, f32 parameters, loss scale {}", s.scale())));
    }
    let loss = LossControl::new(
        nc,
        args.epochs,
        LossGains { box_gain: args.box_gain, cls_gain: args.cls_gain, l1_gain: args.dfl_gain },
    )
    .with_scaler(scaler.clone());
    let val = ValJob {
        dataset: val_set,
        cfg: ValConfig {
            imgsz: args.imgsz,
            batch: per_device * 2,
            mode: if args.end2end { DecodeMode::EndToEnd } else { DecodeMode::Nms },
            workers,
            ..ValConfig::default()
        },
    };
    let start = Instant::now() - std::time::Duration::from_secs_f64(st.rows.last().map_or(0.0, |r| r.time));
    let run = Run {
        args,
        dir,
        names,
        schedule,
        optimizer: YoloOptimizer::new(opt).with_scaler(scaler),
        ema,
        state: st,
        pending,
        loss,
        devices: devices.to_vec(),
        loader: EpochLoader::new(loader),
        val,
        start,
        on_event,
    };
    launch::<AB>(run, model, ui, resumed_epoch)
}

/// The [`TrainState`] of a state file without loading its tensors into a model (the scale is not known before).
fn read_state_only(path: &Path) -> Result<TrainState, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    checkpoint::state_of(&bytes, path)
}

/// The run directory: the resumed one, else `project` itself with `exist_ok`, else [`increment_dir`].
pub fn run_dir(args: &TrainArgs, resume: Option<&Path>) -> PathBuf {
    match resume {
        Some(d) => d.to_path_buf(),
        None if args.exist_ok => args.project.clone(),
        None => increment_dir(&args.project),
    }
}

/// `DIR`, or `DIR2`, `DIR3`, … the first that does not exist (ultralytics `increment_path`).
pub fn increment_dir(p: &Path) -> PathBuf {
    if !p.exists() {
        return p.to_path_buf();
    }
    let base = p.as_os_str().to_string_lossy().into_owned();
    (2..).map(|n| PathBuf::from(format!("{base}{n}"))).find(|c| !c.exists()).unwrap_or_else(|| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_dir_numbers_unless_exist_ok_or_resume() {
        let root = std::env::temp_dir().join(format!("yolo26-run-dir-{}", std::process::id()));
        let project = root.join("train");
        std::fs::create_dir_all(project.join("weights")).unwrap();
        std::fs::create_dir_all(root.join("train2")).unwrap();
        let args = TrainArgs { project: project.clone(), ..TrainArgs::default() };
        assert_eq!(run_dir(&args, None), root.join("train3"));
        assert_eq!(run_dir(&TrainArgs { exist_ok: true, ..args.clone() }, None), project);
        assert_eq!(run_dir(&args, Some(&root.join("train2"))), root.join("train2"));
        let fresh = TrainArgs { project: root.join("fresh"), ..args };
        assert_eq!(run_dir(&fresh, None), root.join("fresh"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// An `args.yaml` written before `exist_ok` and `tf32` existed still loads (both off); a new one keeps them.
    #[test]
    fn args_yaml_without_newer_keys_loads() {
        let args = TrainArgs { exist_ok: true, tf32: true, ..TrainArgs::default() };
        let yaml = serde_yaml::to_string(&args).unwrap();
        assert_eq!(serde_yaml::from_str::<TrainArgs>(&yaml).unwrap(), args);
        let old: String = yaml
            .lines()
            .filter(|l| !l.starts_with("exist_ok:") && !l.starts_with("tf32:"))
            .map(|l| l.to_string() + "\n")
            .collect();
        assert!(!old.contains("tf32") && !old.contains("exist_ok"));
        let back: TrainArgs = serde_yaml::from_str(&old).unwrap();
        assert_eq!(back, TrainArgs::default());
    }

    /// The host draw is the seed's, whatever the target backend: two seeds differ, one seed repeats, the detect
    /// biases are ultralytics' `bias_init`, and on wgpu (CubeCL's own generator would draw other numbers) the
    /// weights are Flex's, bit for bit.
    #[test]
    fn host_init_is_the_seeds_on_every_backend() {
        let flat = |m: &Yolo26<Flex>| collect_weights(m).tensors;
        let dev = Default::default();
        let a = host_init::<Flex>(Scale::N, 3, 7, &dev).unwrap();
        let b = host_init::<Flex>(Scale::N, 3, 7, &dev).unwrap();
        let c = host_init::<Flex>(Scale::N, 3, 8, &dev).unwrap();
        assert_eq!(flat(&a), flat(&b));
        assert_ne!(flat(&a), flat(&c));
        let bias = collect_weights(&a).tensors["model.23.cv3.1.2.bias"].data.clone();
        let want = (5.0f64 / 3.0 / (640.0f64 / 16.0).powi(2)).ln() as f32;
        assert!(bias.iter().all(|&v| (v - want).abs() < 1e-6), "{bias:?} vs {want}");
        #[cfg(feature = "wgpu")]
        {
            let w = host_init::<burn::backend::Wgpu>(Scale::N, 3, 7, &Default::default()).unwrap();
            let on_wgpu = collect_weights(&w);
            for (k, t) in flat(&a) {
                assert_eq!(on_wgpu.tensors[&k].data, t.data, "{k}");
            }
        }
    }
}
