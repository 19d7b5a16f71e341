//! Each plot writes a decodable, non-blank PNG (atomically, no temporary file left behind).

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yolo26_eval::plots::{plot_confusion_matrix, plot_mc_curve, plot_pr_curve};
use yolo26_eval::ultra::{ap_per_class, ConfusionMatrix, Prediction, Target, NIOU};

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("yolo26-eval-plots-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Decodes the PNG, checks its size, that it is not one flat colour, that it has dark (text/axis) and coloured
/// pixels, and that no temporary file remains.
fn check_png(path: &Path, w: u32, h: u32) {
    let img = image::open(path).expect("decodable PNG").to_rgb8();
    assert_eq!((img.width(), img.height()), (w, h));
    let first = *img.get_pixel(0, 0);
    let differing = img.pixels().filter(|p| **p != first).count();
    assert!(differing > 5000, "{}: only {differing} non-background pixels", path.display());
    let dark = img.pixels().filter(|p| p.0.iter().all(|&c| c < 80)).count();
    assert!(dark > 500, "{}: no text/axes ({dark} dark pixels)", path.display());
    let blue = img.pixels().filter(|p| p.0[2] > 150 && p.0[0] < 100).count();
    assert!(blue > 500, "{}: no blue curve/cells ({blue})", path.display());
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

fn random_results() -> (yolo26_eval::ultra::ApPerClass, Vec<String>) {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let n = 400;
    let nc = 4;
    let pred_cls: Vec<usize> = (0..n).map(|_| rng.random_range(0..nc)).collect();
    let conf: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
    let tp: Vec<[bool; NIOU]> = conf
        .iter()
        .map(|&c| {
            let q: f64 = rng.random::<f64>() * 0.6 + c * 0.5;
            std::array::from_fn(|j| q > 0.45 + 0.04 * j as f64)
        })
        .collect();
    let target_cls: Vec<usize> = (0..300).map(|i| i % nc).collect();
    let names = (0..nc).map(|i| format!("class{i}")).collect();
    (ap_per_class(&tp, &conf, &pred_cls, &target_cls), names)
}

#[test]
fn pr_and_mc_curves() {
    let (r, names) = random_results();
    assert!(r.ap.iter().any(|a| a[0] > 0.1), "test data should give a visible curve");
    let d = out_dir("curves");
    let p = d.join("BoxPR_curve.png");
    plot_pr_curve(&p, &r.px, &r.prec_values, &r.ap, &names).unwrap();
    check_png(&p, 1350, 900);
    for (name, ylabel, curve) in [
        ("BoxF1_curve.png", "F1", &r.f1_curve),
        ("BoxP_curve.png", "Precision", &r.p_curve),
        ("BoxR_curve.png", "Recall", &r.r_curve),
    ] {
        let p = d.join(name);
        plot_mc_curve(&p, &r.px, curve, &names, "Confidence", ylabel).unwrap();
        check_png(&p, 1350, 900);
    }
    // Many classes: no legend, grey lines.
    let many: Vec<String> = (0..30).map(|i| format!("c{i}")).collect();
    let rows: Vec<Vec<f64>> = (0..30).map(|i| r.prec_values[i % r.prec_values.len()].clone()).collect();
    let aps = vec![[0.5; NIOU]; 30];
    let p = d.join("many.png");
    plot_pr_curve(&p, &r.px, &rows, &aps, &many).unwrap();
    check_png(&p, 1350, 900);
    if std::env::var_os("KEEP_PLOTS").is_none() {
        std::fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn confusion_matrix_heat_map() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let d = out_dir("cm");
    for (nc, file) in [(5usize, "cm5.png"), (120usize, "cm120.png")] {
        let mut cm = ConfusionMatrix::new(nc);
        for _ in 0..50 {
            let targets: Vec<Target> = (0..8)
                .map(|_| {
                    let (x, y) = (rng.random_range(0.0..500.0f32), rng.random_range(0.0..500.0f32));
                    Target { bbox: [x, y, x + 60.0, y + 60.0], cls: rng.random_range(0..nc) }
                })
                .collect();
            let preds: Vec<Prediction> = targets
                .iter()
                .map(|t| Prediction {
                    bbox: [t.bbox[0] + 3.0, t.bbox[1], t.bbox[2] + 3.0, t.bbox[3]],
                    conf: rng.random_range(0.3..1.0),
                    cls: if rng.random::<f64>() < 0.8 { t.cls } else { rng.random_range(0..nc) },
                })
                .collect();
            cm.process_batch(&preds, &targets, 0.25, 0.45).unwrap();
        }
        let names: Vec<String> = (0..nc).map(|i| format!("class{i}")).collect();
        for normalize in [true, false] {
            let p = d.join(format!("{normalize}-{file}"));
            plot_confusion_matrix(&p, &cm, &names, normalize).unwrap();
            check_png(&p, 1200, 900);
        }
    }
    if std::env::var_os("KEEP_PLOTS").is_none() {
        std::fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn unwritable_path_is_an_error() {
    let (r, names) = random_results();
    let p = Path::new("/nonexistent-dir-yolo26/x.png");
    let err = plot_pr_curve(p, &r.px, &r.prec_values, &r.ap, &names).unwrap_err().to_string();
    assert!(err.contains("nonexistent-dir-yolo26"), "{err}");
}
