//! `yolo26 predict`: detections as `DIR/predictions.json` plus one annotated image per input.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use yolo26_model::names::read_names;
use yolo26_model::{DecodeMode, Detection, Detector, DetectorOptions, Scale};

use crate::backend::{dispatch, Job};

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
    /// Image file or directory of images.
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
    /// Output directory.
    #[arg(long, default_value = "runs/predict")]
    pub out: PathBuf,
}

#[derive(Serialize)]
struct ImageResult {
    image: String,
    width: u32,
    height: u32,
    detections: Vec<JsonDet>,
}

#[derive(Serialize)]
struct JsonDet {
    xyxy: [f32; 4],
    score: f32,
    class_id: usize,
    class: String,
}

const IMAGE_EXTS: [&str; 8] = ["jpg", "jpeg", "png", "bmp", "webp", "tif", "tiff", "gif"];

fn list_sources(src: &Path) -> anyhow::Result<Vec<PathBuf>> {
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
        Ok(v)
    } else if src.is_file() {
        Ok(vec![src.to_path_buf()])
    } else {
        bail!("--source {}: no such file or directory", src.display())
    }
}

/// The annotated copies keep their file names, so an output directory equal to the source directory (or to a
/// source file's directory), or inside the source directory, would overwrite or mix with the inputs: refused.
fn refuse_writing_into_source(source: &Path, out: &Path) -> anyhow::Result<()> {
    let src = source.canonicalize().with_context(|| format!("--source {}", source.display()))?;
    let src_dir = if src.is_dir() { src.clone() } else { src.parent().map(Path::to_path_buf).unwrap_or(src.clone()) };
    // `out` may not exist yet: resolve its deepest existing ancestor, then append the rest
    let abs = std::path::absolute(out).with_context(|| format!("--out {}", out.display()))?;
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(p), Some(name)) => {
                rest.push(name.to_os_string());
                existing = p;
            }
            _ => break,
        }
    }
    let mut resolved = existing.canonicalize().unwrap_or_else(|_| existing.to_path_buf());
    resolved.extend(rest.iter().rev());
    if resolved == src_dir || (src.is_dir() && resolved.starts_with(&src)) {
        bail!(
            "--out {} would write into the source {} (annotated copies keep the input file names); choose another \
             directory",
            out.display(),
            source.display()
        );
    }
    Ok(())
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
        refuse_writing_into_source(&self.source, &self.out)?;
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
        std::fs::create_dir_all(&self.out).with_context(|| format!("cannot create {}", self.out.display()))?;
        let bar = if sources.len() > 1 {
            let b = ProgressBar::new(sources.len() as u64);
            b.set_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} [{elapsed} < {eta}]").expect("template"),
            );
            b
        } else {
            ProgressBar::hidden()
        };
        let mut results = Vec::new();
        for path in &sources {
            bar.set_message(path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default());
            let img = yolo26_imageio::read(path).with_context(|| path.display().to_string())?;
            let dets = det.detect_batch(std::slice::from_ref(&img)).remove(0);
            let mut rgb = img.clone();
            annotate(&mut rgb, &dets);
            let out_img = self.out.join(path.file_name().expect("file name"));
            rgb.save(&out_img).with_context(|| format!("cannot write {}", out_img.display()))?;
            results.push(ImageResult {
                image: path.display().to_string(),
                width: img.width(),
                height: img.height(),
                detections: dets
                    .into_iter()
                    .map(|d| JsonDet { xyxy: d.xyxy, score: d.score, class_id: d.class_id, class: d.class_name })
                    .collect(),
            });
            bar.inc(1);
        }
        bar.finish_and_clear();
        let json_path = self.out.join("predictions.json");
        let json = serde_json::to_string_pretty(&results).expect("serialisable");
        std::fs::write(&json_path, json).with_context(|| format!("cannot write {}", json_path.display()))?;
        for r in &results {
            println!("{}: {} detections", r.image, r.detections.len());
        }
        println!("results in {}", self.out.display());
        Ok(())
    }
}

fn annotate(img: &mut image::RgbImage, dets: &[Detection]) {
    let v: Vec<_> = dets.iter().map(|d| (d.xyxy, d.score, d.class_id, d.class_name.as_str())).collect();
    yolo26_model::annotate::draw_detections(img, &v);
}

pub fn run(args: PredictArgs) -> anyhow::Result<()> {
    let device = args.device.clone();
    dispatch(&device, args)
}

#[cfg(test)]
mod tests {
    use super::refuse_writing_into_source;

    /// `--out` equal to the source directory, inside it, or equal to a source file's directory is refused (also
    /// when spelled differently or not yet existing); a sibling directory is accepted.
    #[test]
    fn predict_never_writes_into_its_source() {
        let root = std::env::temp_dir().join(format!("yolo26-predict-src-{}", std::process::id()));
        let src = root.join("images");
        std::fs::create_dir_all(&src).unwrap();
        let file = src.join("a.png");
        std::fs::write(&file, b"not read here").unwrap();
        assert!(refuse_writing_into_source(&src, &src).is_err());
        assert!(refuse_writing_into_source(&src, &src.join(".")).is_err());
        assert!(refuse_writing_into_source(&src, &src.join("new/deeper")).is_err());
        assert!(refuse_writing_into_source(&file, &root.join("images/../images")).is_err());
        assert!(refuse_writing_into_source(&src, &root.join("out")).is_ok());
        assert!(refuse_writing_into_source(&file, &root.join("out")).is_ok());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
