//! The training loop: ultralytics 8.4.190 `BaseTrainer._do_train` for YOLO26 detection.
//!
//! Per epoch: the ProgLoss weights of the epoch, every group's lr set to `initial_lr·lf(epoch)` (the
//! `LambdaLR` step), then per batch (global iteration `ni`): the warmup (lr, momentum, accumulation ramps), the
//! training forward and `E2ELoss`, backward, gradients accumulated until `ni − last_opt_step ≥ accumulate`,
//! then gradient-norm clipping at 10, the optimizer step and the EMA update. After the epoch: validation of the
//! EMA (mAP50-95 is the fitness), `results.csv`, `weights/last.*` and, on a new best fitness,
//! `weights/best.safetensors`; early stop after `patience` epochs without improvement. A non-finite loss stops
//! the run with an error naming the epoch and batch; the checkpoints of the last completed epoch stay.

pub mod checkpoint;
pub mod config;
pub mod results;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use burn::module::AutodiffModule;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use yolo26_data::{DataSource, Dataset, Split, TrainLoader, TrainLoaderConfig};
use yolo26_model::load::{collect_weights, load_weights};
use yolo26_model::weights::{read_weights, WeightMap};
use yolo26_model::{DecodeMode, Yolo26, Yolo26Config, YoloBackend};

pub use checkpoint::TrainState;
pub use config::TrainArgs;
pub use results::EpochRow;

use crate::backend::TrainBackend;
use crate::ema::ModelEma;
use crate::loss::{E2ELoss, LossGains};
use crate::optim::{accumulate_grads, GroupKind, Optimizer, OptimizerChoice, OptimizerKind};
use crate::params::{map_named, set_trainable};
use crate::schedule::{Schedule, ScheduleConfig};
use crate::step::{batch_images, batch_targets, train_forward};
use crate::val::{validate, ValConfig};

/// What the loop reports while it runs.
#[derive(Clone, Debug)]
pub enum Event {
    /// A line for the log (dataset summary, optimizer, resume point, …).
    Info(String),
    /// An epoch starts: `(epoch, epochs, batches)`, epoch 0-based.
    EpochStart { epoch: usize, epochs: usize, batches: usize },
    /// A batch is done: running mean loss items `(box, cls, l1)` of the epoch, objects in the batch.
    Batch { epoch: usize, batch: usize, mean_loss: [f64; 3], instances: usize, images: usize },
    /// Validation starts / ends.
    Validating { epoch: usize },
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

/// Sets every group's lr to `initial_lr·lf(epoch)` (the scheduler step at the start of an epoch).
fn scheduler_step<B: Backend>(opt: &mut Optimizer<B>, schedule: &Schedule, epoch: usize) {
    for g in &mut opt.groups {
        g.lr = g.initial_lr * schedule.lf(epoch);
    }
}

/// The warmup of iteration `ni`: accumulation, each group's lr and (except Adam's) momentum.
fn warmup<B: Backend>(opt: &mut Optimizer<B>, schedule: &Schedule, ni: usize, epoch: usize) -> Option<usize> {
    if !schedule.in_warmup(ni) {
        return None;
    }
    let has_momentum = opt.kind != OptimizerKind::AdamW;
    for g in &mut opt.groups {
        g.lr = schedule.warmup_lr(ni, epoch, g.initial_lr, g.kind == GroupKind::Bias);
        if has_momentum {
            g.momentum = schedule.warmup_momentum(ni);
        }
    }
    Some(schedule.warmup_accumulate(ni))
}

/// Trains YOLO26 as `args` says, on the autodiff backend `AB` (validation on its inner backend). With `resume`,
/// continues the run in that directory from its `weights/last.state.safetensors`, with the arguments saved there
/// (of `args`, only `device` and `workers` are used).
pub fn train<AB>(
    mut args: TrainArgs,
    device: &AB::Device,
    resume: Option<&Path>,
    mut on_event: impl FnMut(Event),
) -> Result<TrainSummary, String>
where
    AB: AutodiffBackend + TrainBackend,
    AB::InnerBackend: YoloBackend,
{
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
    // a resumed run takes its saved arguments; only device and workers come from the command line
    let state0 = restored.as_deref().map(read_state_only).transpose()?;
    if let Some(s) = &state0 {
        let (device_arg, workers) = (args.device.clone(), args.workers);
        args = s.args.clone();
        args.device = device_arg;
        args.workers = workers.or(args.workers);
    }
    let scale = args.validate()?;
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
    let dir = match resume {
        Some(d) => d.to_path_buf(),
        None => increment_dir(&args.project),
    };
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
    let (model, mut ema, mut opt, mut st, mut pending) = match &restored {
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
            let mut model = init_detect_bias(init());
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
            };
            (set_trainable(Yolo26::<AB>::from_inner(model)), ema, opt, st, HashMap::new())
        }
    };
    let mut model: Yolo26<AB> = model;
    let start_epoch = if restored.is_some() { st.epoch + 1 } else { 0 };
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
    let mut loss = E2ELoss::new(
        nc,
        args.epochs,
        LossGains { box_gain: args.box_gain, cls_gain: args.cls_gain, l1_gain: args.dfl_gain },
    );
    let t0 = Instant::now() - std::time::Duration::from_secs_f64(st.rows.last().map_or(0.0, |r| r.time));
    let last = wdir.join("last.safetensors");
    let best = wdir.join("best.safetensors");
    let mut stale = 0usize;
    let mut plot_idx = vec![0, 1, 2];
    if args.close_mosaic > 0 && args.close_mosaic <= args.epochs {
        let base = (args.epochs - args.close_mosaic) * nb;
        plot_idx.extend([base, base + 1, base + 2]);
    }
    let mut best_report = None;
    for epoch in start_epoch..args.epochs {
        loss.set_epoch(epoch);
        scheduler_step(&mut opt, &schedule, epoch);
        on_event(Event::EpochStart { epoch, epochs: args.epochs, batches: nb });
        let mut tloss = [0f64; 3];
        for (i, batch) in loader.epoch(epoch).map_err(|e| e.to_string())?.enumerate() {
            let batch = batch.map_err(|e| format!("epoch {}, batch {i}: {e}", epoch + 1))?;
            let ni = i + nb * epoch;
            if args.plots && plot_idx.contains(&ni) {
                // ultralytics plot_training_samples: the first three batches, and three after close_mosaic
                let path = dir.join(format!("train_batch{ni}.jpg"));
                let samples = batch.samples().map_err(|e| e.to_string())?;
                yolo26_augment::plot_batch(&samples, &names, &path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            if let Some(acc) = warmup(&mut opt, &schedule, ni, epoch) {
                st.accumulate = acc;
            }
            let images = batch_images::<AB>(&batch, device);
            let gt = batch_targets::<AB>(&batch, device);
            let out = train_forward(&model, &loss, images, &gt);
            // logged items: the one-to-one branch's, per image (ultralytics `E2ELoss` returns
            // `loss_one2one[1]`, the detached items before the batch-size factor)
            let items = out.one2one.items.clone().div_scalar(batch.len() as f64);
            let items = items.into_data().convert::<f64>().to_vec::<f64>().unwrap_or_default();
            if items.len() != 3 || items.iter().any(|v| !v.is_finite()) {
                return Err(format!(
                    "non-finite loss {items:?} (box, cls, l1) at epoch {}, batch {i} (iteration {ni}); the run \
                     stopped, {} holds the last completed epoch",
                    epoch + 1,
                    wdir.display()
                ));
            }
            let grads = out.total.backward();
            accumulate_grads(&model, grads, &mut pending);
            for (k, v) in items.iter().enumerate() {
                tloss[k] = (tloss[k] * i as f64 + v) / (i + 1) as f64;
            }
            if ni as i64 - st.last_opt_step >= st.accumulate as i64 {
                let (m, _) = opt.step(model, std::mem::take(&mut pending));
                model = m;
                ema.update(&model.valid());
                st.last_opt_step = ni as i64;
            }
            on_event(Event::Batch {
                epoch,
                batch: i,
                mean_loss: tloss,
                instances: batch.targets.len(),
                images: batch.len(),
            });
        }
        let final_epoch = epoch + 1 == args.epochs;
        let metrics = if args.val || final_epoch {
            on_event(Event::Validating { epoch });
            let vcfg = ValConfig {
                imgsz: args.imgsz,
                batch: args.batch * 2,
                mode: if args.end2end { DecodeMode::EndToEnd } else { DecodeMode::Nms },
                workers,
                ..ValConfig::default()
            };
            let report =
                validate(ema.model.clone(), val_set.clone(), &vcfg, device, |_, _| {}).map_err(|e| e.to_string())?;
            let r = report.results();
            best_report = Some(report);
            Some([r.precision, r.recall, r.map50, r.map])
        } else {
            None
        };
        let row = EpochRow {
            epoch: epoch + 1,
            time: t0.elapsed().as_secs_f64(),
            train_loss: tloss,
            metrics,
            lr: opt.groups.iter().map(|g| g.lr).collect(),
        };
        st.rows.push(row.clone());
        results::write_csv(&st.rows, &dir.join("results.csv"))?;
        if args.plots {
            results::plot(&st.rows, &dir.join("results.png"))?;
        }
        let fitness = metrics.map(|m| m[3]);
        let improved = match (fitness, st.best_fitness) {
            (Some(f), Some(b)) => f >= b,
            (Some(_), None) => true,
            _ => false,
        };
        if improved {
            st.best_fitness = fitness;
            st.best_epoch = Some(epoch);
            stale = 0;
        } else {
            stale += 1;
        }
        st.epoch = epoch;
        st.ema_updates = ema.updates;
        let (rec, optim_tensors) = opt.to_record();
        st.optimizer = rec;
        checkpoint::save_weights(&ema.model, &names, &last)?;
        if improved {
            checkpoint::save_weights(&ema.model, &names, &best)?;
            // the validation outputs of the best epoch (metrics.json, per_class.csv, PR/F1/P/R curves, confusion
            // matrices), as ultralytics leaves those of its final validation of best.pt
            if let Some(report) = best_report.take() {
                report.write(&dir, args.plots).map_err(|e| e.to_string())?;
            }
        }
        best_report = None;
        checkpoint::save_state(
            &wdir.join("last.state.safetensors"),
            &st,
            &model.valid(),
            &ema.model,
            optim_tensors,
            &pending,
        )?;
        on_event(Event::EpochEnd(row));
        if stale >= args.patience && !final_epoch {
            on_event(Event::Info(format!(
                "Stopping training early as no improvement observed in last {} epochs. Best results observed at \
                 epoch {}",
                args.patience,
                st.best_epoch.map_or(0, |e| e + 1)
            )));
            break;
        }
    }
    Ok(TrainSummary {
        dir,
        rows: st.rows.clone(),
        best_fitness: st.best_fitness,
        best_epoch: st.best_epoch,
        last,
        best,
    })
}

/// The [`TrainState`] of a state file without loading its tensors into a model (the scale is not known before).
fn read_state_only(path: &Path) -> Result<TrainState, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    checkpoint::state_of(&bytes, path)
}

/// `DIR`, or `DIR2`, `DIR3`, … the first that does not exist (ultralytics `increment_path`).
pub fn increment_dir(p: &Path) -> PathBuf {
    if !p.exists() {
        return p.to_path_buf();
    }
    let base = p.as_os_str().to_string_lossy().into_owned();
    (2..).map(|n| PathBuf::from(format!("{base}{n}"))).find(|c| !c.exists()).unwrap_or_else(|| p.to_path_buf())
}
