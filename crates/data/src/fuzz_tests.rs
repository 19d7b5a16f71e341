//! Property-based fuzzing of the text parsers (`cargo test --release ... fuzz_`): label files
//! ([`crate::labels::parse_label_text`]) and `data.yaml` ([`crate::config::parse_data_yaml`]), on arbitrary text and
//! on valid text mutated with tokens that parsers trip on (numbers out of range, NaN, Python line breaks, YAML
//! anchors, tags, flow syntax). Fixed seed and bounded case counts: a run reproduces exactly and takes seconds.
//!
//! Properties: no panic; an accepted label file has one class per box, classes below `nc`, finite normalised
//! values; an accepted YAML has 1..=[`MAX_CLASSES`] names and non-empty absolute train/val sources; a refused YAML
//! names the file.

use std::path::Path;

use proptest::collection::vec;
use proptest::prelude::*;
use yolo26_fuzzkit::config;

use crate::config::{parse_data_yaml, MAX_CLASSES};
use crate::labels::{parse_label_text, LabelStatus};

/// Text edits; positions are taken modulo the current number of characters.
#[derive(Clone, Debug)]
enum Edit {
    Insert(usize, &'static str),
    Remove(usize, usize),
    /// Copy a run of characters over another position.
    Copy(usize, usize, usize),
}

fn edit(tokens: &'static [&'static str]) -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), proptest::sample::select(tokens)).prop_map(|(i, t)| Edit::Insert(i, t)),
        2 => (any::<usize>(), 1usize..8).prop_map(|(i, n)| Edit::Remove(i, n)),
        1 => (any::<usize>(), any::<usize>(), 1usize..24).prop_map(|(a, b, n)| Edit::Copy(a, b, n)),
    ]
}

fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut c: Vec<char> = text.chars().collect();
    for e in edits {
        let len = c.len();
        match e {
            Edit::Insert(i, t) => {
                let at = i % (len + 1);
                c.splice(at..at, t.chars());
            }
            Edit::Remove(i, n) if len > 0 => {
                let at = i % len;
                c.drain(at..(at + n).min(len));
            }
            Edit::Copy(from, to, n) if len > 0 => {
                let (from, to) = (from % len, to % len);
                let n = (*n).min(len - from).min(len - to);
                c.copy_within(from..from + n, to);
            }
            _ => {}
        }
    }
    c.into_iter().collect()
}

const LABEL_TOKENS: &[&str] = &[
    " ",
    "  ",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "\u{2028}",
    "\u{85}",
    "\u{feff}",
    "\u{b}",
    "-",
    "+",
    ".",
    "e",
    "E",
    "0",
    "1",
    "9",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e309",
    "-1e309",
    "1e-50",
    "-0",
    "-0.005",
    "-0.02",
    "1.01",
    "1.0100001",
    "4294967296",
    "18446744073709551616",
    "99999999999999999999",
    "0x1",
    "1_0",
    "é",
    "\0",
    "0 0.5 0.5 0.1 0.1",
    "0 0.1 0.1 0.2 0.2 0.3 0.1",
    "2.5",
];

/// A valid label file of up to 8 rows for `nc` = 10: boxes, or (all rows) polygons.
fn valid_label_text() -> impl Strategy<Value = String> {
    let unit = || 0.0f32..=1.0;
    let boxes = vec((0u32..10, unit(), unit(), unit(), unit()), 0..8)
        .prop_map(|rows| rows.iter().map(|(c, x, y, w, h)| format!("{c} {x} {y} {w} {h}\n")).collect::<String>());
    let polygons = vec((0u32..10, vec((unit(), unit()), 3..6)), 1..5).prop_map(|rows| {
        let row = |(c, pts): &(u32, Vec<(f32, f32)>)| {
            let pts: Vec<String> = pts.iter().map(|(x, y)| format!("{x} {y}")).collect();
            format!("{c} {}\n", pts.join(" "))
        };
        rows.iter().map(row).collect::<String>()
    });
    prop_oneof![boxes, polygons]
}

fn check_labels(text: &str, nc: usize) {
    let Ok(p) = parse_label_text(text, nc) else { return };
    let l = &p.labels;
    assert_eq!(l.cls.len(), l.boxes.len());
    assert_eq!(p.status == LabelStatus::Empty, l.is_empty(), "{p:?}");
    assert!(l.cls.iter().all(|&c| (c as usize) < nc), "{:?} with nc {nc}", l.cls);
    for b in &l.boxes {
        assert!(b.iter().all(|v| v.is_finite() && *v >= -0.01 && *v <= 1.01), "{b:?} from {text:?}");
    }
}

const YAML_TOKENS: &[&str] = &[
    "\n",
    "\n  ",
    ": ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    ", ",
    "'",
    "\"",
    "&a ",
    "*a",
    "<<: *a\n",
    "!!binary ",
    "!!float ",
    "!!str ",
    "!custom ",
    "nc: ",
    "names: ",
    "train: ",
    "val: ",
    "validation: ",
    "test: ",
    "path: ",
    "~",
    "null",
    "1e30",
    "-1",
    "0",
    "3.0",
    "65537",
    "99999999999999999999",
    "\t",
    "#",
    "|\n  ",
    ">\n  ",
    "..",
    "../",
    "/",
    "\0",
    "é",
    "? ",
    "---\n",
    "...\n",
    "%YAML 1.2\n",
];

const YAMLS: &[&str] = &[
    "path: ../datasets/coco8\ntrain: images/train\nval: images/val\nnames:\n  0: person\n  1: bicycle\n",
    "train: [a.txt, b.txt]\nvalidation: v\nnc: 3\n",
    "train: t\nval: v\nnames: [cat, dog, 'traffic light']\nnc: 3\ntest: ''\ndownload: https://x\n",
    "train: &t images/train\nval: *t\nnames: {0: a, '1': b}\n",
    "path: /\ntrain: ../t\nval: [v1, v2]\nnames: [true, 1.5, null]\n",
];

fn check_yaml(text: &str) {
    let file = Path::new("/nonexistent-yolo26-fuzz/data.yaml");
    match parse_data_yaml(text, file) {
        Ok(c) => {
            assert!(!c.names.is_empty() && c.names.len() <= MAX_CLASSES, "{} names", c.names.len());
            assert!(!c.train.is_empty() && !c.val.is_empty());
            assert!(c.train.iter().chain(&c.val).chain(&c.test).all(|p| p.is_absolute()), "{c:?}");
        }
        Err(e) => assert!(e.to_string().contains("data.yaml"), "{e}"),
    }
}

proptest! {
    #![proptest_config(config(50_000))]

    /// Arbitrary Unicode text and arbitrary numeric-looking text as a label file.
    #[test]
    fn fuzz_labels_arbitrary(
        text in prop_oneof![any::<String>(), "[-+0-9.eE \n\r\tnaif]{0,200}"],
        nc in 0usize..12,
    ) {
        check_labels(&text, nc);
    }

    /// Valid label files (which must parse) and their mutations (which must not panic).
    #[test]
    fn fuzz_labels_mutated(text in valid_label_text(), edits in vec(edit(LABEL_TOKENS), 0..6), nc in 1usize..12) {
        let p = parse_label_text(&text, 10);
        prop_assert!(p.is_ok(), "valid text refused: {:?}: {:?}", text, p);
        check_labels(&mutate(&text, &edits), nc);
    }

    /// Arbitrary text, and valid `data.yaml` files mutated with YAML syntax and out-of-range values.
    #[test]
    fn fuzz_data_yaml(
        seed in proptest::sample::select(YAMLS),
        edits in vec(edit(YAML_TOKENS), 0..6),
        arbitrary in prop_oneof![9 => Just(None), 1 => any::<String>().prop_map(Some)],
    ) {
        check_yaml(&arbitrary.unwrap_or_else(|| mutate(seed, &edits)));
    }
}

#[test]
fn huge_nc_is_an_error_not_an_allocation() {
    // `nc: 1e30` alone made ultralytics-style `class_0..class_{nc-1}` names: 10^30 strings (abort).
    let file = Path::new("/nonexistent-yolo26-fuzz/data.yaml");
    for nc in ["1e30", "65537", "4294967296", "99999999999999999999"] {
        let e = parse_data_yaml(&format!("train: t\nval: v\nnc: {nc}\n"), file).unwrap_err().to_string();
        // (serde_yaml itself refuses integers beyond u64)
        assert!(e.contains("data.yaml") && (e.contains("limit") || nc.len() > 19), "{nc}: {e}");
    }
    let c = parse_data_yaml("train: t\nval: v\nnc: 65536\n", file).unwrap();
    assert_eq!(c.names.len(), MAX_CLASSES);
}
