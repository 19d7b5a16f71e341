//! The `predict` loop over its sources: one image at a time, a bad image skipped (with a warning naming it and an
//! error entry in `predictions.json`) instead of ending the run, `predictions.json` rewritten atomically every
//! few seconds and at the end, and a stop request (SIGINT / SIGTERM) honoured between images with everything
//! done so far written. ultralytics' `predict` on a folder likewise warns and goes on.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::ProgressBar;
use serde::Serialize;
use yolo26_model::{Detection, Detector, YoloBackend};

use super::output::save_image_atomic;

/// How often `predictions.json` is rewritten while the run goes on (and once more at its end).
const FLUSH_EVERY: Duration = Duration::from_secs(5);

/// One entry of `predictions.json`: an image's detections, or why it was skipped.
#[derive(Serialize, Debug)]
#[serde(untagged)]
pub enum Entry {
    Done(ImageResult),
    Skipped(SkippedImage),
}

/// Detections of one image; `xyxy` in the image's pixels (after its EXIF orientation).
#[derive(Serialize, Debug)]
pub struct ImageResult {
    pub image: String,
    pub width: u32,
    pub height: u32,
    /// Decoder warnings (libjpeg's "Corrupt JPEG data: …", as OpenCV prints them) and output problems; absent
    /// when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub detections: Vec<JsonDet>,
}

/// An image that could not be read or decoded: `{"image": path, "error": reason}`.
#[derive(Serialize, Debug)]
pub struct SkippedImage {
    pub image: String,
    pub error: String,
}

#[derive(Serialize, Debug)]
pub struct JsonDet {
    pub xyxy: [f32; 4],
    pub score: f32,
    pub class_id: usize,
    pub class: String,
}

/// One image `predict` reads: a file, or an image of a dataset split (the built-in synthetic one, rendered).
#[derive(Clone, Debug)]
pub enum Source {
    File(PathBuf),
    Dataset { set: Arc<yolo26_data::Dataset>, index: usize },
}

impl Source {
    /// The `image` of `predictions.json`: the path, or e.g. `synthetic-easy@0/val/000003.png`.
    fn name(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Dataset { set, index } => set.entries[*index].source.display_path().display().to_string(),
        }
    }

    /// The annotated copy's file name.
    fn file_name(&self) -> Option<OsString> {
        match self {
            Source::File(p) => p.file_name().map(OsString::from),
            Source::Dataset { set, index } => set.entries[*index].source.display_path().file_name().map(OsString::from),
        }
    }

    /// The image (RGB) and the decoder's warnings.
    fn read(&self) -> Result<(image::RgbImage, Vec<String>), String> {
        match self {
            Source::File(p) => yolo26_imageio::read_report(p).map(|d| (d.image, d.warnings)).map_err(|e| e.to_string()),
            Source::Dataset { set, index } => {
                set.load_image(*index).map(|im| (im, Vec::new())).map_err(|e| e.to_string())
            }
        }
    }
}

/// What a run did.
#[derive(Debug)]
pub struct Summary {
    /// One entry per source handled, in source order (as written to `predictions.json`).
    pub entries: Vec<Entry>,
    /// How many entries are [`Entry::Skipped`].
    pub skipped: usize,
    /// Whether `stop` ended the run before every source was handled.
    pub interrupted: bool,
    /// The `predictions.json` written.
    pub json: PathBuf,
}

/// Runs `det` on every source in order, writing the annotated copies and `predictions.json` into `out` (which
/// must exist). `stop` is asked before each image; once it says yes the run ends with what is done written.
/// Only a failure to write `predictions.json` (or to draw the progress bar's messages) ends the run with an error.
pub fn predict_all<B: YoloBackend>(
    det: &Detector<B>,
    sources: &[Source],
    out: &Path,
    stop: &dyn Fn() -> bool,
    bar: &ProgressBar,
) -> anyhow::Result<Summary> {
    let json = out.join("predictions.json");
    let mut entries = Vec::with_capacity(sources.len());
    let (mut skipped, mut interrupted) = (0, false);
    let mut last_flush = Instant::now();
    for source in sources {
        if stop() {
            interrupted = true;
            break;
        }
        let name = source.name();
        let file_name = source.file_name().with_context(|| format!("{name}: not a file path"))?;
        bar.set_message(file_name.to_string_lossy().to_string());
        let entry = match source.read() {
            Err(e) => {
                bar.suspend(|| eprintln!("warning: skipped {name}: {e}"));
                skipped += 1;
                Entry::Skipped(SkippedImage { image: name, error: e })
            }
            Ok((image, mut warnings)) => {
                for w in &warnings {
                    bar.suspend(|| eprintln!("warning: {name}: {w}"));
                }
                let dets = det.detect_batch(std::slice::from_ref(&image)).remove(0);
                let mut annotated = image.clone();
                annotate(&mut annotated, &dets);
                if let Err(e) = save_image_atomic(&annotated, &out.join(file_name)) {
                    bar.suspend(|| eprintln!("warning: {name}: annotated copy not written: {e:#}"));
                    warnings.push(format!("annotated copy not written: {e:#}"));
                }
                Entry::Done(ImageResult {
                    image: name,
                    width: image.width(),
                    height: image.height(),
                    warnings,
                    detections: dets
                        .into_iter()
                        .map(|d| JsonDet { xyxy: d.xyxy, score: d.score, class_id: d.class_id, class: d.class_name })
                        .collect(),
                })
            }
        };
        entries.push(entry);
        bar.inc(1);
        if last_flush.elapsed() >= FLUSH_EVERY {
            write_json(&json, &entries)?;
            last_flush = Instant::now();
        }
    }
    write_json(&json, &entries)?;
    Ok(Summary { entries, skipped, interrupted, json })
}

/// `predictions.json`, written atomically (temporary file, fsync, rename).
fn write_json(path: &Path, entries: &[Entry]) -> anyhow::Result<()> {
    let json = serde_json::to_vec_pretty(entries).context("serialising predictions")?;
    yolo26_model::weights::write_atomic(path, &json).with_context(|| format!("cannot write {}", path.display()))
}

fn annotate(img: &mut image::RgbImage, dets: &[Detection]) {
    let v: Vec<_> = dets.iter().map(|d| (d.xyxy, d.score, d.class_id, d.class_name.as_str())).collect();
    yolo26_model::annotate::draw_detections(img, &v);
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use burn::backend::flex::FlexDevice;
    use burn::backend::Flex;
    use yolo26_model::{DecodeMode, DetectorOptions, Scale, Yolo26Config};

    use super::*;

    fn detector() -> Detector<Flex> {
        let model = Yolo26Config::new(Scale::N, 3).init::<Flex>(&FlexDevice);
        let names = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let opts = DetectorOptions { imgsz: 64, conf: 0.0, mode: DecodeMode::EndToEnd, ..Default::default() };
        Detector::from_model(model, names, opts, &FlexDevice).unwrap()
    }

    fn png(w: u32, h: u32, seed: u8) -> Vec<u8> {
        let img = image::RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([(x * 7 + seed as u32) as u8, (y * 13) as u8, seed.wrapping_mul(31)])
        });
        let mut bytes = Vec::new();
        img.write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
        bytes
    }

    /// A folder of good images and damaged files: every good image is in `predictions.json` with its size and
    /// annotated copy, every damaged one is an error entry naming it and the reason, nothing else is written and
    /// the run is not cut short.
    #[test]
    fn predict_skips_bad_images_and_keeps_the_rest() {
        let src = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let good = png(40, 24, 3);
        let files: Vec<(&str, Vec<u8>)> = vec![
            ("a.png", good.clone()),
            ("b_truncated.png", good[..good.len() / 2].to_vec()),
            ("c.jpg", png(17, 33, 9)), // a PNG named .jpg: decoded by content
            ("d_empty.png", Vec::new()),
            ("e_garbage.jpg", b"this is not an image at all".to_vec()),
            ("f.png", png(64, 64, 200)),
        ];
        let mut sources = Vec::new();
        for (name, bytes) in &files {
            let p = src.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            sources.push(Source::File(p));
        }
        let summary = predict_all(&detector(), &sources, out.path(), &|| false, &ProgressBar::hidden()).unwrap();
        assert!(!summary.interrupted);
        assert_eq!(summary.skipped, 3);
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary.json).unwrap()).unwrap();
        let entries = json.as_array().unwrap();
        assert_eq!(entries.len(), 6);
        for (entry, (name, _)) in entries.iter().zip(&files) {
            assert!(entry["image"].as_str().unwrap().ends_with(name), "{entry}");
            let bad = name.contains('_');
            assert_eq!(entry.get("error").is_some(), bad, "{entry}");
            assert_eq!(entry.get("detections").is_some(), !bad, "{entry}");
            assert_eq!(out.path().join(name).exists(), !bad, "{name}");
        }
        assert_eq!((entries[0]["width"].as_u64(), entries[0]["height"].as_u64()), (Some(40), Some(24)));
        assert_eq!((entries[2]["width"].as_u64(), entries[2]["height"].as_u64()), (Some(17), Some(33)));
        assert!(entries[1]["error"].as_str().unwrap().contains("truncated"), "{}", entries[1]);
        assert!(entries[3]["error"].as_str().unwrap().contains("empty"), "{}", entries[3]);
        assert!(entries[4]["error"].as_str().unwrap().contains("unrecognised"), "{}", entries[4]);
        let mut written: Vec<_> =
            std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        written.sort();
        assert_eq!(written, ["a.png", "c.jpg", "f.png", "predictions.json"]);
    }

    /// A dataset split as the source (`--source synthetic-easy:N`): its images are rendered, named as
    /// `write_ultralytics` names their files, and annotated under those file names.
    #[test]
    fn predict_on_a_synthetic_split() {
        let out = tempfile::tempdir().unwrap();
        let src = yolo26_data::DataSource::parse("synthetic-easy:10@4", None).unwrap();
        let set = Arc::new(src.open(yolo26_data::Split::Val).unwrap());
        let sources: Vec<Source> = (0..set.len()).map(|index| Source::Dataset { set: set.clone(), index }).collect();
        let summary = predict_all(&detector(), &sources, out.path(), &|| false, &ProgressBar::hidden()).unwrap();
        assert_eq!((summary.entries.len(), summary.skipped), (2, 0));
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary.json).unwrap()).unwrap();
        for (i, entry) in json.as_array().unwrap().iter().enumerate() {
            assert_eq!(entry["image"], format!("synthetic-easy@4/val/{i:06}.png"));
            let img = set.load_image(i).unwrap();
            assert_eq!(
                (entry["width"].as_u64(), entry["height"].as_u64()),
                (Some(img.width() as u64), Some(img.height() as u64))
            );
            let annotated = image::open(out.path().join(format!("{i:06}.png"))).unwrap().to_rgb8();
            assert_eq!(annotated.dimensions(), img.dimensions());
        }
    }

    /// A stop request between images ends the run with the images done so far in `predictions.json`.
    #[test]
    fn predict_stop_request_keeps_what_is_done() {
        let src = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let sources: Vec<Source> = (0..4)
            .map(|i| {
                let p = src.path().join(format!("{i}.png"));
                std::fs::write(&p, png(32, 32, i)).unwrap();
                Source::File(p)
            })
            .collect();
        let asked = Cell::new(0);
        let stop = || {
            asked.set(asked.get() + 1);
            asked.get() > 2
        };
        let summary = predict_all(&detector(), &sources, out.path(), &stop, &ProgressBar::hidden()).unwrap();
        assert!(summary.interrupted);
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary.json).unwrap()).unwrap();
        let images: Vec<_> = json.as_array().unwrap().iter().map(|e| e["image"].as_str().unwrap()).collect();
        assert_eq!(images.len(), 2);
        assert!(images[0].ends_with("0.png") && images[1].ends_with("1.png"), "{images:?}");
    }
}
