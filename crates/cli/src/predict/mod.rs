//! `yolo26 predict`: detections as `DIR/predictions.json` plus one annotated image per input. A bad image is
//! skipped and recorded, SIGINT / SIGTERM end the run with what is done written (`run_loop`); the output directory
//! is numbered as ultralytics numbers it and never inside the source (`output`).

mod output;
mod run_loop;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use yolo26_model::names::read_names;
use yolo26_model::{DecodeMode, Detector, DetectorOptions, Scale};

use crate::backend::{dispatch, Job};
use output::{claim_output_dir, refuse_writing_into_source};
use run_loop::{predict_all, Entry, Source};

#[derive(Args, Debug, Clone)]
pub struct PredictArgs {
    /// Model scale: n, s, m, l or x.
    #[arg(long, default_value = "n")]
    pub model: Scale,
    /// Weights: ultralytics .pt checkpoint or safetensors state_dict. Default: the bundled random-calibrated
    /// (NOT trained) yolo26n checkpoint.
    #[arg(long, default_value = "assets/yolo26n-calib.pt")]
    pub weights: PathBuf,
    /// Number of classes (default: read from the weights).
    #[arg(long)]
    pub nc: Option<usize>,
    /// Class names: JSON list/object or one name per line (default: from the checkpoint, else COCO).
    #[arg(long)]
    pub names: Option<PathBuf>,
    /// Image file, directory of images, or `synthetic[-easy][:N][@SEED]`: the held-out (val) images of that
    /// built-in dataset, rendered.
    #[arg(long, default_value = "assets/bus.png")]
    pub source: PathBuf,
    /// Square input size, a multiple of 32 (at most 8192).
    #[arg(long, default_value_t = 640, value_parser = crate::ranges::imgsz)]
    pub imgsz: usize,
    /// Score threshold in [0, 1].
    #[arg(long, default_value_t = 0.25, value_parser = crate::ranges::unit_interval)]
    pub conf: f32,
    /// NMS IoU threshold in (0, 1].
    #[arg(long, default_value_t = 0.7, value_parser = crate::ranges::iou)]
    pub iou: f32,
    /// Detections kept per image (at least 1).
    #[arg(long = "max-det", default_value_t = 300, value_parser = crate::ranges::positive)]
    pub max_det: usize,
    /// One-to-one head, top-k, no NMS (the default).
    #[arg(long, conflicts_with = "nms")]
    pub end2end: bool,
    /// One-to-many head with class-aware NMS.
    #[arg(long)]
    pub nms: bool,
    /// cpu, wgpu[:N] or cuda[:N] (those compiled in).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Run in f16.
    #[arg(long)]
    pub half: bool,
    /// Output directory; when it exists, the first free one of DIR2, DIR3, … is used (as ultralytics numbers
    /// `runs/predict2`), unless --exist-ok.
    #[arg(long, default_value = "runs/predict")]
    pub out: PathBuf,
    /// Write into --out even if it exists (files of the same name are replaced).
    #[arg(long)]
    pub exist_ok: bool,
}

const IMAGE_EXTS: [&str; 8] = ["jpg", "jpeg", "png", "bmp", "webp", "tif", "tiff", "gif"];

/// The images of `--source`: a file, the images of a directory (sorted), or the held-out (val) split of the
/// built-in synthetic dataset when `src` is a `synthetic[-easy][:N][@SEED]` spec (rendered, not read).
fn list_sources(src: &Path) -> anyhow::Result<Vec<Source>> {
    if let Some(spec) = src.to_str().map(yolo26_data::SyntheticSpec::parse).transpose()?.flatten() {
        let set = Arc::new(yolo26_data::DataSource::Synthetic(spec).open(yolo26_data::Split::Val)?);
        return Ok((0..set.len()).map(|index| Source::Dataset { set: set.clone(), index }).collect());
    }
    if src.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(src)
            .with_context(|| format!("cannot list {}", src.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| IMAGE_EXTS.contains(&e.to_ascii_lowercase().as_str()))
            })
            .collect();
        v.sort();
        if v.is_empty() {
            bail!("{}: no images ({}) in this directory", src.display(), IMAGE_EXTS.join(", "));
        }
        Ok(v.into_iter().map(Source::File).collect())
    } else if src.is_file() {
        Ok(vec![Source::File(src.to_path_buf())])
    } else {
        bail!("--source {}: no such file or directory", src.display())
    }
}

impl Job for PredictArgs {
    fn run<B: yolo26_model::YoloBackend>(self, device: B::Device) -> anyhow::Result<()> {
        // --half: f16 storage on tensor cores (exact f32 otherwise)
        yolo26_model::nn::conv::set_conv_math(if self.half {
            yolo26_model::nn::conv::ConvMath::Fast
        } else {
            yolo26_model::nn::conv::ConvMath::Exact
        });
        let sources = list_sources(&self.source)?;
        let from_files = matches!(sources.first(), Some(Source::File(_)));
        if from_files {
            refuse_writing_into_source(&self.source, &self.out)?;
        }
        let names = self.names.as_deref().map(read_names).transpose().map_err(anyhow::Error::msg)?;
        let opts = DetectorOptions {
            imgsz: self.imgsz,
            conf: self.conf,
            iou: self.iou,
            max_det: self.max_det,
            mode: if self.nms { DecodeMode::Nms } else { DecodeMode::EndToEnd },
            half: self.half,
            nc: self.nc,
            multi_label: false,
        };
        let det = Detector::<B>::new(self.model, &self.weights, names, opts, &device)?;
        let out = claim_output_dir(&self.out, self.exist_ok)?;
        if from_files {
            refuse_writing_into_source(&self.source, &out)?;
        }
        let bar = if sources.len() > 1 {
            let b = ProgressBar::new(sources.len() as u64);
            b.set_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} [{elapsed} < {eta}]").expect("template"),
            );
            b
        } else {
            ProgressBar::hidden()
        };
        let signal = stop_on_signals()?;
        let summary = predict_all(&det, &sources, &out, &|| signal.load(Ordering::Relaxed) != 0, &bar)?;
        bar.finish_and_clear();
        for e in &summary.entries {
            match e {
                Entry::Done(r) => println!("{}: {} detections", r.image, r.detections.len()),
                Entry::Skipped(s) => println!("{}: skipped ({})", s.image, s.error),
            }
        }
        let done = summary.entries.len() - summary.skipped;
        println!(
            "{done} image(s) done, {} skipped, {} not reached; results in {}",
            summary.skipped,
            sources.len() - summary.entries.len(),
            summary.json.display()
        );
        if summary.interrupted {
            let sig = signal.load(Ordering::Relaxed);
            eprintln!("interrupted by signal {sig}: {} holds the {done} image(s) done", summary.json.display());
            std::process::exit(128 + sig as i32);
        }
        if summary.skipped > 0 {
            bail!(
                "{} of {} image(s) could not be read (error entries in {})",
                summary.skipped,
                sources.len(),
                summary.json.display()
            );
        }
        Ok(())
    }
}

/// SIGINT / SIGTERM set the returned number (the signal's) so the loop stops after the current image and writes
/// what it has; a second signal while that happens ends the process at once (status 128 + signal).
fn stop_on_signals() -> anyhow::Result<Arc<AtomicUsize>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::flag;
    let which = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        // registered first, so the first signal finds `seen` false and only the second one exits
        flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&seen)).context("installing signal handlers")?;
        flag::register(sig, Arc::clone(&seen)).context("installing signal handlers")?;
        flag::register_usize(sig, Arc::clone(&which), sig as usize).context("installing signal handlers")?;
    }
    Ok(which)
}

pub fn run(args: PredictArgs) -> anyhow::Result<()> {
    let device = args.device.clone();
    dispatch(&device, args)
}

#[cfg(test)]
mod tests {
    /// A SIGTERM sets the stop flag to the signal's number instead of killing the process.
    #[test]
    fn predict_signal_sets_the_stop_flag() {
        let flag = super::stop_on_signals().unwrap();
        assert_eq!(flag.load(std::sync::atomic::Ordering::Relaxed), 0);
        signal_hook::low_level::raise(signal_hook::consts::SIGTERM).unwrap();
        assert_eq!(flag.load(std::sync::atomic::Ordering::Relaxed), signal_hook::consts::SIGTERM as usize);
    }
}
