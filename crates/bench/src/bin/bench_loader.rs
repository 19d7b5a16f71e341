//! Training-loader throughput (images/s) with the full default augmentation, the number to put next to
//! ultralytics' own dataloader (`crates/bench/scripts/ultra_loader_bench.py`, same data, workers, batch, imgsz).
//!
//!     bench-loader --data synthetic:2000 | DIR/data.yaml [--imgsz 640] [--batch 64] [--workers 16]
//!         [--batches 60] [--warmup 5] [--val] [--json OUT.json]
//!
//! Measures `yolo26_data::TrainLoader` (decode, ultralytics `load_image` resize, mosaic, random_perspective, HSV,
//! flips, collate; parallel on `workers` threads, batches built ahead in a background thread) from the first
//! batch after `--warmup` to the last of `--batches`; nothing is done with the batches. `--val` also times the
//! validation loader (rect batches, letterbox). One JSON line per loader on stdout, with the CPU accounting of the
//! timed span (`cpu`: user/system seconds per thread group, page faults, context switches).

use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use yolo26_bench::cpu_usage::CpuSnapshot;
use yolo26_data::{DataSource, Split, TrainLoader, TrainLoaderConfig, ValLoader, ValLoaderConfig};

#[derive(Parser)]
struct Args {
    /// synthetic[-easy][:N][@SEED] (in memory) or an ultralytics data.yaml.
    #[arg(long)]
    data: String,
    #[arg(long, default_value_t = 640)]
    imgsz: usize,
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Loader threads (default: all cores).
    #[arg(long)]
    workers: Option<usize>,
    #[arg(long, default_value_t = 60)]
    batches: usize,
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Also time the validation loader.
    #[arg(long)]
    val: bool,
    /// Also write the JSON lines to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn time_batches(
    mut it: impl Iterator<Item = Result<yolo26_data::Batch, yolo26_data::DataError>>,
    warmup: usize,
    batches: usize,
) -> Result<(usize, f64, serde_json::Value), Box<dyn std::error::Error>> {
    for _ in 0..warmup {
        it.next().ok_or("the epoch ended during the warm-up: use fewer --warmup batches or more images")??;
    }
    let cpu0 = CpuSnapshot::now();
    let t = Instant::now();
    let mut images = 0;
    for _ in 0..batches {
        match it.next() {
            Some(b) => images += b?.len(),
            None => break,
        }
    }
    let secs = t.elapsed().as_secs_f64();
    Ok((images, secs, CpuSnapshot::now().since(&cpu0)))
}

fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let workers = a.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let src = DataSource::parse(&a.data, None)?;
    let t = Instant::now();
    let train = Arc::new(src.open(Split::Train)?);
    eprintln!("{} (opened in {:.2} s)", train.summary.line("train: "), t.elapsed().as_secs_f64());
    let n_train = train.len();
    let cfg = TrainLoaderConfig { batch_size: a.batch, imgsz: a.imgsz, workers, ..Default::default() };
    let loader = TrainLoader::new(train, cfg)?;
    // Epochs chained, so a small dataset still gives enough batches.
    let epochs = (0..).map(|e| loader.epoch(e));
    let mut chained = epochs.flat_map(|it| -> Box<dyn Iterator<Item = _>> {
        match it {
            Ok(it) => Box::new(it),
            Err(e) => Box::new(std::iter::once(Err(e))),
        }
    });
    let (images, secs, cpu) = time_batches(&mut chained, a.warmup, a.batches)?;
    let mut lines = Vec::new();
    let line = serde_json::json!({
        "loader": "yolo26-data train", "imgsz": a.imgsz, "batch": a.batch, "workers": workers,
        "batches": a.batches, "images": images, "seconds": secs, "images_per_s": images as f64 / secs,
        "dataset_images": n_train, "data": a.data, "cpu": cpu,
    });
    println!("{line}");
    lines.push(line.to_string());
    if a.val {
        let val = Arc::new(src.open(Split::Val)?);
        let vl = ValLoader::new(
            val,
            ValLoaderConfig { batch_size: a.batch, imgsz: a.imgsz, workers, ..Default::default() },
        )?;
        let (images, secs, cpu) = time_batches(vl.iter()?, 0, a.batches)?;
        let line = serde_json::json!({
            "loader": "yolo26-data val", "imgsz": a.imgsz, "batch": a.batch, "workers": workers,
            "images": images, "seconds": secs, "images_per_s": images as f64 / secs, "data": a.data, "cpu": cpu,
        });
        println!("{line}");
        lines.push(line.to_string());
    }
    if let Some(p) = &a.json {
        std::fs::write(p, lines.join("\n") + "\n").map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}
