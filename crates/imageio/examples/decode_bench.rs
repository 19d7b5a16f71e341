//! Decode speed on one core: `cargo run --release -p yolo26-imageio --example decode_bench -- IMAGE [N] [--dump OUT.rgb]`
//! prints images/s for `yolo26_imageio::decode` (N decodes, default 200); `--dump` writes the RGB bytes.

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().ok_or("usage: decode_bench IMAGE [N] [--dump OUT.rgb]")?;
    let n: usize = args.get(1).filter(|a| !a.starts_with("--")).map(|a| a.parse()).transpose()?.unwrap_or(200);
    let bytes = std::fs::read(path)?;
    let d = yolo26_imageio::decode_report(&bytes)?;
    println!("{path}: {}x{} {:?}, warnings {:?}", d.image.width(), d.image.height(), d.info.format, d.warnings);
    if let Some(i) = args.iter().position(|a| a == "--dump") {
        std::fs::write(args.get(i + 1).ok_or("--dump needs a path")?, d.image.as_raw())?;
    }
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(yolo26_imageio::decode(std::hint::black_box(&bytes))?);
    }
    let s = t.elapsed().as_secs_f64();
    println!("{n} decodes in {s:.3} s: {:.1} images/s, {:.2} ms/image", n as f64 / s, 1e3 * s / n as f64);
    Ok(())
}
