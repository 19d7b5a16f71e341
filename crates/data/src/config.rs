//! `data.yaml` parsing and path resolution: ultralytics `check_det_dataset` (the parts that do not download
//! anything), `BaseDataset.get_img_files`, `img2label_paths` and `IMG_FORMATS` (ultralytics 8.4.190,
//! `ultralytics/data/utils.py`, `ultralytics/data/base.py`).

use std::path::{Component, Path, PathBuf};

use serde_yaml::Value;

use crate::DataError;

/// Most classes a dataset may declare (`nc`, or the length of `names`): far above any detection dataset (LVIS has
/// 1203), low enough that `nc: 1e30` is an error instead of a list of 10^30 generated names.
pub const MAX_CLASSES: usize = 1 << 16;

/// Image file extensions (lower case) accepted as images: ultralytics `IMG_FORMATS`.
pub const IMG_FORMATS: [&str; 13] =
    ["avif", "bmp", "dng", "heic", "heif", "jp2", "jpeg", "jpg", "mpo", "png", "tif", "tiff", "webp"];

/// A parsed and resolved dataset YAML: the dict that ultralytics `check_det_dataset(yaml)` returns (detection keys).
#[derive(Clone, Debug, PartialEq)]
pub struct DataConfig {
    /// The YAML file itself (ultralytics `data["yaml_file"]`).
    pub yaml_file: PathBuf,
    /// Dataset root (ultralytics `data["path"]`), absolute.
    pub path: PathBuf,
    /// `train` sources (directories, `.txt` lists or image files), absolute; ultralytics `data["train"]`.
    pub train: Vec<PathBuf>,
    /// `val` sources (or `validation`, which ultralytics renames to `val`).
    pub val: Vec<PathBuf>,
    /// `test` sources; empty when the key is absent or empty.
    pub test: Vec<PathBuf>,
    /// Class names in class-index order (ultralytics `check_class_names(data["names"])` as a list).
    pub names: Vec<String>,
}

impl DataConfig {
    /// Number of classes (ultralytics `data["nc"]`).
    pub fn nc(&self) -> usize {
        self.names.len()
    }

    /// The sources of a split by name (`"train"`, `"val"` or `"test"`).
    pub fn split(&self, name: &str) -> Option<&[PathBuf]> {
        match name {
            "train" => Some(&self.train),
            "val" => Some(&self.val),
            "test" => Some(&self.test),
            _ => None,
        }
    }
}

fn yaml_err(path: &Path, msg: impl Into<String>) -> DataError {
    DataError::Yaml { path: path.to_path_buf(), msg: msg.into() }
}

/// Python's `str(v)` for the scalar YAML values that may appear as class names.
fn scalar_to_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(if *b { "True".into() } else { "False".into() }),
        Value::Number(n) => Some(n.to_string()),
        Value::Null => Some("None".into()),
        _ => None,
    }
}

/// `check_class_names`: a list, or a dict `{int or int-like string: name}` whose keys are exactly `0..n-1`.
fn parse_names(file: &Path, v: &Value) -> Result<Vec<String>, DataError> {
    let names = match v {
        Value::Sequence(seq) => seq
            .iter()
            .enumerate()
            .map(|(i, x)| scalar_to_string(x).ok_or_else(|| yaml_err(file, format!("'names' entry {i} is not a name"))))
            .collect::<Result<Vec<_>, _>>()?,
        Value::Mapping(map) => {
            let mut pairs = Vec::with_capacity(map.len());
            for (k, val) in map {
                let key = match k {
                    Value::Number(n) => n.as_i64(),
                    Value::String(s) => s.trim().parse::<i64>().ok(),
                    _ => None,
                }
                .ok_or_else(|| yaml_err(file, format!("'names' key {k:?} is not an integer class index")))?;
                let name = scalar_to_string(val)
                    .ok_or_else(|| yaml_err(file, format!("'names' value of class {key} is not a name")))?;
                pairs.push((key, name));
            }
            let n = pairs.len() as i64;
            let (min, max) = pairs.iter().fold((i64::MAX, i64::MIN), |(a, b), (k, _)| (a.min(*k), b.max(*k)));
            if n > 0 && (max >= n || min < 0) {
                return Err(yaml_err(
                    file,
                    format!("{n}-class dataset requires class indices 0-{}, but 'names' has {min}-{max}", n - 1),
                ));
            }
            pairs.sort_by_key(|p| p.0);
            if pairs.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(yaml_err(file, "'names' has the same class index twice"));
            }
            pairs.into_iter().map(|p| p.1).collect()
        }
        other => return Err(yaml_err(file, format!("'names' must be list or dict, not {}", type_name(other)))),
    };
    if names.is_empty() {
        return Err(yaml_err(file, "0-class dataset, at least one class name is required in 'names'"));
    }
    if names.len() > MAX_CLASSES {
        return Err(yaml_err(file, format!("{} class names exceed the limit of {MAX_CLASSES}", names.len())));
    }
    Ok(names)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "None",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "str",
        Value::Sequence(_) => "list",
        Value::Mapping(_) => "dict",
        Value::Tagged(_) => "tagged value",
    }
}

/// `nc` as ultralytics accepts it: an integer or an integer-like value (`'10'`, `10.0`).
fn parse_nc(file: &Path, v: &Value) -> Result<usize, DataError> {
    let f = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match f {
        Some(f) if f.fract() == 0.0 && f >= 0.0 && f <= MAX_CLASSES as f64 => Ok(f as usize),
        Some(f) if f.fract() == 0.0 && f > 0.0 => {
            Err(yaml_err(file, format!("'nc: {}' exceeds the limit of {MAX_CLASSES} classes", yaml_inline(v))))
        }
        _ => Err(yaml_err(file, format!("'nc: {}' must be an integer", yaml_inline(v)))),
    }
}

fn yaml_inline(v: &Value) -> String {
    serde_yaml::to_string(v).map(|s| s.trim().to_string()).unwrap_or_else(|_| format!("{v:?}"))
}

/// Lexical normalisation (`.` and `..` removed) of an absolute path, for paths that do not exist (Python's
/// non-strict `Path.resolve()` on a missing path).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Python `Path(p).resolve()`: absolute, symlinks resolved where the path exists.
pub fn resolve(p: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(p) {
        return c;
    }
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(p)).unwrap_or_else(|_| p.to_path_buf())
    };
    normalize(&abs)
}

/// Read and resolve a dataset YAML, as ultralytics `check_det_dataset(yaml, autodownload=False)`.
///
/// Rules (ultralytics 8.4.190): `train` and `val` are required (`validation` is renamed to `val`); `names` or `nc`
/// is required; `nc` must equal `len(names)` when both are given; `names` alone gives `nc`, `nc` alone gives
/// `class_0..class_{nc-1}`. The dataset root is `path`, or the YAML's directory when `path` is absent or empty.
/// **Deviation:** ultralytics resolves a relative `path` that does not exist relative to the current directory
/// against its `DATASETS_DIR` setting (`~/datasets` style); we resolve it against the YAML's directory instead
/// (there is no settings file here). Each split is `(root / value).resolve()`; for a string value that does not
/// exist and starts with `../`, `root / value[3:]` is used (as ultralytics). List values are resolved entry by
/// entry without that fallback. Nothing is downloaded; `download:` is ignored.
pub fn load_data_yaml(file: impl AsRef<Path>) -> Result<DataConfig, DataError> {
    let file = file.as_ref();
    let text = std::fs::read_to_string(file).map_err(|e| DataError::io(file, e))?;
    parse_data_yaml(&text, file)
}

/// [`load_data_yaml`] on the text of `file` (already read; the file itself is not opened, its directory is the
/// default dataset root and errors name it). Paths are resolved against the file system as there.
pub fn parse_data_yaml(text: &str, file: &Path) -> Result<DataConfig, DataError> {
    let doc: Value = serde_yaml::from_str(text).map_err(|e| yaml_err(file, format!("invalid YAML: {e}")))?;
    let Value::Mapping(map) = doc else {
        return Err(yaml_err(file, "the dataset YAML must be a mapping of keys (path, train, val, names)"));
    };
    let get = |k: &str| map.get(k).filter(|v| !v.is_null());
    for (key, allowed) in [("path", "str"), ("train", "str or list"), ("val", "str or list"), ("test", "str or list")] {
        if let Some(v) = get(key) {
            let ok = matches!(v, Value::String(_)) || (allowed != "str" && matches!(v, Value::Sequence(_)));
            if !ok {
                return Err(yaml_err(file, format!("'{key}' must be {allowed}, not {}", type_name(v))));
            }
        }
    }
    let val_key = if map.contains_key("val") {
        "val"
    } else if map.contains_key("validation") {
        "validation"
    } else {
        return Err(yaml_err(file, "'val:' key missing; 'train' and 'val' are required in all data YAMLs"));
    };
    if !map.contains_key("train") {
        return Err(yaml_err(file, "'train:' key missing; 'train' and 'val' are required in all data YAMLs"));
    }
    let nc = match map.get("nc") {
        Some(v) => Some(parse_nc(file, v)?),
        None => None,
    };
    let names = match (get("names"), nc) {
        (Some(v), nc) => {
            let names = parse_names(file, v)?;
            if let Some(nc) = nc {
                if nc != names.len() {
                    return Err(yaml_err(file, format!("'names' length {} and 'nc: {nc}' must match", names.len())));
                }
            }
            names
        }
        (None, Some(nc)) if nc > 0 => (0..nc).map(|i| format!("class_{i}")).collect(),
        (None, Some(_)) => return Err(yaml_err(file, "0-class dataset: 'nc' is 0 and 'names' is missing")),
        (None, None) => return Err(yaml_err(file, "either 'names' or 'nc' is required in all data YAMLs")),
    };

    let yaml_dir = resolve(file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")));
    let root = match get("path").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.exists() || p.is_absolute() {
                resolve(&p)
            } else {
                resolve(&yaml_dir.join(p)) // deviation: ultralytics uses DATASETS_DIR / path
            }
        }
        None => yaml_dir,
    };
    let split = |key: &str| -> Result<Vec<PathBuf>, DataError> {
        match get(key) {
            None => Ok(Vec::new()),
            Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
            Some(Value::String(s)) => {
                let x = resolve(&root.join(s));
                if !x.exists() {
                    if let Some(rest) = s.strip_prefix("../") {
                        return Ok(vec![resolve(&root.join(rest))]);
                    }
                }
                Ok(vec![x])
            }
            Some(Value::Sequence(seq)) => seq
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(|s| resolve(&root.join(s)))
                        .ok_or_else(|| yaml_err(file, format!("'{key}' list entries must be paths (strings)")))
                })
                .collect(),
            Some(other) => Err(yaml_err(file, format!("'{key}' must be str or list, not {}", type_name(other)))),
        }
    };
    let train = split("train")?;
    let val = split(val_key)?;
    let test = split("test")?;
    if train.is_empty() {
        return Err(yaml_err(file, "'train:' is empty"));
    }
    if val.is_empty() {
        return Err(yaml_err(file, "'val:' is empty"));
    }
    Ok(DataConfig { yaml_file: resolve(file), path: root, train, val, test, names })
}

fn has_image_ext(name: &str) -> bool {
    name.rpartition_ext().is_some_and(|ext| IMG_FORMATS.contains(&ext.to_ascii_lowercase().as_str()))
}

trait RPartitionExt {
    fn rpartition_ext(&self) -> Option<&str>;
}

impl RPartitionExt for str {
    /// Python `x.rpartition(".")[-1]`: the text after the last dot (the whole string when there is no dot).
    fn rpartition_ext(&self) -> Option<&str> {
        Some(self.rsplit_once('.').map_or(self, |(_, e)| e))
    }
}

/// Python `glob.glob(dir + "/**/*.*", recursive=True)`: files with a dot in the name, hidden names (leading `.`)
/// skipped both as files and as directories, symlinked directories followed.
fn glob_recursive(dir: &Path, out: &mut Vec<String>, depth: usize) -> Result<(), DataError> {
    if depth > 64 {
        return Err(DataError::NoImages(format!(
            "{}: directory nesting deeper than 64 (symlink loop?)",
            dir.display()
        )));
    }
    let rd = std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))?;
    let mut items = Vec::new();
    for e in rd {
        let e = e.map_err(|e| DataError::io(dir, e))?;
        items.push(e.path());
    }
    for p in items {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            glob_recursive(&p, out, depth + 1)?;
        } else if name.contains('.') {
            out.push(p.to_string_lossy().into_owned());
        }
    }
    Ok(())
}

/// Image files of a split, as ultralytics `BaseDataset.get_img_files(img_path)` (fraction 1.0): each source is a
/// directory (searched recursively, see the glob rules above), a `.txt`-style list file (UTF-8 with or without BOM,
/// one path per line; lines starting with `./` are relative to the list file's directory, other relative lines
/// relative to the current directory, as in ultralytics) or anything else that is a file. Only names whose
/// extension is in [`IMG_FORMATS`] are kept; the result is sorted by the path string (Python `sorted`, code-point
/// order). A missing source or an empty result is an error naming the source.
pub fn img_files(sources: &[PathBuf]) -> Result<Vec<PathBuf>, DataError> {
    let mut f: Vec<String> = Vec::new();
    for p in sources {
        if p.is_dir() {
            glob_recursive(p, &mut f, 0)?;
        } else if p.is_file() {
            let text = std::fs::read_to_string(p).map_err(|e| DataError::io(p, e))?;
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            let parent = format!("{}{}", p.parent().unwrap_or(Path::new("")).display(), std::path::MAIN_SEPARATOR);
            for line in text.trim().lines() {
                let line = line.strip_suffix('\r').unwrap_or(line);
                f.push(match line.strip_prefix("./") {
                    Some(rest) => format!("{parent}{rest}"),
                    None => line.to_string(),
                });
            }
        } else {
            return Err(DataError::NoImages(format!("{} does not exist", p.display())));
        }
    }
    let mut im: Vec<String> = f.into_iter().filter(|x| has_image_ext(x)).collect();
    im.sort();
    if im.is_empty() {
        let list = sources.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
        return Err(DataError::NoImages(format!(
            "No images found in {list}. Supported formats are: {}",
            IMG_FORMATS.join(", ")
        )));
    }
    Ok(im.into_iter().map(PathBuf::from).collect())
}

/// Label file of an image, ultralytics `img2label_paths`: the last `/images/` in the path becomes `/labels/` and
/// the extension (text after the last `.`) becomes `.txt`.
pub fn img2label_path(img: &Path) -> PathBuf {
    let sep = std::path::MAIN_SEPARATOR;
    let s = img.to_string_lossy();
    let sa = format!("{sep}images{sep}");
    let sb = format!("{sep}labels{sep}");
    let replaced = match s.rfind(&sa) {
        Some(i) => format!("{}{}{}", &s[..i], sb, &s[i + sa.len()..]),
        None => s.into_owned(),
    };
    let stem = replaced.rsplit_once('.').map_or(replaced.as_str(), |(a, _)| a);
    PathBuf::from(format!("{stem}.txt"))
}
