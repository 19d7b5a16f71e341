//! `transformer-classifier`: trains a small transformer encoder whose attention is `kernels-cubecl`'s
//! `FlashMultiHeadAttention` on a generated "which marker comes first?" task with burn-train, on the backend
//! chosen by `--device` (`cpu` = Flex; `wgpu`, `cuda` when compiled in), and prints the final validation accuracy.

use std::path::PathBuf;
use std::process::ExitCode;

use burn::backend::Autodiff;
use clap::Parser;
use kernels_cubecl::attention::FlashAttentionBackend;
use transformer_classifier::{default_model, train, TrainConfig};

#[derive(Parser, Debug)]
#[command(about = "Transformer classifier on FlashMultiHeadAttention, trained with burn-train")]
struct Args {
    /// Backend: cpu (Flex), wgpu (needs the `wgpu` feature) or cuda (needs the `cuda` feature).
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Training epochs.
    #[arg(long, default_value_t = 4)]
    epochs: usize,
    /// Batch size.
    #[arg(long, default_value_t = 32)]
    batch_size: usize,
    /// Length of the generated sequences (≥ 2).
    #[arg(long, default_value_t = 16)]
    seq_len: usize,
    /// Generated training sequences.
    #[arg(long, default_value_t = 4096)]
    train_size: usize,
    /// AdamW learning rate.
    #[arg(long, default_value_t = 2e-3)]
    lr: f64,
    /// Artifact directory (config.json, metric logs in train/ and valid/, checkpoint/, model.mpk, experiment.log);
    /// default: <temp dir>/transformer-classifier. Its train/ and valid/ subdirectories are replaced.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn run<B>(args: &Args, device: B::Device) -> Result<(), String>
where
    B: burn::tensor::backend::AutodiffBackend + FlashAttentionBackend,
    B::InnerBackend: FlashAttentionBackend,
{
    if args.seq_len < 2 || args.batch_size == 0 || args.epochs == 0 {
        return Err("--seq-len must be ≥ 2, --batch-size and --epochs ≥ 1".into());
    }
    let config = TrainConfig::new(default_model(args.seq_len), args.seq_len)
        .with_epochs(args.epochs)
        .with_batch_size(args.batch_size)
        .with_train_size(args.train_size)
        .with_learning_rate(args.lr);
    let out = args.out.clone().unwrap_or_else(|| std::env::temp_dir().join("transformer-classifier"));
    println!(
        "device {}, {} epochs, batch {}, seq_len {}, {} train / {} valid sequences, artifacts in {}",
        args.device,
        config.epochs,
        config.batch_size,
        config.seq_len,
        config.train_size,
        config.valid_size,
        out.display()
    );
    let report = train::<B>(&config, device, out, true);
    println!(
        "final validation accuracy: {:.2}% (chance 50%), {} epochs in {:.1} s",
        report.final_valid_accuracy, config.epochs, report.seconds
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.device.as_str() {
        "cpu" => run::<Autodiff<burn::backend::Flex>>(&args, burn::backend::flex::FlexDevice),
        #[cfg(feature = "wgpu")]
        "wgpu" => run::<Autodiff<burn::backend::Wgpu>>(&args, burn::backend::wgpu::WgpuDevice::DefaultDevice),
        #[cfg(feature = "cuda")]
        "cuda" => run::<Autodiff<burn::backend::Cuda>>(&args, burn::backend::cuda::CudaDevice::new(0)),
        #[allow(unreachable_patterns)]
        kind @ ("wgpu" | "cuda") => {
            Err(format!("--device {kind}: built without the '{kind}' feature (rebuild with --features {kind})"))
        }
        other => Err(format!("--device {other}: expected cpu, wgpu or cuda")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
