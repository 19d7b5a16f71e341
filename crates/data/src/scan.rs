//! Scanning a split: verification of every image/label pair in parallel and the index cache. Ultralytics
//! `YOLODataset.cache_labels`, `get_labels`, `_load_or_scan_cache`, `get_cache_hash`, `get_hash`,
//! `save_dataset_cache_file` (8.4.190), with our own cache format.
//!
//! Cache file: `<labels dir>.yolo26-cache.json` beside the labels directory (ultralytics writes
//! `Path(label_files[0]).parent.with_suffix(".cache")`, e.g. `labels/train.cache`; we use
//! `labels/train.yolo26-cache.json`). JSON: `{"format": "yolo26-data-index", "version": 1, "hash": "<sha256 hex>",
//! "records": [ScanRecord...]}`. The hash is `get_hash(label_files + im_files + [scan args])`: SHA-256 over each
//! path, a NUL, `"{size}:{mtime_ns}"` (or nothing for a missing file) and a NUL, so touching or editing any image or
//! label file, adding or removing one, or changing `nc` invalidates it. Written atomically (temp file + rename).

use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::config::img2label_path;
use crate::labels::{check_image, parse_label_text, LabelStatus, Labels};

/// Version of our cache format (ultralytics `DATASET_CACHE_VERSION` counterpart).
pub const CACHE_VERSION: u32 = 1;
const CACHE_FORMAT: &str = "yolo26-data-index";

/// Verification result of one image (one entry of ultralytics' `cache["labels"]`, plus the corrupt ones).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScanRecord {
    /// The image (ultralytics `label["im_file"]`).
    pub im_file: PathBuf,
    /// Its label file (`img2label_paths`; the JSON file for COCO).
    pub label_file: PathBuf,
    /// `[h, w]` of the image; `None` when the image is corrupt.
    pub shape: Option<[u32; 2]>,
    /// Verified labels (empty for background and corrupt images).
    pub labels: Labels,
    /// Missing / empty / found label file.
    pub status: LabelStatus,
    /// `true`: skipped (ultralytics `nc = 1`, "ignoring corrupt image/label").
    pub corrupt: bool,
    /// Duplicate rows dropped from the label file.
    pub duplicates_removed: usize,
    /// Reason of the skip or warning, `""` when none.
    pub msg: String,
}

/// Counts of one split scan, ultralytics' `nf, nm, ne, nc` and more.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScanSummary {
    /// Images listed.
    pub total: usize,
    /// Label files found (ultralytics `nf`).
    pub found: usize,
    /// Images without a label file: backgrounds (`nm`).
    pub missing: usize,
    /// Empty label files: backgrounds (`ne`).
    pub empty: usize,
    /// Images skipped as corrupt (`nc`).
    pub corrupt: usize,
    /// Duplicate label rows removed, over all images.
    pub duplicates_removed: usize,
    /// COCO only: crowd annotations kept out of the labels.
    pub crowd: usize,
    /// COCO only: annotations dropped for a zero width or height.
    pub zero_size: usize,
    /// First skipped file and why.
    pub first_bad: Option<String>,
    /// Every message (skips and warnings), in image order (ultralytics `cache["msgs"]`), plus cache warnings.
    pub messages: Vec<String>,
    /// The index cache file, when there is one.
    pub cache_file: Option<PathBuf>,
    /// `true` when the records came from a valid cache.
    pub from_cache: bool,
}

impl ScanSummary {
    /// The one-line summary, like ultralytics' `"{prefix}Scanning {cache}... {nf} images, {nm + ne} backgrounds,
    /// {nc} corrupt"`, with our extra counts and the first bad file.
    pub fn line(&self, prefix: &str) -> String {
        let what = self.cache_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        let mut s = format!(
            "{prefix}Scanning {what}... {} images, {} backgrounds, {} corrupt ({} listed: {} without label file, {} \
             empty, {} duplicate labels removed",
            self.found,
            self.missing + self.empty,
            self.corrupt,
            self.total,
            self.missing,
            self.empty,
            self.duplicates_removed
        );
        if self.crowd > 0 || self.zero_size > 0 {
            s += &format!(", {} crowd and {} zero-size annotations left out", self.crowd, self.zero_size);
        }
        s += ")";
        if self.from_cache {
            s += " [cached]";
        }
        if let Some(b) = &self.first_bad {
            s += &format!("; first skipped: {b}");
        }
        s
    }

    pub(crate) fn add(&mut self, r: &ScanRecord) {
        self.total += 1;
        // an unreadable image stops verify_image_label before the label file is looked at: no nm/nf/ne
        match (r.shape.is_some(), r.status) {
            (false, _) => {}
            (true, LabelStatus::Missing) => self.missing += 1,
            (true, LabelStatus::Empty) => {
                self.found += 1;
                self.empty += 1
            }
            (true, LabelStatus::Found) => self.found += 1,
        }
        if r.corrupt {
            self.corrupt += 1;
            if self.first_bad.is_none() {
                self.first_bad = Some(format!("{}: {}", r.im_file.display(), r.msg));
            }
        }
        self.duplicates_removed += r.duplicates_removed;
        if !r.msg.is_empty() {
            self.messages.push(format!("{}: {}", r.im_file.display(), r.msg));
        }
    }
}

/// `verify_image_label` for one pair (detection, `single_cls=False`). Never fails: problems end up in the record.
pub fn verify_image_label(im_file: &Path, label_file: &Path, nc: usize) -> ScanRecord {
    let mut rec = ScanRecord {
        im_file: im_file.to_path_buf(),
        label_file: label_file.to_path_buf(),
        shape: None,
        labels: Labels::default(),
        status: LabelStatus::Missing,
        corrupt: false,
        duplicates_removed: 0,
        msg: String::new(),
    };
    let fail = |mut rec: ScanRecord, why: String| {
        rec.corrupt = true;
        rec.labels = Labels::default();
        rec.msg = format!("ignoring corrupt image/label: {why}");
        rec
    };
    let check = match check_image(im_file) {
        Ok(c) => c,
        Err(e) => return fail(rec, e),
    };
    rec.shape = Some(check.shape);
    let mut msgs: Vec<String> = check.warning.into_iter().collect();
    if label_file.is_file() {
        rec.status = LabelStatus::Found;
        let text = match std::fs::read(label_file) {
            Ok(b) => match String::from_utf8(b) {
                Ok(t) => t,
                Err(_) => return fail(rec, format!("{}: label file is not UTF-8", label_file.display())),
            },
            Err(e) => return fail(rec, format!("{}: {e}", label_file.display())),
        };
        match parse_label_text(&text, nc) {
            Ok(p) => {
                rec.status = p.status;
                rec.labels = p.labels;
                rec.duplicates_removed = p.duplicates_removed;
                if p.duplicates_removed > 0 {
                    msgs.push(format!("{} duplicate labels removed", p.duplicates_removed));
                }
            }
            Err(e) => return fail(rec, format!("{}: {e}", label_file.display())),
        }
    }
    rec.msg = msgs.join("; ");
    rec
}

/// Ultralytics `get_hash(paths)`: SHA-256 over every path, its size and its mtime in ns (hex digest).
pub fn get_hash(paths: &[&Path], extra: &str) -> String {
    let mut h = Sha256::new();
    for p in paths {
        h.update(p.as_os_str().as_encoded_bytes());
        h.update(b"\0");
        match std::fs::metadata(p) {
            Ok(m) => {
                let mtime = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                h.update(format!("{}:{mtime}", m.len()).as_bytes());
            }
            Err(_) => {
                h.update(b"\0");
                continue;
            }
        }
        h.update(b"\0");
    }
    h.update(extra.as_bytes());
    h.update(b"\0");
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(serde::Serialize, serde::Deserialize)]
struct CacheFile {
    format: String,
    version: u32,
    hash: String,
    records: Vec<ScanRecord>,
}

/// Write `bytes` to `path` atomically: a temporary file in the same directory, then a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Load a cache file; `Ok(None)` when absent or stale (wrong version or hash), `Err` (a warning) when unreadable.
pub(crate) fn load_cache(path: &Path, hash: &str) -> Result<Option<Vec<ScanRecord>>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: cannot read index cache, rescanning: {e}", path.display())),
    };
    let c: CacheFile = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: ignoring corrupt index cache, rescanning: {e}", path.display()))?;
    if c.format != CACHE_FORMAT || c.version != CACHE_VERSION || c.hash != hash {
        return Ok(None);
    }
    Ok(Some(c.records))
}

/// Save a cache file atomically; a warning on failure.
pub(crate) fn save_cache(path: &Path, hash: &str, records: &[ScanRecord]) -> Result<(), String> {
    let c =
        CacheFile { format: CACHE_FORMAT.into(), version: CACHE_VERSION, hash: hash.into(), records: records.to_vec() };
    let bytes = serde_json::to_vec(&c).map_err(|e| format!("{}: cannot serialise index cache: {e}", path.display()))?;
    write_atomic(path, &bytes).map_err(|e| format!("{}: index cache not saved: {e}", path.display()))
}

/// The index-cache path of a split (see the module docs).
pub fn cache_path(label_files: &[PathBuf]) -> Option<PathBuf> {
    let dir = label_files.first()?.parent()?;
    Some(dir.with_extension("yolo26-cache.json"))
}

/// Scan the images of a split (ultralytics `get_labels`): use the index cache when valid, else verify every pair in
/// parallel (rayon) and save the cache. Returns all records (corrupt ones included, marked) and the summary.
pub fn scan_images(im_files: &[PathBuf], nc: usize, use_cache: bool) -> (Vec<ScanRecord>, ScanSummary) {
    let label_files: Vec<PathBuf> = im_files.iter().map(|p| img2label_path(p)).collect();
    let mut summary = ScanSummary::default();
    let cache = if use_cache { cache_path(&label_files) } else { None };
    let hash = cache.as_ref().map(|_| {
        let paths: Vec<&Path> = label_files.iter().chain(im_files).map(PathBuf::as_path).collect();
        get_hash(&paths, &format!("yolo26-data detect nc={nc}"))
    });
    let mut records = None;
    if let (Some(c), Some(h)) = (&cache, &hash) {
        match load_cache(c, h) {
            Ok(r) => records = r,
            Err(w) => summary.messages.push(w),
        }
    }
    summary.from_cache = records.is_some();
    let records = records.unwrap_or_else(|| {
        let recs: Vec<ScanRecord> =
            im_files.par_iter().zip(&label_files).map(|(im, lb)| verify_image_label(im, lb, nc)).collect();
        if let (Some(c), Some(h)) = (&cache, &hash) {
            if recs.iter().any(|r| !r.corrupt) {
                if let Err(w) = save_cache(c, h, &recs) {
                    summary.messages.push(w);
                }
            }
        }
        recs
    });
    for r in &records {
        summary.add(r);
    }
    summary.cache_file = cache;
    (records, summary)
}
