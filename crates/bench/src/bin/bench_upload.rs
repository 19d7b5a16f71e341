//! How long a training batch takes to reach the GPU (`yolo26 train --profile`'s "upload" phase): a `[B, 3, S, S]`
//! u8 batch (what the loader collates) sent with each variant below, each call ended by a device sync, median of
//! `--runs` after one warm-up. Variants: `u8` = `yolo26_train::step::images_tensor` (u8 bytes in pieces of whole
//! images of at most `UPLOAD_CHUNK_BYTES`, `Tensor::cat` and `float() / 255` on the device), `u8-one` = the whole
//! batch as one u8 tensor then `float() / 255`, `f32-host` = host conversion (`host_unit_floats`) and an f32
//! upload, `u8-raw` = the u8 `from_data` of the whole batch alone.
//!
//! ```text
//! bench-upload --batch 64 --imgsz 640 --runs 10
//! ```
#[cfg(feature = "cuda")]
mod cuda {
    use std::time::Instant;

    use burn::backend::{Autodiff, Cuda};
    use burn::prelude::*;
    use burn::tensor::{DType, TensorData};
    use clap::Parser;
    use yolo26_train::step::{host_unit_floats, images_tensor};

    type B = Autodiff<Cuda>;

    #[derive(Parser)]
    pub struct Args {
        #[arg(long, default_value_t = 64)]
        batch: usize,
        #[arg(long, default_value_t = 640)]
        imgsz: usize,
        #[arg(long, default_value_t = 10)]
        runs: usize,
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    pub fn main() -> Result<(), Box<dyn std::error::Error>> {
        let a = Args::parse();
        let dev = burn::backend::cuda::CudaDevice::new(0);
        let shape = [a.batch, 3, a.imgsz, a.imgsz];
        let n: usize = shape.iter().product();
        let images: Vec<u8> = (0..n).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        type Variant<'a> = (String, Box<dyn Fn() -> Tensor<B, 4> + 'a>);
        let variants: Vec<Variant> = vec![
            ("u8".into(), Box::new(|| images_tensor::<B>(&images, shape, &dev))),
            (
                "u8-one".into(),
                Box::new(|| {
                    let t = Tensor::<B, 4, Int>::from_data(TensorData::new(images.clone(), shape), (&dev, DType::U8));
                    t.float().div_scalar(255.0)
                }),
            ),
            (
                "f32-host".into(),
                Box::new(|| Tensor::from_data(TensorData::new(host_unit_floats(&images), shape), &dev)),
            ),
            (
                "u8-raw".into(),
                Box::new(|| {
                    let t = Tensor::<B, 4, Int>::from_data(TensorData::new(images.clone(), shape), (&dev, DType::U8));
                    t.float().slice([0..1, 0..1, 0..1, 0..1])
                }),
            ),
        ];
        for (name, f) in &variants {
            let mut times = Vec::new();
            for r in 0..=a.runs {
                B::sync(&dev)?;
                let t = Instant::now();
                let x = f();
                B::sync(&dev)?;
                let ms = t.elapsed().as_secs_f64() * 1e3;
                drop(x);
                if r > 0 {
                    times.push(ms);
                }
            }
            let min = times.iter().copied().fold(f64::INFINITY, f64::min);
            println!("{name:>12}: median {:.2} ms, min {:.2} ms ({} MB u8)", median(times), min, n / 1_000_000);
        }
        Ok(())
    }
}

#[cfg(feature = "cuda")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    cuda::main()
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("bench-upload needs the cuda feature");
    std::process::exit(2);
}
