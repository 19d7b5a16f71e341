//! `yolo26 eval`: COCO bbox evaluation of a detections file against COCO instances (pycocotools' `COCOeval`).

use std::path::PathBuf;

use clap::Args;

#[derive(Args)]
pub struct EvalArgs {
    /// Ground truth: COCO instances JSON (images, annotations, categories).
    #[arg(long)]
    gt: PathBuf,
    /// Detections: a COCO results JSON list of {image_id, category_id, bbox [x, y, w, h], score}
    /// (what `yolo26 val --save-json` and ultralytics write).
    #[arg(long)]
    dt: PathBuf,
    /// Print one JSON object (map, map50, map75, map_small, map_medium, map_large, mar_1, mar_10, mar_100,
    /// mar_small, mar_medium, mar_large) instead of pycocotools' 12 summary lines.
    #[arg(long)]
    json: bool,
}

pub fn run(a: EvalArgs) -> anyhow::Result<()> {
    let e = yolo26_eval::eval_files(&a.gt, &a.dt)?;
    if e.n_dets_unknown_category > 0 {
        eprintln!(
            "warning: {} detections in {} have a category_id that {} does not define (ignored, as pycocotools does)",
            e.n_dets_unknown_category,
            a.dt.display(),
            a.gt.display()
        );
    }
    if a.json {
        println!("{}", e.stats_json());
    } else {
        print!("{}", e.summary_text());
    }
    Ok(())
}
