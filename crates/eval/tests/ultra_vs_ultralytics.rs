//! ultralytics 8.4.190 metrics against the real functions (fixtures from tests/fixtures/gen_ultra_cases.py).

use std::path::PathBuf;

use serde_json::Value;
use yolo26_eval::ultra::{
    ap_per_class, ap_per_class_with_order, box_iou, compute_ap, process_batch, smooth, ApPerClass, ConfusionMatrix,
    DetStats, Prediction, Target, Xyxy, IOUV,
};

fn load(name: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ultra").join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(p).expect("fixture")).expect("json")
}
fn f64s(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}
fn boxes(v: &Value) -> Vec<Xyxy> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let b = f64s(b);
            [b[0] as f32, b[1] as f32, b[2] as f32, b[3] as f32]
        })
        .collect()
}
fn classes(v: &Value) -> Vec<usize> {
    f64s(v).into_iter().map(|c| c as usize).collect()
}
fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() <= 1e-9 || (a.is_nan() && b.is_nan()), "{what}: {a} vs {b}");
}
fn close_all(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: length");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        close(*x, *y, &format!("{what}[{i}]"));
    }
}
fn check_curve(c: &[Vec<f64>], e: &Value, what: &str) {
    let sums = f64s(&e["row_sums"]);
    assert_eq!(c.len(), sums.len(), "{what} rows");
    for (i, row) in c.iter().enumerate() {
        close(row.iter().sum::<f64>(), sums[i], &format!("{what} row {i} sum"));
        let samples: Vec<f64> = row.iter().step_by(37).copied().collect();
        close_all(&samples, &f64s(&e["samples"][i]), &format!("{what} row {i}"));
    }
}
fn check_ap(r: &ApPerClass, e: &Value, name: &str) {
    close_all(&r.tp, &f64s(&e["tp"]), &format!("{name} tp"));
    close_all(&r.fp, &f64s(&e["fp"]), &format!("{name} fp"));
    close_all(&r.p, &f64s(&e["p"]), &format!("{name} p"));
    close_all(&r.r, &f64s(&e["r"]), &format!("{name} r"));
    close_all(&r.f1, &f64s(&e["f1"]), &format!("{name} f1"));
    let ap: Vec<f64> = r.ap.iter().flatten().copied().collect();
    let eap: Vec<f64> = e["ap"].as_array().unwrap().iter().flat_map(f64s).collect();
    close_all(&ap, &eap, &format!("{name} ap"));
    assert_eq!(r.unique_classes, classes(&e["unique_classes"]), "{name} unique classes");
    assert_eq!(r.max_f1_index as u64, e["max_f1_index"].as_u64().unwrap(), "{name} max F1 index");
    check_curve(&r.p_curve, &e["p_curve"], &format!("{name} p_curve"));
    check_curve(&r.r_curve, &e["r_curve"], &format!("{name} r_curve"));
    check_curve(&r.f1_curve, &e["f1_curve"], &format!("{name} f1_curve"));
    check_curve(&r.prec_values, &e["prec_values"], &format!("{name} prec_values"));
}

#[test]
fn iouv_is_torch_linspace() {
    let e = f64s(&load("fine")["expected"]["iouv"]);
    let mine: Vec<f64> = IOUV.iter().map(|&v| v as f64).collect();
    assert_eq!(mine, e);
}

#[test]
fn cases_equal_ultralytics() {
    for name in ["fine", "ties", "three_class"] {
        let f = load(name);
        let exp = &f["expected"];
        let nc = f["nc"].as_u64().unwrap() as usize;
        let mut stats = DetStats::default();
        let mut cm25 = ConfusionMatrix::new(nc);
        let mut cm001 = ConfusionMatrix::new(nc);
        for (k, im) in f["images"].as_array().unwrap().iter().enumerate() {
            let (gb, gc) = (boxes(&im["gt_boxes"]), classes(&im["gt_cls"]));
            let (pb, pc) = (boxes(&im["pred_boxes"]), classes(&im["pred_cls"]));
            let conf: Vec<f32> = f64s(&im["pred_conf"]).into_iter().map(|c| c as f32).collect();
            // box_iou, bit for bit (float32; the fixture's decimal read as f64 then rounded to f32 is exact)
            let e_iou: Vec<f32> = f64s(&exp["box_iou"][k]).into_iter().map(|v| v as f32).collect();
            if !gb.is_empty() && !pb.is_empty() {
                let iou: Vec<f32> = box_iou(&gb, &pb);
                assert_eq!(iou, e_iou, "{name} image {k} box_iou");
            }
            // _process_batch tp rows, exactly
            let tp = process_batch(&pb, &pc, &gb, &gc);
            let e_tp: Vec<Vec<bool>> = exp["tp"][k]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_array().unwrap().iter().map(|x| x.as_i64().unwrap() != 0).collect())
                .collect();
            let got: Vec<Vec<bool>> = tp.iter().map(|r| r.to_vec()).collect();
            assert_eq!(got, e_tp, "{name} image {k} tp");
            let preds: Vec<Prediction> =
                (0..pb.len()).map(|i| Prediction { bbox: pb[i], conf: conf[i], cls: pc[i] }).collect();
            let targets: Vec<Target> = (0..gb.len()).map(|i| Target { bbox: gb[i], cls: gc[i] }).collect();
            stats.add_image(&preds, &targets);
            cm25.process_batch(&preds, &targets, 0.25, 0.45).unwrap();
            cm001.process_batch(&preds, &targets, 0.001, 0.45).unwrap();
        }
        // Confusion matrices, exactly.
        for (key, cm) in [("0.25", &cm25), ("0.001", &cm001)] {
            let e: Vec<f64> = exp["confusion"][key].as_array().unwrap().iter().flat_map(f64s).collect();
            assert_eq!(cm.matrix, e, "{name} confusion matrix conf={key}");
            let (tp, fp) = cm.tp_fp();
            assert_eq!(tp, f64s(&exp["confusion_tp_fp"][key][0]));
            assert_eq!(fp, f64s(&exp["confusion_tp_fp"][key][1]));
        }
        // ap_per_class with numpy's own order (ties included): everything equal.
        let order: Vec<usize> =
            exp["argsort_order"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
        let r = ap_per_class_with_order(&order, &stats.tp, &stats.conf, &stats.pred_cls, &stats.target_cls);
        check_ap(&r, &exp["ap_per_class"], name);
        // The default stable order: equal where numpy's order is the stable one (tie-free data).
        let m = stats.finish(nc);
        if exp["stable_equals_numpy_order"].as_bool().unwrap() {
            check_ap(&m.results, &exp["ap_per_class"], name);
            let em = &exp["metrics"];
            close(m.mp(), em["mp"].as_f64().unwrap(), "mp");
            close(m.mr(), em["mr"].as_f64().unwrap(), "mr");
            close(m.map50(), em["map50"].as_f64().unwrap(), "map50");
            close(m.map75(), em["map75"].as_f64().unwrap(), "map75");
            close(m.map(), em["map"].as_f64().unwrap(), "map");
            close(m.fitness(), em["fitness"].as_f64().unwrap(), "fitness");
            close_all(&m.maps(), &f64s(&em["maps"]), "maps");
            close_all(&m.ap50(), &f64s(&em["ap50"]), "ap50");
            close_all(&m.ap(), &f64s(&em["ap"]), "ap");
            let rd = m.results_dict();
            close(rd.map, em["results_dict"]["metrics/mAP50-95(B)"].as_f64().unwrap(), "results_dict map");
            close(rd.precision, em["results_dict"]["metrics/precision(B)"].as_f64().unwrap(), "results_dict p");
            close(rd.fitness, em["results_dict"]["fitness"].as_f64().unwrap(), "results_dict fitness");
            let nt: Vec<usize> =
                em["nt_per_class"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
            assert_eq!(m.nt_per_class, nt);
        }
        println!("{name}: mAP50-95 {:.6} (stable order) / {:.6} (numpy order)", m.map(), {
            let v: Vec<f64> = r.ap.iter().flatten().copied().collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        });
    }
}

#[test]
fn smooth_and_compute_ap_equal_ultralytics() {
    let h = load("helpers");
    let y = f64s(&h["y"]);
    // Within 1e-12, not bit for bit: serde_json's default float parser (its `float_roundtrip` feature would change
    // serde_json for the whole workspace) may read the fixture's decimals 1 ulp off.
    let within = |a: &[f64], b: &[f64], what: &str| {
        assert_eq!(a.len(), b.len(), "{what}: length");
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x - y).abs() <= 1e-12, "{what}[{i}]: {x} vs {y}");
        }
    };
    let s: Vec<f64> = smooth(&y, 0.1).into_iter().step_by(7).collect();
    within(&s, &f64s(&h["smooth_01"]), "smooth(y, 0.1)");
    let s: Vec<f64> = smooth(&y, 0.05).into_iter().step_by(7).collect();
    within(&s, &f64s(&h["smooth_005"]), "smooth(y, 0.05)");
    let (ap, mpre, mrec) = compute_ap(&f64s(&h["recall"]), &f64s(&h["precision"]));
    within(&[ap], &[h["ap"].as_f64().unwrap()], "compute_ap ap");
    within(&mpre, &f64s(&h["mpre"]), "compute_ap mpre");
    within(&mrec, &f64s(&h["mrec"]), "compute_ap mrec");
    within(&[compute_ap(&[], &[]).0], &[h["ap_empty"].as_f64().unwrap()], "compute_ap of nothing");
}

#[test]
fn no_targets_and_bad_classes() {
    let r = ap_per_class(&[[true; 10]], &[0.5], &[0], &[]);
    assert!(r.unique_classes.is_empty() && r.ap.is_empty());
    assert_eq!(r.prec_values.len(), 1);
    let mut cm = ConfusionMatrix::new(2);
    let p = Prediction { bbox: [0.0, 0.0, 10.0, 10.0], conf: 0.9, cls: 2 };
    let err = cm.process_batch(&[p], &[], 0.25, 0.45).unwrap_err().to_string();
    assert!(err.contains("detections[0].cls = 2"), "{err}");
    assert!(cm.matrix.iter().all(|&v| v == 0.0));
}
