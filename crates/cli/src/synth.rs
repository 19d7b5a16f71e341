//! `yolo26 synth`: the built-in synthetic dataset (`--data synthetic:N@SEED`, with `--easy`
//! `synthetic-easy:N@SEED`) written in the ultralytics layout,
//! so ultralytics trains and validates on the very same pixels (lossless PNG) and labels.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;

#[derive(Args, Debug, Clone)]
pub struct SynthArgs {
    /// Output directory (created): data.yaml, images/{train,val}/, labels/{train,val}/, val_coco.json.
    #[arg(long)]
    pub out: PathBuf,
    /// Training images.
    #[arg(long, default_value_t = 1000)]
    pub train: usize,
    /// Validation images (default: train / 5, the split of `--data synthetic:N`).
    #[arg(long)]
    pub val: Option<usize>,
    /// Seed (the SEED of synthetic:N@SEED).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The easy recipe (`synthetic-easy`: 3 classes, large objects, plain backgrounds) instead of the full one.
    #[arg(long)]
    pub easy: bool,
}

pub fn run(a: SynthArgs) -> anyhow::Result<()> {
    if a.train == 0 {
        bail!("--train must be at least 1");
    }
    let val = a.val.unwrap_or((a.train / 5).max(1));
    if val == 0 {
        bail!("--val must be at least 1");
    }
    let t = std::time::Instant::now();
    let recipe = if a.easy { yolo26_data::Recipe::Easy } else { yolo26_data::Recipe::Full };
    let yaml = yolo26_data::write_ultralytics(&a.out, recipe, a.train, val, a.seed)?;
    println!(
        "wrote {} train + {val} val images to {} in {:.1} s; data: {}",
        a.train,
        a.out.display(),
        t.elapsed().as_secs_f64(),
        yaml.display()
    );
    Ok(())
}
