//! `yolo26 info`: layer table, parameters, GFLOPs.

use burn::backend::Flex;
use clap::Args;
use yolo26_model::info::{count_params, gflops, layer_table};
use yolo26_model::{Scale, Yolo26Config};

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Model scale: n, s, m, l or x.
    #[arg(long, default_value = "n")]
    pub model: Scale,
    /// Number of classes.
    #[arg(long, default_value_t = 80)]
    pub nc: usize,
    /// Input size for the GFLOPs figure.
    #[arg(long, default_value_t = 640)]
    pub imgsz: usize,
}

pub fn run(a: InfoArgs) -> anyhow::Result<()> {
    if a.nc == 0 {
        anyhow::bail!("--nc must be at least 1");
    }
    let cfg = Yolo26Config::new(a.model, a.nc);
    let model = cfg.init::<Flex>(&Default::default());
    println!("{:>3} {:>16} {:>2} {:>10}  {:<10} arguments", "", "from", "n", "params", "module");
    for r in layer_table(&model, &cfg) {
        println!("{:>3} {:>16} {:>2} {:>10}  {:<10} {}", r.index, r.from, r.repeats, r.params, r.module, r.args);
    }
    let params = count_params(&model);
    println!(
        "YOLO26{} summary: {} parameters (both heads), {:.1} GFLOPs at {}",
        a.model,
        group(params),
        gflops(&model, a.imgsz),
        a.imgsz
    );
    Ok(())
}

fn group(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
