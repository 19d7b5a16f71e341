//! `yolo26 plot-batch`: the first training batches as labelled mosaics, like ultralytics' `train_batch0.jpg`
//! (`plot_training_samples` → `plot_images`): what the augmentation pipeline feeds the model.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use yolo26_augment::plot_batch;
use yolo26_data::{DataSource, Split, TrainLoader, TrainLoaderConfig};

#[derive(Args, Debug, Clone)]
pub struct PlotBatchArgs {
    /// Dataset: an ultralytics data.yaml, a COCO instances .json (with --images), or synthetic[-easy][:N][@SEED].
    #[arg(long)]
    pub data: String,
    #[arg(long)]
    pub images: Option<PathBuf>,
    #[arg(long, default_value_t = 640)]
    pub imgsz: usize,
    #[arg(long, default_value_t = 16)]
    pub batch: usize,
    /// How many batches to plot (train_batch0.jpg, train_batch1.jpg, ...).
    #[arg(long, default_value_t = 3)]
    pub batches: usize,
    /// Epoch whose batches to plot (mosaic is off in the last 10 of --epochs, as close_mosaic does).
    #[arg(long, default_value_t = 0)]
    pub epoch: usize,
    #[arg(long, default_value_t = 100)]
    pub epochs: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output directory.
    #[arg(long, default_value = "runs/plot")]
    pub out: PathBuf,
}

pub fn run(a: PlotBatchArgs) -> anyhow::Result<()> {
    if a.batch == 0 || a.imgsz == 0 || !a.imgsz.is_multiple_of(32) {
        bail!("--batch must be >= 1 and --imgsz a positive multiple of 32");
    }
    let src = DataSource::parse(&a.data, a.images.as_deref())?;
    let ds = src.open(Split::Train)?;
    eprintln!("{}", ds.summary.line("train: "));
    let names = ds.names.clone();
    let cfg =
        TrainLoaderConfig { batch_size: a.batch, imgsz: a.imgsz, seed: a.seed, epochs: a.epochs, ..Default::default() };
    let loader = TrainLoader::new(Arc::new(ds), cfg)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    for (i, b) in loader.epoch(a.epoch)?.take(a.batches).enumerate() {
        let b = b?;
        let path = a.out.join(format!("train_batch{i}.jpg"));
        plot_batch(&b.samples()?, &names, &path)?;
        println!("{}", path.display());
    }
    Ok(())
}
