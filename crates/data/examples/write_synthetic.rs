//! Write the synthetic dataset in the ultralytics layout:
//! `cargo run --release -p yolo26-data --example write_synthetic -- OUT_DIR TRAIN_N VAL_N SEED [DUMP_JSON]`
//!
//! With `DUMP_JSON`, the written `data.yaml` is read back through `yolo26_data` and every split's entries (file,
//! `[h, w]`, classes, boxes as f32 bit patterns) are dumped there, for `tests/fixtures/check_synth_with_ultralytics.py`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 && args.len() != 6 {
        eprintln!("usage: write_synthetic OUT_DIR TRAIN_N VAL_N SEED [DUMP_JSON]");
        std::process::exit(2);
    }
    let parse = |s: &str, what: &str| -> u64 {
        s.parse().unwrap_or_else(|_| {
            eprintln!("{what} must be an unsigned integer, got '{s}'");
            std::process::exit(2)
        })
    };
    let (train_n, val_n, seed) = (parse(&args[2], "TRAIN_N"), parse(&args[3], "VAL_N"), parse(&args[4], "SEED"));
    let t = std::time::Instant::now();
    match yolo26_data::write_ultralytics(
        std::path::Path::new(&args[1]),
        yolo26_data::Recipe::Full,
        train_n as usize,
        val_n as usize,
        seed,
    ) {
        Ok(p) => {
            let dt = t.elapsed().as_secs_f64();
            println!(
                "{} ({} images in {dt:.2} s, {:.0} images/s)",
                p.display(),
                train_n + val_n,
                (train_n + val_n) as f64 / dt
            );
            if let Some(dump) = args.get(5) {
                if let Err(e) = dump_labels(&p, std::path::Path::new(dump)) {
                    eprintln!("error: {e}");
                    std::process::exit(1);
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

fn dump_labels(yaml: &std::path::Path, out: &std::path::Path) -> Result<(), yolo26_data::DataError> {
    use yolo26_data::{DataSource, Split};
    let src = DataSource::parse(&yaml.to_string_lossy(), None)?;
    let mut splits = serde_json::Map::new();
    for split in [Split::Train, Split::Val] {
        let ds = src.open(split)?;
        eprintln!("{}", ds.summary.line(&format!("{}: ", split.name())));
        let entries: Vec<serde_json::Value> = ds
            .entries
            .iter()
            .map(|e| {
                serde_json::json!({
                    "im_file": e.source.display_path(),
                    "shape": e.shape,
                    "cls": e.labels.cls,
                    "boxes_bits": e.labels.boxes.iter().map(|b| b.map(f32::to_bits)).collect::<Vec<_>>(),
                })
            })
            .collect();
        splits.insert(split.name().into(), entries.into());
    }
    let bytes = serde_json::to_vec(&splits).map_err(|e| yolo26_data::DataError::Spec(e.to_string()))?;
    std::fs::write(out, bytes).map_err(|e| yolo26_data::DataError::io(out, e))
}
