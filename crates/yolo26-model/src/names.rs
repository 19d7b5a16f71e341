//! Class names: the 80 COCO names (ultralytics `cfg/datasets/coco.yaml`) and a reader for user name files.

use std::path::Path;

/// The 80 COCO class names, index = ultralytics class id.
pub const COCO: [&str; 80] = [
    "person",
    "bicycle",
    "car",
    "motorcycle",
    "airplane",
    "bus",
    "train",
    "truck",
    "boat",
    "traffic light",
    "fire hydrant",
    "stop sign",
    "parking meter",
    "bench",
    "bird",
    "cat",
    "dog",
    "horse",
    "sheep",
    "cow",
    "elephant",
    "bear",
    "zebra",
    "giraffe",
    "backpack",
    "umbrella",
    "handbag",
    "tie",
    "suitcase",
    "frisbee",
    "skis",
    "snowboard",
    "sports ball",
    "kite",
    "baseball bat",
    "baseball glove",
    "skateboard",
    "surfboard",
    "tennis racket",
    "bottle",
    "wine glass",
    "cup",
    "fork",
    "knife",
    "spoon",
    "bowl",
    "banana",
    "apple",
    "sandwich",
    "orange",
    "broccoli",
    "carrot",
    "hot dog",
    "pizza",
    "donut",
    "cake",
    "chair",
    "couch",
    "potted plant",
    "bed",
    "dining table",
    "toilet",
    "tv",
    "laptop",
    "mouse",
    "remote",
    "keyboard",
    "cell phone",
    "microwave",
    "oven",
    "toaster",
    "sink",
    "refrigerator",
    "book",
    "clock",
    "vase",
    "scissors",
    "teddy bear",
    "hair drier",
    "toothbrush",
];

/// Default names for `nc` classes: COCO's for 80, `class0..` otherwise.
pub fn default_names(nc: usize) -> Vec<String> {
    if nc == COCO.len() {
        COCO.iter().map(|s| s.to_string()).collect()
    } else {
        (0..nc).map(|i| format!("class{i}")).collect()
    }
}

/// Reads class names: a JSON list (`["a", "b"]`), a JSON object (`{"0": "a", "1": "b"}`) or plain text with one
/// name per line (empty lines skipped).
pub fn read_names(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        return serde_json::from_str::<Vec<String>>(&text)
            .map_err(|e| format!("{}: bad JSON list of names: {e}", path.display()));
    }
    if trimmed.starts_with('{') {
        let m: std::collections::BTreeMap<String, String> =
            serde_json::from_str(&text).map_err(|e| format!("{}: bad JSON object of names: {e}", path.display()))?;
        let mut out = vec![None; m.len()];
        for (k, v) in m {
            let i: usize = k.parse().map_err(|_| format!("{}: key '{k}' is not a class index", path.display()))?;
            if i >= out.len() {
                return Err(format!(
                    "{}: class index {i} out of range 0..{} (indices must be contiguous)",
                    path.display(),
                    out.len()
                ));
            }
            out[i] = Some(v);
        }
        return Ok(out.into_iter().map(|v| v.expect("contiguous checked")).collect());
    }
    Ok(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect())
}
