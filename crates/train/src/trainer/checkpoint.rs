//! Checkpoints of a run, each written atomically (`yolo26_model::weights::write_atomic`: temporary file, fsync,
//! rename), so `kill -9` at any moment leaves the previous or the new file, never a torn one:
//!
//! - `weights/last.safetensors`, `weights/best.safetensors`: the EMA weights as an ultralytics-named state_dict
//!   (f32, class names in the metadata): what `yolo26 predict`/`val`/`convert` and ultralytics'
//!   `model.load_state_dict(safetensors.torch.load_file(...))` read.
//! - `weights/last.state.safetensors`: everything `--resume` needs: the training weights (`train.<name>`), the
//!   EMA (`ema.<name>`), the optimizer buffers (`optim.<name>.<i>`), gradients accumulated towards the next
//!   optimizer step (`grad.<name>`), and [`TrainState`] as YAML in the metadata key `yolo26_train_state`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use burn::prelude::*;
use burn::tensor::TensorData;
use yolo26_model::load::{collect_weights, load_weights};
use yolo26_model::weights::{safetensors_bytes, write_atomic, FileDType, WeightMap, WeightTensor};
use yolo26_model::Yolo26;

use super::config::TrainArgs;
use crate::optim::OptimizerRecord;

/// Metadata key of the [`TrainState`] (YAML text).
pub const STATE_KEY: &str = "yolo26_train_state";

/// The state as YAML: floats are written as their shortest round-trip text and read back with Rust's exact
/// `str::parse` (serde_json's default float parsing may be one ulp off, which would make a resume inexact).
pub fn state_text(state: &TrainState) -> Result<String, String> {
    serde_yaml::to_string(state).map_err(|e| format!("training state: {e}"))
}

/// Reads [`state_text`]'s output; `path` names the file in errors.
pub fn parse_state(text: &str, path: &Path) -> Result<TrainState, String> {
    serde_yaml::from_str(text).map_err(|e| format!("{}: bad '{STATE_KEY}' metadata: {e}", path.display()))
}

/// The scalars of a run at the end of an epoch.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrainState {
    /// The last completed epoch (0-based).
    pub epoch: usize,
    pub ema_updates: u64,
    pub best_fitness: Option<f64>,
    pub best_epoch: Option<usize>,
    /// Global iteration of the last optimizer step (ultralytics `last_opt_step`, −1 before the first).
    pub last_opt_step: i64,
    /// Gradient accumulation in force (the warmup ramps it).
    pub accumulate: usize,
    pub optimizer: OptimizerRecord,
    pub args: TrainArgs,
    pub names: Vec<String>,
    /// `results.csv` so far.
    pub rows: Vec<super::results::EpochRow>,
    /// The loss scaler of a mixed-precision run (`amp`), so that a resumed run scales as the unbroken one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaler: Option<crate::amp::GradScaler>,
    /// The accumulated gradients (`grad.*`) held an infinite or NaN value (mixed precision, before the optimizer
    /// step that skips them): saved as zeros, restored with one infinity so that the resumed run skips that step
    /// too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending_non_finite: bool,
}

/// A model's weights under ultralytics names with `names` in the metadata.
pub fn weight_map<B: Backend>(model: &Yolo26<B>, names: &[String]) -> WeightMap {
    let mut map = collect_weights(model);
    map.names = Some(names.to_vec());
    map
}

/// Writes `model` (the EMA) as an ultralytics-named safetensors state_dict at `path`, atomically.
pub fn save_weights<B: Backend>(model: &Yolo26<B>, names: &[String], path: &Path) -> Result<(), String> {
    let bytes = safetensors_bytes(&weight_map(model, names), path, FileDType::F32, &[]).map_err(|e| e.to_string())?;
    write_atomic(path, &bytes).map_err(|e| e.to_string())
}

fn prefixed(map: WeightMap, prefix: &str, out: &mut BTreeMap<String, WeightTensor>) {
    for (k, v) in map.tensors {
        out.insert(format!("{prefix}{k}"), v);
    }
}

fn host(t: &Tensor<impl Backend, 1>) -> Vec<f32> {
    t.clone().into_data().convert::<f32>().to_vec::<f32>().unwrap_or_default()
}

/// Everything a resume needs (see the module doc), written atomically to `path`.
pub fn save_state<B: Backend>(
    path: &Path,
    state: &TrainState,
    model: &Yolo26<B>,
    ema: &Yolo26<B>,
    optim_tensors: BTreeMap<String, WeightTensor>,
    pending_grads: &HashMap<String, Tensor<B, 1>>,
) -> Result<(), String> {
    let mut tensors = optim_tensors;
    prefixed(collect_weights(model), "train.", &mut tensors);
    prefixed(collect_weights(ema), "ema.", &mut tensors);
    let mut non_finite = false;
    for (k, g) in pending_grads {
        let mut data = host(g);
        // (mixed precision: an overflowed gradient waits in the accumulation for the step that will skip it; the
        // file holds finite values only, so the overflow is a flag that `load_state` turns back into one)
        for v in data.iter_mut().filter(|v| !v.is_finite()) {
            (*v, non_finite) = (0.0, true);
        }
        tensors.insert(format!("grad.{k}"), WeightTensor { shape: vec![data.len()], dtype: FileDType::F32, data });
    }
    let text = state_text(&TrainState { pending_non_finite: non_finite, ..state.clone() })?;
    let map = WeightMap { tensors, ..Default::default() };
    let bytes =
        safetensors_bytes(&map, path, FileDType::F32, &[(STATE_KEY.to_string(), text)]).map_err(|e| e.to_string())?;
    write_atomic(path, &bytes).map_err(|e| e.to_string())
}

/// What [`load_state`] restores.
pub struct Restored<B: Backend> {
    pub state: TrainState,
    pub model: Yolo26<B>,
    pub ema: Yolo26<B>,
    pub optim_tensors: BTreeMap<String, WeightTensor>,
    pub pending_grads: HashMap<String, Tensor<B, 1>>,
}

/// The [`TrainState`] in the metadata of a state file's bytes (no tensor is read).
pub fn state_of(bytes: &[u8], path: &Path) -> Result<TrainState, String> {
    let (_, meta) = safetensors::SafeTensors::read_metadata(bytes)
        .map_err(|e| format!("{}: not a training state file: {e}", path.display()))?;
    let text = meta
        .metadata()
        .as_ref()
        .and_then(|m| m.get(STATE_KEY))
        .ok_or_else(|| format!("{}: no '{STATE_KEY}' metadata (not written by yolo26 train)", path.display()))?;
    parse_state(text, path)
}

/// Reads a state file written by [`save_state`]; `init` builds an empty model of the run's scale and classes.
/// Errors name the file and what is missing or wrong.
pub fn load_state<B: Backend>(
    path: &Path,
    device: &B::Device,
    init: impl Fn() -> Yolo26<B>,
) -> Result<Restored<B>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let state = state_of(&bytes, path)?;
    let all = yolo26_model::weights::safetensors_io::read_safetensors_bytes(&bytes, path).map_err(|e| e.to_string())?;
    let mut parts: HashMap<&str, WeightMap> = HashMap::new();
    let mut optim_tensors = BTreeMap::new();
    let mut pending_grads = HashMap::new();
    for (k, v) in all.tensors {
        if let Some(name) = k.strip_prefix("grad.") {
            let t = Tensor::from_data(TensorData::new(v.data, [v.shape.iter().product::<usize>()]), device);
            pending_grads.insert(name.to_string(), t);
        } else if k.starts_with("optim.") {
            optim_tensors.insert(k, v);
        } else if let Some((prefix, name)) = k.split_once('.').filter(|(p, _)| matches!(*p, "train" | "ema")) {
            let part = parts.entry(if prefix == "train" { "train" } else { "ema" }).or_default();
            part.source = path.to_path_buf();
            part.tensors.insert(name.to_string(), v);
        } else {
            return Err(format!("{}: unexpected tensor '{k}' in a training state file", path.display()));
        }
    }
    let mut load = |which: &str| {
        let map = parts.remove(which).ok_or_else(|| format!("{}: no '{which}.*' tensors", path.display()))?;
        load_weights(init(), &map).map_err(|e| e.to_string())
    };
    if state.pending_non_finite {
        if let Some(g) = pending_grads.values_mut().next() {
            *g = g.clone().slice_fill(0..1, f32::INFINITY);
        }
    }
    let model = load("train")?;
    let ema = load("ema")?;
    Ok(Restored { state, model, ema, optim_tensors, pending_grads })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optim::{build_groups, OptimizerKind};
    use crate::trainer::results::EpochRow;

    /// Floats survive the state text bit for bit (3.9905648231506348 is one that serde_json reads back one ulp off).
    #[test]
    fn state_text_round_trips_floats_exactly() {
        let awkward = [3.9905648231506348, 0.1 + 0.2, 1.0 / 3.0, 5.553333333333334e-4, f64::MIN_POSITIVE, 1e300];
        let mut groups = build_groups(OptimizerKind::MuSgd, awkward[3], awkward[1], awkward[2]);
        groups[0].lr = awkward[0];
        let state = TrainState {
            epoch: 3,
            ema_updates: 17,
            best_fitness: Some(awkward[2]),
            best_epoch: Some(2),
            last_opt_step: -1,
            accumulate: 4,
            optimizer: OptimizerRecord {
                kind: OptimizerKind::MuSgd,
                groups,
                max_grad_norm: Some(10.0),
                params: [("model.0.conv.weight".to_string(), (5, 2))].into_iter().collect(),
            },
            args: TrainArgs { lr0: awkward[5], ..TrainArgs::default() },
            names: vec!["a: b".into(), "-".into()],
            rows: vec![EpochRow {
                epoch: 1,
                time: awkward[4],
                train_loss: [awkward[0], awkward[1], awkward[2]],
                metrics: Some([awkward[0], 0.0, awkward[3], 1.0]),
                lr: awkward.to_vec(),
            }],
            scaler: Some(crate::amp::GradScaler { scale: 2048.0, growth_tracker: 1999 }),
            pending_non_finite: true,
        };
        let back = parse_state(&state_text(&state).unwrap(), Path::new("x")).unwrap();
        assert_eq!(back, state);
    }
}
