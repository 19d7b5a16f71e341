//! Dev check: write the training loader's samples of every epoch (the order the trainer consumes them) to
//! OUT/imgs.u8 (CHW RGB u8 per sample, concatenated) and OUT/labels.jsonl (one line per sample), so that another
//! trainer can be fed exactly these batches.
use std::io::Write;
use std::sync::Arc;
use yolo26_data::{DataSource, Split, TrainLoader, TrainLoaderConfig};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (data, imgsz, batch, epochs, close, out) = (
        &a[1],
        a[2].parse::<usize>().unwrap(),
        a[3].parse::<usize>().unwrap(),
        a[4].parse::<usize>().unwrap(),
        a[5].parse::<usize>().unwrap(),
        std::path::PathBuf::from(&a[6]),
    );
    std::fs::create_dir_all(&out).unwrap();
    let ds = Arc::new(DataSource::parse(data, None).unwrap().open(Split::Train).unwrap());
    let cfg =
        TrainLoaderConfig { batch_size: batch, imgsz, workers: 2, epochs, close_mosaic: close, ..Default::default() };
    let loader = TrainLoader::new(ds, cfg).unwrap();
    let mut imgs = std::io::BufWriter::new(std::fs::File::create(out.join("imgs.u8")).unwrap());
    let mut labels = std::io::BufWriter::new(std::fs::File::create(out.join("labels.jsonl")).unwrap());
    let mut n = 0;
    for e in 0..epochs {
        for b in loader.epoch(e).unwrap() {
            let b = b.unwrap();
            let per = b.images.len() / b.shape[0];
            for i in 0..b.shape[0] {
                imgs.write_all(&b.images[i * per..(i + 1) * per]).unwrap();
                let t: Vec<[f32; 5]> =
                    b.targets.iter().filter(|t| t[0] as usize == i).map(|t| [t[1], t[2], t[3], t[4], t[5]]).collect();
                writeln!(labels, "{{\"epoch\":{e},\"shape\":[{},{}],\"targets\":{:?}}}", b.shape[2], b.shape[3], t)
                    .unwrap();
                n += 1;
            }
        }
    }
    println!("{n} samples written to {}", out.display());
}
