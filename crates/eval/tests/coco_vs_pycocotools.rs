//! The COCO evaluator against pycocotools 2.0.11 (fixtures from tests/fixtures/gen_coco_cases.py).

use std::path::PathBuf;

use yolo26_eval::coco::{CocoDets, CocoGt, CocoId, Params};
use yolo26_eval::evaluate;

fn fixture(name: &str) -> serde_json::Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/coco").join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(&p).expect("fixture file")).expect("fixture json")
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(|x| x.as_f64().expect("number")).collect()
}

const CASES: [&str; 5] = ["mixed", "random_ties", "random_fine", "dense", "quirks"];

#[test]
fn all_cases_equal_pycocotools() {
    let mut max_diff = 0.0f64;
    for name in CASES {
        let f = fixture(name);
        let gt = CocoGt::from_json_bytes(&serde_json::to_vec(&f["gt"]).unwrap(), name).unwrap();
        let dt = CocoDets::from_json_bytes(&serde_json::to_vec(&f["dt"]).unwrap(), name).unwrap();
        let e = evaluate(&gt, &dt, &Params::default()).unwrap();
        let exp = &f["expected"];
        let stats = floats(&exp["stats"]);
        for (i, (a, b)) in e.stats.iter().zip(&stats).enumerate() {
            let d = (a - b).abs();
            max_diff = max_diff.max(d);
            assert!(d <= 1e-12, "{name}: stats[{i}] = {a} vs pycocotools {b}");
        }
        // The printed lines, character for character.
        let lines: Vec<String> =
            exp["summary"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect();
        assert_eq!(e.summary_text(), lines.join("\n") + "\n", "{name}: summary text");
        // Per-category AP.
        let cats = exp["per_category"].as_array().unwrap();
        assert_eq!(cats.len(), e.per_category.len(), "{name}");
        for (c, r) in cats.iter().zip(&e.per_category) {
            let id: CocoId = serde_json::from_value(c["id"].clone()).unwrap();
            assert_eq!(id, r.id);
            for (key, got) in [("ap", r.ap), ("ap50", r.ap50)] {
                let want = c[key].as_f64().unwrap();
                max_diff = max_diff.max((got - want).abs());
                assert!((got - want).abs() <= 1e-12, "{name}: cat {id} {key} {got} vs {want}");
            }
        }
        // recall [T,K,A,M] and precision summed over R.
        let acc = &e.accumulated;
        let rec = floats(&exp["recall"]);
        assert_eq!(rec.len(), acc.recall.len());
        for (i, (a, b)) in acc.recall.iter().zip(&rec).enumerate() {
            max_diff = max_diff.max((a - b).abs());
            assert!((a - b).abs() <= 1e-12, "{name}: recall[{i}] {a} vs {b}");
        }
        let [t_n, r_n, k_n, a_n, m_n] = acc.counts;
        let ps = floats(&exp["precision_rsum"]);
        let mut i = 0;
        for t in 0..t_n {
            for k in 0..k_n {
                for a in 0..a_n {
                    for m in 0..m_n {
                        let s: f64 = (0..r_n).map(|r| acc.precision[acc.p_index(t, r, k, a, m)]).sum();
                        assert!(
                            (s - ps[i]).abs() <= 1e-9,
                            "{name}: precision[{t},:,{k},{a},{m}].sum() {s} vs {}",
                            ps[i]
                        );
                        i += 1;
                    }
                }
            }
        }
        println!("{name}: AP {:.6} AP50 {:.6} AR100 {:.6}", e.stats[0], e.stats[1], e.stats[8]);
    }
    println!("max |rust - pycocotools| over stats, per-category AP and recall: {max_diff:e}");
}

#[test]
fn stats_json_key_order() {
    let f = fixture("mixed");
    let gt = CocoGt::from_json_bytes(&serde_json::to_vec(&f["gt"]).unwrap(), "mixed").unwrap();
    let dt = CocoDets::from_json_bytes(&serde_json::to_vec(&f["dt"]).unwrap(), "mixed").unwrap();
    let e = evaluate(&gt, &dt, &Params::default()).unwrap();
    let s = e.stats_json();
    let keys = [
        "map",
        "map50",
        "map75",
        "map_small",
        "map_medium",
        "map_large",
        "mar_1",
        "mar_10",
        "mar_100",
        "mar_small",
        "mar_medium",
        "mar_large",
    ];
    let mut pos = 0;
    for k in keys {
        let at = s[pos..].find(&format!("\"{k}\"")).unwrap_or_else(|| panic!("key {k} missing or out of order"));
        pos += at + k.len();
    }
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    // serde_json's default float parser may be 1 ulp off (its `float_roundtrip` feature is not enabled: it would
    // change serde_json for the whole workspace, Burn and CubeCL included).
    assert!((v["map"].as_f64().unwrap() - e.stats[0]).abs() <= 1e-15);
    assert!((v["mar_large"].as_f64().unwrap() - e.stats[11]).abs() <= 1e-15);
    // The category without GT gets -1; detections of unknown categories are counted (none here).
    assert_eq!(e.per_category.iter().find(|c| c.name == "nogt").unwrap().ap, -1.0);
    assert_eq!(e.n_dets_unknown_category, 0);
}

#[test]
fn bad_input_errors_name_the_element() {
    let gt = br#"{"images":[{"id":1}],"categories":[{"id":1,"name":"a"}],
        "annotations":[{"id":1,"image_id":1,"category_id":1,"bbox":[0,0,10,10],"area":100,"iscrowd":0},
                       {"id":2,"image_id":1,"category_id":1,"bbox":[0,0,10,10],"iscrowd":0}]}"#;
    let err = CocoGt::from_json_bytes(gt, "gt.json").unwrap_err().to_string();
    assert!(err.contains("gt.json: annotations[1]") && err.contains("area"), "{err}");
    let gt = br#"{"images":[{"id":1}],"categories":[{"id":1}],
        "annotations":[{"id":1,"image_id":7,"category_id":1,"bbox":[0,0,10,10],"area":100,"iscrowd":0}]}"#;
    let err = CocoGt::from_json_bytes(gt, "gt.json").unwrap_err().to_string();
    assert!(err.contains("annotations[0].image_id = 7"), "{err}");
    let gt =
        CocoGt::from_json_bytes(br#"{"images":[{"id":1}],"categories":[{"id":1}],"annotations":[]}"#, "g").unwrap();
    let dt = br#"[{"image_id":1,"category_id":1,"bbox":[0,0,1,1],"score":0.5},{"image_id":1,"category_id":1,"bbox":[0,0,1],"score":0.5}]"#;
    let err = CocoDets::from_json_bytes(dt, "dt.json").unwrap_err().to_string();
    assert!(err.contains("dt.json: detections[1]"), "{err}");
    let dt =
        CocoDets::from_json_bytes(br#"[{"image_id":3,"category_id":1,"bbox":[0,0,1,1],"score":0.5}]"#, "d").unwrap();
    let err = evaluate(&gt, &dt, &Params::default()).unwrap_err().to_string();
    assert!(err.contains("detections[0].image_id = 3"), "{err}");
    let err = yolo26_eval::eval_files(std::path::Path::new("/no/such/gt.json"), std::path::Path::new("x")).unwrap_err();
    assert!(err.to_string().contains("/no/such/gt.json"), "{err}");
}
