//! Training arguments (ultralytics `cfg/default.yaml` names and defaults), written to `DIR/args.yaml`.

use std::path::PathBuf;

use yolo26_model::Scale;

/// Everything a training run is made of. Field names are ultralytics' argument names.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrainArgs {
    /// `data.yaml`, a COCO instances JSON (with `images`), or `synthetic[-easy][:N][@SEED]`.
    pub data: String,
    /// Image folder of a COCO JSON dataset.
    pub images: Option<PathBuf>,
    /// Model scale `n`, `s`, `m`, `l` or `x` (ultralytics `model=yolo26n.yaml` …).
    pub model: String,
    /// Initial weights (ultralytics `.pt` or safetensors); `None` trains from scratch.
    pub weights: Option<PathBuf>,
    pub epochs: usize,
    pub batch: usize,
    pub imgsz: usize,
    /// `auto`, `SGD`, `AdamW` or `MuSGD`.
    pub optimizer: String,
    pub lr0: f64,
    pub lrf: f64,
    pub momentum: f64,
    pub weight_decay: f64,
    pub warmup_epochs: f64,
    pub warmup_momentum: f64,
    pub warmup_bias_lr: f64,
    pub cos_lr: bool,
    pub close_mosaic: usize,
    pub nbs: usize,
    /// Loss gains `box`, `cls`, `dfl` (the last weighs the L1 term of YOLO26).
    #[serde(rename = "box")]
    pub box_gain: f64,
    #[serde(rename = "cls")]
    pub cls_gain: f64,
    #[serde(rename = "dfl")]
    pub dfl_gain: f64,
    pub seed: u64,
    /// Loader threads; `None` = ultralytics' `min(8, CPUs)`.
    pub workers: Option<usize>,
    /// Validate after every epoch (the final epoch is always validated).
    pub val: bool,
    /// Validation head: `true` = one-to-one (`nms=False`), `false` = one-to-many + NMS (ultralytics' default).
    pub end2end: bool,
    /// Epochs without improvement of the fitness (mAP50-95) before stopping.
    pub patience: usize,
    /// Write `train_batch*.jpg` and the validation plots.
    pub plots: bool,
    /// The run directory.
    pub project: PathBuf,
    /// Train into `project` even when it exists (ultralytics `exist_ok`; its files are overwritten), instead of
    /// the first free `project2`, `project3`, …
    #[serde(default)]
    pub exist_ok: bool,
    pub device: String,
    /// Convolutions on TF32 tensor cores (cubek) where the GPU backend has them, forward and input gradient: the
    /// precision ultralytics trains at in fp32 (PyTorch's cuDNN default `allow_tf32 = True`). `false`: exact f32.
    #[serde(default)]
    pub tf32: bool,
    /// Mixed precision (ultralytics `amp`, torch.autocast + GradScaler): f16 activations and convolutions on tensor
    /// cores, f32 parameters, BatchNorm statistics and loss, the loss scaled ([`crate::amp`]). `false` (the
    /// default here; ultralytics' default is `true` on CUDA): f32, or TF32 with `tf32`.
    #[serde(default)]
    pub amp: bool,
    /// Print where each epoch's step time goes (device-synchronised phases, slower; `yolo26 train --profile`).
    /// A property of this process, not of the run: not written to `args.yaml`.
    #[serde(skip)]
    pub profile: bool,
}

impl Default for TrainArgs {
    fn default() -> Self {
        TrainArgs {
            data: "synthetic".into(),
            images: None,
            model: "n".into(),
            weights: None,
            epochs: 100,
            batch: 16,
            imgsz: 640,
            optimizer: "auto".into(),
            lr0: 0.01,
            lrf: 0.01,
            momentum: 0.937,
            weight_decay: 0.0005,
            warmup_epochs: 3.0,
            warmup_momentum: 0.8,
            warmup_bias_lr: 0.1,
            cos_lr: false,
            close_mosaic: 10,
            nbs: 64,
            box_gain: 7.5,
            cls_gain: 0.5,
            dfl_gain: 1.5,
            seed: 0,
            workers: None,
            val: true,
            end2end: false,
            patience: 100,
            plots: true,
            project: PathBuf::from("runs/train"),
            exist_ok: false,
            device: "cpu".into(),
            tf32: false,
            amp: false,
            profile: false,
        }
    }
}

impl TrainArgs {
    /// Checks the arguments; the error names the argument and what it must be.
    pub fn validate(&self) -> Result<Scale, String> {
        let scale: Scale = self.model.parse()?;
        let positive = |name: &str, v: usize| if v == 0 { Err(format!("--{name} must be at least 1")) } else { Ok(()) };
        positive("epochs", self.epochs)?;
        positive("batch", self.batch)?;
        positive("nbs", self.nbs)?;
        if self.imgsz == 0 || !self.imgsz.is_multiple_of(32) {
            return Err(format!("--imgsz {}: must be a positive multiple of 32", self.imgsz));
        }
        let finite_nonneg = [
            ("lr0", self.lr0),
            ("lrf", self.lrf),
            ("momentum", self.momentum),
            ("weight-decay", self.weight_decay),
            ("warmup-epochs", self.warmup_epochs),
            ("warmup-momentum", self.warmup_momentum),
            ("warmup-bias-lr", self.warmup_bias_lr),
            ("box", self.box_gain),
            ("cls", self.cls_gain),
            ("dfl", self.dfl_gain),
        ];
        for (name, v) in finite_nonneg {
            if !v.is_finite() || v < 0.0 {
                return Err(format!("--{name} {v}: must be a finite number >= 0"));
            }
        }
        if self.momentum >= 1.0 || self.warmup_momentum >= 1.0 {
            return Err("--momentum and --warmup-momentum must be < 1".into());
        }
        Ok(scale)
    }
}
