//! `yolo26 val`: mAP of a model on a dataset split with ultralytics' validator semantics
//! (`yolo26_train::val`), printing ultralytics' table and writing metrics, plots and COCO detections.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::bail;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use yolo26_data::{DataSource, Split};
use yolo26_model::detector::load_model;
use yolo26_model::weights::read_weights;
use yolo26_model::{DecodeMode, Scale};
use yolo26_train::val::{validate, ValConfig};

use crate::backend::{dispatch, Job};

#[derive(Args, Debug, Clone)]
pub struct ValArgs {
    /// Model scale: n, s, m, l or x.
    #[arg(long, default_value = "n")]
    pub model: Scale,
    /// Weights: ultralytics .pt checkpoint or safetensors state_dict.
    #[arg(long)]
    pub weights: PathBuf,
    /// Dataset: an ultralytics data.yaml, a COCO instances .json (with --images), or synthetic[-easy][:N][@SEED].
    #[arg(long)]
    pub data: String,
    /// Image directory of a COCO instances JSON.
    #[arg(long)]
    pub images: Option<PathBuf>,
    /// Split to validate: val or test.
    #[arg(long, default_value = "val")]
    pub split: String,
    /// Square input size, a multiple of 32 (at most 8192).
    #[arg(long, default_value_t = 640, value_parser = crate::ranges::imgsz)]
    pub imgsz: usize,
    /// Images per batch (at least 1).
    #[arg(long, default_value_t = 32, value_parser = crate::ranges::positive)]
    pub batch: usize,
    /// Score threshold in [0, 1].
    #[arg(long, default_value_t = 0.001, value_parser = crate::ranges::unit_interval)]
    pub conf: f32,
    /// NMS IoU threshold in (0, 1].
    #[arg(long, default_value_t = 0.7, value_parser = crate::ranges::iou)]
    pub iou: f32,
    /// Detections kept per image (at least 1).
    #[arg(long = "max-det", default_value_t = 300, value_parser = crate::ranges::positive)]
    pub max_det: usize,
    /// One-to-one head, top-k, no NMS (ultralytics `nms=False`).
    #[arg(long, conflicts_with = "nms")]
    pub end2end: bool,
    /// One-to-many head with NMS (the default, as ultralytics' `nms=None`).
    #[arg(long)]
    pub nms: bool,
    /// cpu, wgpu[:N] or cuda[:N] (those compiled in).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Run in f16.
    #[arg(long)]
    pub half: bool,
    /// Write COCO-format detections (DIR/predictions.json) for `yolo26 eval` / pycocotools.
    #[arg(long = "save-json")]
    pub save_json: bool,
    /// Do not write the PR/F1/P/R curves and confusion matrices.
    #[arg(long = "no-plots")]
    pub no_plots: bool,
    /// Loader threads (default: all cores, at most 8).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Output directory; an existing one gets a number appended (runs/val, runs/val2, ...) unless --exist-ok.
    #[arg(long, default_value = "runs/val")]
    pub project: PathBuf,
    #[arg(long = "exist-ok")]
    pub exist_ok: bool,
}

pub fn run(a: ValArgs) -> anyhow::Result<()> {
    let device = a.device.clone();
    dispatch(&device, a)
}

/// ultralytics `increment_path`: `DIR`, else `DIR2`, `DIR3`, ... (the first that does not exist).
pub fn increment_path(p: &Path, exist_ok: bool) -> PathBuf {
    if exist_ok || !p.exists() {
        return p.to_path_buf();
    }
    let base = p.as_os_str().to_string_lossy().into_owned();
    (2..).map(|n| PathBuf::from(format!("{base}{n}"))).find(|c| !c.exists()).unwrap_or_else(|| p.to_path_buf())
}

impl Job for ValArgs {
    fn run<B: yolo26_model::YoloBackend>(self, device: B::Device) -> anyhow::Result<()> {
        // --half: f16 storage on tensor cores (exact f32 otherwise)
        yolo26_model::nn::conv::set_conv_math(if self.half {
            yolo26_model::nn::conv::ConvMath::Fast
        } else {
            yolo26_model::nn::conv::ConvMath::Exact
        });
        let split = match self.split.as_str() {
            "val" => Split::Val,
            "test" => Split::Test,
            other => bail!("--split {other}: expected val or test"),
        };
        let source = DataSource::parse(&self.data, self.images.as_deref())?;
        let dataset = source.open(split)?;
        eprintln!("{}", dataset.summary.line(&format!("{}: ", self.split)));
        let map = read_weights(&self.weights)?;
        if let Some(names) = &map.names {
            if names != &dataset.names {
                eprintln!(
                    "warning: the checkpoint's class names ({}) differ from the dataset's ({}); using the dataset's",
                    names.join(", "),
                    dataset.names.join(", ")
                );
            }
        }
        let model = load_model::<B>(self.model, &map, Some(dataset.names.len()), &device)?;
        let mut cfg = ValConfig {
            imgsz: self.imgsz,
            batch: self.batch,
            conf: self.conf,
            iou: self.iou,
            max_det: self.max_det,
            mode: if self.end2end { DecodeMode::EndToEnd } else { DecodeMode::Nms },
            half: self.half,
            save_json: self.save_json,
            ..ValConfig::default()
        };
        if let Some(w) = self.workers {
            cfg.workers = w.max(1);
        }
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("val {bar:40} {pos}/{len} batches [{elapsed} < {eta}]").expect("template"),
        );
        let report = validate(model, Arc::new(dataset), &cfg, &device, |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?;
        bar.finish_and_clear();
        print!("{}", report.table());
        println!("{}", report.speed_line());
        let dir = increment_path(&self.project, self.exist_ok);
        let written = report.write(&dir, !self.no_plots)?;
        println!("results saved to {} ({} files)", dir.display(), written.len());
        Ok(())
    }
}
