//! One image + label file check: ultralytics `verify_image_label` and `check_image` (8.4.190,
//! `ultralytics/data/utils.py`) for detection (`keypoint=False`, `single_cls=False`), and `segments2boxes` /
//! `xyxy2xywh` (`ultralytics/utils/ops.py`) for polygon rows.

use std::path::Path;

/// Labels of one image: `boxes[i]` is `[cx, cy, w, h]` normalised to the image size (ultralytics `label["bboxes"]`
/// with `bbox_format="xywh"`, `normalized=True`), `cls[i]` its class index (ultralytics `label["cls"]`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Labels {
    /// Class index per object.
    pub cls: Vec<u32>,
    /// `[cx, cy, w, h]` normalised, per object.
    pub boxes: Vec<[f32; 4]>,
}

impl Labels {
    /// Number of objects.
    pub fn len(&self) -> usize {
        self.cls.len()
    }

    /// `true` for a background image.
    pub fn is_empty(&self) -> bool {
        self.cls.is_empty()
    }

    /// Boxes as `[x1, y1, x2, y2]` pixels of an image `w` × `h` (ultralytics `xywhn2xyxy(x, w, h)`, in f32).
    pub fn xyxy_pixels(&self, w: u32, h: u32) -> Vec<[f32; 4]> {
        let (w, h) = (w as f32, h as f32);
        self.boxes
            .iter()
            .map(|b| {
                [w * (b[0] - b[2] / 2.0), h * (b[1] - b[3] / 2.0), w * (b[0] + b[2] / 2.0), h * (b[1] + b[3] / 2.0)]
            })
            .collect()
    }
}

/// What a label file contributed (ultralytics' `nm`, `nf`, `ne` counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LabelStatus {
    /// No label file: a background image (`nm = 1`).
    Missing,
    /// A label file without rows: a background image (`nf = 1, ne = 1`).
    Empty,
    /// A label file with rows (`nf = 1`).
    Found,
}

/// Python `str.splitlines()` separators other than `\n` (which we split on first to count lines).
fn is_py_line_break(c: char) -> bool {
    matches!(c, '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// Parsed rows of a label text with their 1-based line numbers (ultralytics: `f.read().strip().splitlines()`,
/// blank lines skipped, each row `x.split()`).
fn rows(text: &str) -> Vec<(usize, Vec<&str>)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        for piece in line.split(is_py_line_break) {
            let fields: Vec<&str> = piece.split_whitespace().collect();
            if !fields.is_empty() {
                out.push((i + 1, fields));
            }
        }
    }
    out
}

/// Lexicographic comparison of f32 rows as numpy's `np.unique(axis=0)` sorts them.
fn cmp_rows(a: &[f32], b: &[f32]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        match x.partial_cmp(y) {
            Some(std::cmp::Ordering::Equal) | None => continue,
            Some(o) => return o,
        }
    }
    std::cmp::Ordering::Equal
}

/// Outcome of parsing one label file: labels, their status and how many duplicate rows were removed.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedLabels {
    /// The rows that passed, duplicates removed.
    pub labels: Labels,
    /// `Empty` for a file without rows, else `Found`.
    pub status: LabelStatus,
    /// Exact duplicate rows dropped (ultralytics "N duplicate labels removed").
    pub duplicates_removed: usize,
}

/// Parse and check a label file's text for a dataset of `nc` classes, as `verify_image_label` does.
///
/// Rows are `class cx cy w h` (normalised), or polygons `class x1 y1 x2 y2 ...` when any row has more than 6 values;
/// a polygon row becomes its bounding box as `segments2boxes` computes it in f32 (`min`/`max` of the points, then
/// `xyxy2xywh`). The checks are ultralytics': no mixing of 5-value rows with polygon rows, 5 columns per box row,
/// coordinates `<= 1.01`, no value below 0 except down to `-0.01` when no width/height is negative, integer classes,
/// class `< nc`. Values are parsed as Python/numpy do (`float` then f32). Exactly-equal rows are duplicates: only
/// the first is kept and (as `np.unique(axis=0)` does) the remaining rows are sorted lexicographically; for polygon
/// rows equality is over the class and all points. The error names the line (1-based) where it is known.
pub fn parse_label_text(text: &str, nc: usize) -> Result<ParsedLabels, String> {
    let rows = rows(text);
    if rows.is_empty() {
        return Ok(ParsedLabels { labels: Labels::default(), status: LabelStatus::Empty, duplicates_removed: 0 });
    }
    let parse = |line: usize, s: &str| -> Result<f32, String> {
        let v: f64 = s.parse().map_err(|_| format!("line {line}: '{s}' is not a number"))?;
        if !v.is_finite() {
            return Err(format!("line {line}: non-finite value '{s}'"));
        }
        Ok(v as f32)
    };
    let segment_mode = rows.iter().any(|(_, r)| r.len() > 6);
    // (line, row [cls, cx, cy, w, h], segment points for the duplicate test)
    let mut lb: Vec<(usize, [f32; 5], Vec<f32>)> = Vec::with_capacity(rows.len());
    for (line, r) in &rows {
        let line = *line;
        if segment_mode {
            if r.len() == 5 {
                return Err(format!("line {line}: labels mix segment and detection rows"));
            }
            if r.len() < 3 || (r.len() - 1) % 2 != 0 {
                return Err(format!("line {line}: polygon row needs x y pairs, got {} coordinates", r.len() - 1));
            }
            let c = parse(line, r[0])?;
            let pts = r[1..].iter().map(|s| parse(line, s)).collect::<Result<Vec<f32>, _>>()?;
            let (mut x1, mut y1, mut x2, mut y2) = (f32::INFINITY, f32::INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY);
            for p in pts.chunks_exact(2) {
                x1 = x1.min(p[0]);
                x2 = x2.max(p[0]);
                y1 = y1.min(p[1]);
                y2 = y2.max(p[1]);
            }
            lb.push((line, [c, (x1 + x2) / 2.0, (y1 + y2) / 2.0, x2 - x1, y2 - y1], pts));
        } else {
            if r.len() != 5 {
                return Err(format!("line {line}: labels require 5 columns, {} columns detected", r.len()));
            }
            let mut row = [0f32; 5];
            for (k, s) in r.iter().enumerate() {
                row[k] = parse(line, s)?;
            }
            lb.push((line, row, Vec::new()));
        }
    }
    let min_wh = lb.iter().map(|(_, r, _)| r[3].min(r[4])).fold(f32::INFINITY, f32::min);
    let lb_min =
        lb.iter().map(|(_, r, _)| r.iter().copied().fold(f32::INFINITY, f32::min)).fold(f32::INFINITY, f32::min);
    for (line, r, _) in &lb {
        if let Some(v) = r[1..].iter().find(|v| **v > 1.01) {
            return Err(format!("line {line}: non-normalized or out of bounds coordinates {v}"));
        }
    }
    if !(lb_min >= 0.0 || (lb_min >= -0.01 && min_wh >= 0.0)) {
        let (line, v) =
            lb.iter().find_map(|(l, r, _)| r.iter().find(|v| **v < 0.0).map(|v| (*l, *v))).unwrap_or((0, lb_min));
        return Err(format!("line {line}: negative label values {v}"));
    }
    for (line, r, _) in &lb {
        if r[0].fract() != 0.0 {
            return Err(format!("line {line}: non-integer class label {}", r[0]));
        }
        if r[0] as usize >= nc {
            return Err(format!(
                "line {line}: Label class {} exceeds dataset class count {nc}. Possible class labels are 0-{}",
                r[0] as i64,
                nc.saturating_sub(1)
            ));
        }
    }
    // Duplicates: np.unique(lb, axis=0, return_index=True) (or over class+polygon bytes for segments).
    let n = lb.len();
    let mut order: Vec<usize> = (0..n).collect();
    let key_eq: Box<dyn Fn(usize, usize) -> bool> = if segment_mode {
        Box::new(|a, b| lb[a].1[0].to_bits() == lb[b].1[0].to_bits() && bits(&lb[a].2) == bits(&lb[b].2))
    } else {
        Box::new(|a, b| cmp_rows(&lb[a].1, &lb[b].1).is_eq())
    };
    if segment_mode {
        order.sort_by(|&a, &b| seg_bytes(lb[a].1[0], &lb[a].2).cmp(&seg_bytes(lb[b].1[0], &lb[b].2)));
    } else {
        order.sort_by(|&a, &b| cmp_rows(&lb[a].1, &lb[b].1)); // stable: first occurrence first
    }
    let mut unique: Vec<usize> = Vec::with_capacity(n);
    for &i in &order {
        if unique.last().is_none_or(|&u| !key_eq(u, i)) {
            unique.push(i);
        }
    }
    let duplicates_removed = n - unique.len();
    let keep: Vec<usize> = if duplicates_removed > 0 { unique } else { (0..n).collect() };
    let labels = Labels {
        cls: keep.iter().map(|&i| lb[i].1[0] as u32).collect(),
        boxes: keep.iter().map(|&i| [lb[i].1[1], lb[i].1[2], lb[i].1[3], lb[i].1[4]]).collect(),
    };
    Ok(ParsedLabels { labels, status: LabelStatus::Found, duplicates_removed })
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `c.tobytes() + s.tobytes()` of ultralytics' polygon duplicate test (little-endian f32 bytes).
fn seg_bytes(c: f32, pts: &[f32]) -> Vec<u8> {
    let mut out = c.to_le_bytes().to_vec();
    for p in pts {
        out.extend_from_slice(&p.to_le_bytes());
    }
    out
}

/// Result of checking one image file (ultralytics `check_image`).
#[derive(Clone, Debug, PartialEq)]
pub struct ImageCheck {
    /// `[h, w]` of the decoded image (after the EXIF orientation, as `cv2.imdecode` returns it).
    pub shape: [u32; 2],
    /// A warning to report (JPEG without its end marker, libjpeg warnings); the image is kept.
    pub warning: Option<String>,
}

/// Decode an image as training reads it: `yolo26_imageio::decode_report` (OpenCV `cv2.imdecode` semantics), except
/// for a truncated JPEG, which `cv2.imdecode` refuses but ultralytics repairs (it re-saves such files with PIL,
/// "corrupt JPEG restored and saved"): we never rewrite user data, so it is decoded leniently by the `image`
/// crate's JPEG decoder instead (missing rows come out grey/black; EXIF orientation applied as OpenCV does) and a
/// warning says so. Returns the image and the warnings.
pub fn decode_lenient(bytes: &[u8]) -> Result<(image::RgbImage, Vec<String>), String> {
    match yolo26_imageio::decode_report(bytes) {
        Ok(d) => Ok((d.image, d.warnings)),
        Err(e @ yolo26_imageio::DecodeError::Truncated { format: yolo26_imageio::Format::Jpeg, .. }) => {
            let img = image::load_from_memory_with_format(bytes, image::ImageFormat::Jpeg)
                .map_err(|e2| format!("cannot decode image: {e}; lenient decode failed too: {e2}"))?
                .to_rgb8();
            let orientation = yolo26_imageio::probe(bytes).map_or(1, |i| i.orientation);
            let img = yolo26_imageio::exif::apply_orientation(img, orientation);
            Ok((img, vec![format!("{e}: decoded leniently, pixels may differ from ultralytics' repaired file")]))
        }
        Err(e) => Err(format!("cannot decode image: {e}")),
    }
}

/// Check an image file: it must decode and be at least 10 × 10 pixels (ultralytics `check_image`, which uses PIL
/// `verify` + `exif_size`; we decode fully with [`decode_lenient`], the decoder used for training, so that an image
/// we accept is one we can load). A JPEG whose last two bytes are not the `FF D9` end marker is where ultralytics
/// re-saves the file ("corrupt JPEG restored and saved"); we never write user data: the image is kept (decoded
/// leniently) and a warning is returned, as for libjpeg's warnings.
pub fn check_image(path: &Path) -> Result<ImageCheck, String> {
    let bytes = yolo26_imageio::read_bytes(path).map_err(|e| format!("cannot read image: {e}"))?;
    let (img, mut warnings) = decode_lenient(&bytes)?;
    let (w, h) = img.dimensions();
    if h <= 9 || w <= 9 {
        return Err(format!("image size ({h}, {w}) <10 pixels"));
    }
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) && !bytes.ends_with(&[0xFF, 0xD9]) {
        warnings
            .insert(0, "corrupt JPEG (no FF D9 end marker): kept, never rewritten (ultralytics re-saves it)".into());
    }
    Ok(ImageCheck { shape: [h, w], warning: (!warnings.is_empty()).then(|| warnings.join("; ")) })
}
