//! Speed of the COCO evaluator on 5000 images x 100 detections (run with `--ignored`, release).

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yolo26_eval::coco::{CocoAnnotation, CocoCategory, CocoDetection, CocoDets, CocoGt, CocoId, Params};

#[test]
#[ignore = "timing run: cargo test --release -p yolo26-eval --test coco_speed -- --ignored --nocapture"]
fn five_thousand_images() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (n_img, n_cat) = (5000i64, 80i64);
    let mut gt = CocoGt {
        images: (1..=n_img).map(CocoId::Int).collect(),
        categories: (1..=n_cat).map(|c| CocoCategory { id: CocoId::Int(c), name: format!("c{c}") }).collect(),
        ..Default::default()
    };
    let mut dets = CocoDets::default();
    let mut next = 1;
    for img in 1..=n_img {
        let mut boxes = Vec::new();
        for _ in 0..7 {
            let (w, h) = (rng.random_range(5.0..300.0f64), rng.random_range(5.0..300.0f64));
            let b = [rng.random_range(0.0..600.0), rng.random_range(0.0..400.0), w, h];
            let cat = rng.random_range(1..=n_cat);
            gt.annotations.push(CocoAnnotation {
                id: CocoId::Int(next),
                image_id: CocoId::Int(img),
                category_id: CocoId::Int(cat),
                bbox: b,
                area: w * h * 0.8,
                iscrowd: false,
            });
            next += 1;
            boxes.push((b, cat));
        }
        for j in 0..100 {
            let (b, cat) = boxes[j % boxes.len()];
            let mut jit = |v: f64, s: f64| v + rng.random_range(-s..s);
            let bbox = if j < 30 {
                [jit(b[0], 5.0), jit(b[1], 5.0), b[2], b[3]]
            } else {
                [jit(300.0, 300.0), jit(200.0, 200.0), 40.0, 40.0]
            };
            let category_id = if j < 30 { cat } else { rng.random_range(1..=n_cat) };
            dets.dets.push(CocoDetection {
                image_id: CocoId::Int(img),
                category_id: CocoId::Int(category_id),
                bbox,
                score: rng.random(),
            });
        }
    }
    let t = Instant::now();
    let e = yolo26_eval::evaluate(&gt, &dets, &Params::default()).unwrap();
    let dt = t.elapsed();
    println!("{}", e.summary_text());
    println!(
        "5000 images x 100 detections, 80 categories: {:.2} s on {} threads",
        dt.as_secs_f64(),
        rayon::current_num_threads()
    );
    assert!(e.stats[0] > 0.0);
}
