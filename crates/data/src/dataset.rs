//! A dataset split: the verified entries (image source, size, labels) of one split of an ultralytics-layout
//! dataset, a COCO instances JSON or the synthetic dataset. Ultralytics counterpart: the `YOLODataset` object
//! after `get_img_files` + `get_labels` (`im_files`, `labels[i]["shape"]`, `["cls"]`, `["bboxes"]`).

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use yolo26_imageio::RgbImage;

use crate::coco::{scan_coco, CocoInfo};
use crate::config::{img_files, load_data_yaml, DataConfig};
use crate::labels::Labels;
use crate::scan::{scan_images, ScanSummary};
use crate::synthetic::{self, Recipe, SyntheticSpec, TRAIN_SPLIT, VAL_SPLIT};
use crate::DataError;

/// Which split to open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// `train:`
    Train,
    /// `val:` (ultralytics also accepts `validation:`)
    Val,
    /// `test:`
    Test,
}

impl Split {
    /// `"train"`, `"val"`, `"test"`.
    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Val => "val",
            Split::Test => "test",
        }
    }
}

/// Where the pixels of an entry come from.
#[derive(Clone, Debug, PartialEq)]
pub enum ImageSource {
    /// An image file (decoded with OpenCV `imread` semantics, RGB, see [`crate::labels::decode_lenient`]).
    File(PathBuf),
    /// Image `index` of split `split` of the synthetic dataset `recipe` with `seed` (rendered on demand).
    Synthetic { recipe: Recipe, seed: u64, split: u32, index: u64 },
}

impl ImageSource {
    /// A printable name: the file path, or `synthetic[-easy]@SEED/{train,val}/NNNNNN.png` (the file name that
    /// `write_ultralytics` gives the same image).
    pub fn display_path(&self) -> PathBuf {
        match self {
            ImageSource::File(p) => p.clone(),
            ImageSource::Synthetic { recipe, seed, split, index } => {
                let s = if *split == TRAIN_SPLIT { "train" } else { "val" };
                PathBuf::from(format!("{}@{seed}/{s}/{index:06}.png", recipe.name()))
            }
        }
    }
}

/// One usable image of a split.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Where the pixels come from (ultralytics `im_files[i]`).
    pub source: ImageSource,
    /// `[h, w]` as verified (ultralytics `label["shape"]`).
    pub shape: [u32; 2],
    /// Verified labels (ultralytics `labels[i]["cls"]`, `["bboxes"]`, xywh normalised).
    pub labels: Labels,
}

/// One split of a dataset (corrupt images removed).
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Class names (`names`).
    pub names: Vec<String>,
    /// Usable images in ultralytics' order (sorted paths; JSON order for COCO; index order for synthetic).
    pub entries: Vec<Entry>,
    /// Scan counts and messages (print [`ScanSummary::line`] once per split).
    pub summary: ScanSummary,
    /// COCO ids when opened from an instances JSON (`image_ids` aligned with `entries`).
    pub coco: Option<CocoInfo>,
}

/// What `--data` names.
#[derive(Clone, Debug, PartialEq)]
pub enum DataSource {
    /// An ultralytics dataset YAML.
    Yaml(DataConfig),
    /// A COCO instances JSON with its images directory (`--images`).
    Coco { json: PathBuf, images: PathBuf },
    /// The built-in synthetic dataset.
    Synthetic(SyntheticSpec),
}

impl DataSource {
    /// Interpret `--data` (and `--images`): `synthetic[-easy][:N][@SEED]`, a `.json` file (needs `images`), else a dataset
    /// YAML.
    pub fn parse(data: &str, images: Option<&Path>) -> Result<Self, DataError> {
        if let Some(s) = SyntheticSpec::parse(data)? {
            return Ok(DataSource::Synthetic(s));
        }
        let p = PathBuf::from(data);
        if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            let images = images.ok_or_else(|| {
                DataError::Spec(format!("{data}: a COCO instances JSON needs --images DIR (the image directory)"))
            })?;
            if !images.is_dir() {
                return Err(DataError::Spec(format!("--images {}: not a directory", images.display())));
            }
            return Ok(DataSource::Coco { json: p, images: images.to_path_buf() });
        }
        Ok(DataSource::Yaml(load_data_yaml(&p)?))
    }

    /// Class names of the dataset.
    pub fn names(&self) -> Result<Vec<String>, DataError> {
        match self {
            DataSource::Yaml(c) => Ok(c.names.clone()),
            DataSource::Synthetic(s) => Ok(s.recipe.names().iter().map(|s| s.to_string()).collect()),
            DataSource::Coco { json, .. } => crate::coco::read_names(json),
        }
    }

    /// Open one split. For COCO the same JSON serves every split. For synthetic, `Test` is the val split.
    pub fn open(&self, split: Split) -> Result<Dataset, DataError> {
        match self {
            DataSource::Yaml(c) => {
                let sources = c.split(split.name()).unwrap_or(&[]);
                if sources.is_empty() {
                    return Err(DataError::Yaml {
                        path: c.yaml_file.clone(),
                        msg: format!("no '{}' split", split.name()),
                    });
                }
                Dataset::from_sources(sources, c.names.clone(), true)
            }
            DataSource::Coco { json, images } => Dataset::from_coco(json, images),
            DataSource::Synthetic(s) => Ok(match split {
                Split::Train => Dataset::synthetic(s.recipe, s.seed, TRAIN_SPLIT, s.n),
                _ => Dataset::synthetic(s.recipe, s.seed, VAL_SPLIT, s.val_n()),
            }),
        }
    }
}

impl Dataset {
    /// A split of an ultralytics-layout dataset from its sources (directories / list files / images): image files
    /// as [`img_files`], verification + index cache as [`scan_images`]. Error when no image is usable (ultralytics
    /// `get_labels`: "No valid images found"), naming the first skipped file and its reason.
    pub fn from_sources(sources: &[PathBuf], names: Vec<String>, use_cache: bool) -> Result<Self, DataError> {
        let files = img_files(sources)?;
        let (records, summary) = scan_images(&files, names.len(), use_cache);
        let entries: Vec<Entry> = records
            .into_iter()
            .filter(|r| !r.corrupt)
            .filter_map(|r| Some(Entry { source: ImageSource::File(r.im_file), shape: r.shape?, labels: r.labels }))
            .collect();
        if entries.is_empty() {
            let why = summary.first_bad.clone().unwrap_or_else(|| "no error details".into());
            let list = sources.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
            return Err(DataError::NoImages(format!("No valid images found in {list}: {why}")));
        }
        Ok(Dataset { names, entries, summary, coco: None })
    }

    /// A COCO instances JSON with images under `images_dir` (see [`crate::coco`]).
    pub fn from_coco(json: &Path, images_dir: &Path) -> Result<Self, DataError> {
        let scan = scan_coco(json, images_dir)?;
        let mut info = scan.info;
        let mut entries = Vec::new();
        for (r, id) in scan.records.into_iter().zip(scan.ids) {
            if let (false, Some(shape)) = (r.corrupt, r.shape) {
                entries.push(Entry { source: ImageSource::File(r.im_file), shape, labels: r.labels });
                info.image_ids.push(id);
            }
        }
        if entries.is_empty() {
            let why = scan.summary.first_bad.clone().unwrap_or_else(|| "no images listed".into());
            return Err(DataError::NoImages(format!("No valid images found for {}: {why}", json.display())));
        }
        Ok(Dataset { names: scan.names, entries, summary: scan.summary, coco: Some(info) })
    }

    /// `n` images of split `split` of the synthetic dataset `recipe` with `seed`, rendered once in parallel to get
    /// their labels (pixels are re-rendered on every [`Dataset::load_image`]).
    pub fn synthetic(recipe: Recipe, seed: u64, split: u32, n: usize) -> Self {
        let entries: Vec<Entry> = (0..n as u64)
            .into_par_iter()
            .map(|index| {
                let r = synthetic::render_recipe(recipe, seed, split, index);
                let labels = synthetic::labels_of(&r);
                Entry {
                    source: ImageSource::Synthetic { recipe, seed, split, index },
                    shape: [r.img.height(), r.img.width()],
                    labels,
                }
            })
            .collect();
        let mut summary = ScanSummary { total: n, found: 0, ..Default::default() };
        for e in &entries {
            if e.labels.is_empty() {
                summary.empty += 1;
            }
            summary.found += 1;
        }
        Dataset { names: recipe.names().iter().map(|s| s.to_string()).collect(), entries, summary, coco: None }
    }

    /// Number of images (ultralytics `len(dataset)`).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// `true` when there is no image.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of classes.
    pub fn nc(&self) -> usize {
        self.names.len()
    }

    /// Decode (or render) image `i`, RGB, original size (ultralytics `imread` in `load_image`; files through
    /// [`crate::labels::decode_lenient`]). An error names the file.
    pub fn load_image(&self, i: usize) -> Result<RgbImage, DataError> {
        let e = self
            .entries
            .get(i)
            .ok_or_else(|| DataError::Spec(format!("image index {i} out of range 0..{}", self.len())))?;
        match &e.source {
            ImageSource::File(p) => {
                let bytes = yolo26_imageio::read_bytes(p)
                    .map_err(|err| DataError::Decode { path: p.clone(), msg: err.to_string() })?;
                crate::labels::decode_lenient(&bytes)
                    .map(|d| d.0)
                    .map_err(|msg| DataError::Decode { path: p.clone(), msg })
            }
            ImageSource::Synthetic { recipe, seed, split, index } => {
                Ok(synthetic::render_recipe(*recipe, *seed, *split, *index).img)
            }
        }
    }
}
