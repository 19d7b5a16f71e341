//! `yolo26 train`: trains YOLO26 on an ultralytics dataset, a COCO JSON or the built-in synthetic set with
//! ultralytics' recipe (`yolo26_train::trainer`) on burn-train (its TUI on a terminal, plain lines otherwise),
//! writing `DIR/args.yaml`,
//! `results.csv` and `weights/{last,best}.safetensors` (+ `last.state.safetensors` for `--resume`).

use std::path::PathBuf;

use std::sync::{Arc, Mutex};

use clap::Args;
use yolo26_train::learner::Ui;
use yolo26_train::trainer::{train_on, Event, TrainArgs};

use crate::backend::{dispatch_train, TrainJob};

#[derive(Args, Debug, Clone)]
pub struct TrainCliArgs {
    /// Dataset: an ultralytics data.yaml, a COCO instances .json (with --images), or synthetic[-easy][:N][@SEED].
    #[arg(long, default_value = "synthetic:2000")]
    pub data: String,
    /// Image directory of a COCO instances JSON.
    #[arg(long)]
    pub images: Option<PathBuf>,
    /// Model scale: n, s, m, l or x.
    #[arg(long, default_value = "n")]
    pub model: String,
    /// Initial weights (ultralytics .pt or safetensors); tensors whose name and shape match are transferred.
    #[arg(long)]
    pub weights: Option<PathBuf>,
    #[arg(long, default_value_t = 100)]
    pub epochs: usize,
    #[arg(long, default_value_t = 16)]
    pub batch: usize,
    #[arg(long, default_value_t = 640)]
    pub imgsz: usize,
    /// auto, SGD, AdamW or MuSGD (auto: AdamW for short runs, MuSGD past 10,000 iterations, as ultralytics).
    #[arg(long, default_value = "auto")]
    pub optimizer: String,
    #[arg(long, default_value_t = 0.01)]
    pub lr0: f64,
    #[arg(long, default_value_t = 0.01)]
    pub lrf: f64,
    #[arg(long, default_value_t = 0.937)]
    pub momentum: f64,
    #[arg(long = "weight-decay", default_value_t = 0.0005)]
    pub weight_decay: f64,
    #[arg(long = "warmup-epochs", default_value_t = 3.0)]
    pub warmup_epochs: f64,
    #[arg(long = "warmup-momentum", default_value_t = 0.8)]
    pub warmup_momentum: f64,
    #[arg(long = "warmup-bias-lr", default_value_t = 0.1)]
    pub warmup_bias_lr: f64,
    /// Final epochs without mosaic.
    #[arg(long = "close-mosaic", default_value_t = 10)]
    pub close_mosaic: usize,
    /// Cosine instead of linear lr decay.
    #[arg(long = "cos-lr")]
    pub cos_lr: bool,
    #[arg(long, default_value_t = 64)]
    pub nbs: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Loader threads (default: all cores, at most 8).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Epochs without improvement of mAP50-95 before stopping.
    #[arg(long, default_value_t = 100)]
    pub patience: usize,
    /// Validate only after the final epoch.
    #[arg(long = "no-val")]
    pub no_val: bool,
    /// Validate with the one-to-one head (ultralytics `nms=False`) instead of one-to-many + NMS.
    #[arg(long)]
    pub end2end: bool,
    /// cpu, wgpu[:N] or cuda[:N] (those compiled in).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Data-parallel training on several devices of one backend (ultralytics DDP, `device=0,1`): a comma-separated
    /// list such as cuda:0,cuda:1, or `all` (every CUDA device). --batch is the global batch, split evenly among
    /// them; validation, logs and checkpoints are done once, on the first. Replaces --device.
    #[arg(long, conflicts_with = "device")]
    pub devices: Option<String>,
    /// f32 convolutions on TF32 tensor cores (GPU backends; PyTorch's cuDNN default, what ultralytics trains with in
    /// fp32); exact f32 otherwise.
    #[arg(long)]
    pub tf32: bool,
    /// Mixed precision (ultralytics amp=True): f16 activations and tensor-core convolutions, f32 parameters,
    /// BatchNorm statistics and loss, dynamic loss scaling (torch's GradScaler). Off by default (exact f32).
    #[arg(long, conflicts_with = "tf32")]
    pub amp: bool,
    /// Run directory; an existing one gets a number appended (runs/train, runs/train2, ...).
    #[arg(long, default_value = "runs/train")]
    pub project: PathBuf,
    /// Train into --project even when it exists (its files are overwritten) instead of numbering a new one.
    #[arg(long)]
    pub exist_ok: bool,
    /// Plain progress lines instead of burn-train's terminal UI (the default when stdout is not a terminal).
    #[arg(long = "no-tui")]
    pub no_tui: bool,
    /// Print, after every epoch, where a training iteration's time goes (data wait, upload, forward+loss,
    /// backward, gradient bookkeeping, optimizer, EMA, logging), each phase ended by a device synchronisation (slower).
    #[arg(long)]
    pub profile: bool,
    /// Continue the run in this directory from its weights/last.state.safetensors, with its saved arguments (only
    /// --device, --workers and --profile are taken from this command line).
    #[arg(long)]
    pub resume: Option<PathBuf>,
}

impl TrainCliArgs {
    fn to_args(&self) -> TrainArgs {
        TrainArgs {
            data: self.data.clone(),
            images: self.images.clone(),
            model: self.model.clone(),
            weights: self.weights.clone(),
            epochs: self.epochs,
            batch: self.batch,
            imgsz: self.imgsz,
            optimizer: self.optimizer.clone(),
            lr0: self.lr0,
            lrf: self.lrf,
            momentum: self.momentum,
            weight_decay: self.weight_decay,
            warmup_epochs: self.warmup_epochs,
            warmup_momentum: self.warmup_momentum,
            warmup_bias_lr: self.warmup_bias_lr,
            cos_lr: self.cos_lr,
            close_mosaic: self.close_mosaic,
            nbs: self.nbs,
            seed: self.seed,
            workers: self.workers,
            val: !self.no_val,
            end2end: self.end2end,
            patience: self.patience,
            project: self.project.clone(),
            exist_ok: self.exist_ok,
            device: self.devices.clone().unwrap_or_else(|| self.device.clone()),
            tf32: self.tf32,
            amp: self.amp,
            profile: self.profile,
            ..TrainArgs::default()
        }
    }
}

struct Job(TrainCliArgs);

impl TrainJob for Job {
    fn run<AB>(self, devices: Vec<AB::Device>) -> anyhow::Result<()>
    where
        AB: burn::tensor::backend::AutodiffBackend + yolo26_train::TrainBackend,
        AB::InnerBackend: yolo26_model::YoloBackend,
    {
        let a = self.0;
        let ui = if a.no_tui { Ui::Lines } else { Ui::Auto };
        // while the TUI owns the terminal, log lines wait and are printed when it closes
        let tui = ui.is_tui();
        let held = Arc::new(Mutex::new(Vec::new()));
        let sink = held.clone();
        let summary = train_on::<AB>(a.to_args(), &devices, a.resume.as_deref(), ui, move |ev| {
            let line = match ev {
                Event::Info(s) => s,
                Event::EpochEnd(row) => {
                    let l = row.train_loss;
                    let m = row.metrics.map_or_else(
                        || "(not validated)".to_string(),
                        |m| format!("P {:.3}  R {:.3}  mAP50 {:.3}  mAP50-95 {:.3}", m[0], m[1], m[2], m[3]),
                    );
                    format!(
                        "epoch {:>3}  box {:.4}  cls {:.4}  l1 {:.4}  |  {m}  ({:.0} s)",
                        row.epoch, l[0], l[1], l[2], row.time
                    )
                }
            };
            match (tui, sink.lock()) {
                (true, Ok(mut held)) => held.push(line),
                _ => eprintln!("{line}"),
            }
        });
        for line in held.lock().map(|h| h.clone()).unwrap_or_default() {
            eprintln!("{line}");
        }
        let summary = summary.map_err(anyhow::Error::msg)?;
        eprintln!(
            "\n{} epochs done; best mAP50-95 {} (epoch {}). Results saved to {}\n  {}\n  {}",
            summary.rows.len(),
            summary.best_fitness.map_or("-".into(), |f| format!("{f:.4}")),
            summary.best_epoch.map_or("-".into(), |e| (e + 1).to_string()),
            summary.dir.display(),
            summary.last.display(),
            summary.best.display()
        );
        Ok(())
    }
}

pub fn run(a: TrainCliArgs) -> anyhow::Result<()> {
    let devices = a.devices.clone().unwrap_or_else(|| a.device.clone());
    dispatch_train(&devices, Job(a))
}
