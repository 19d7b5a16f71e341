//! Moving weights between a [`WeightMap`] (ultralytics state_dict names) and the Burn model.
//!
//! Naming rule (Burn module path → ultralytics key): `layerN` → `model.N`; a field `iN` (a `Sequential` slot) → `N`;
//! enum variant segments (`C3k2Block::C3k`, ...) are dropped; BatchNorm `gamma`/`beta` → `weight`/`bias`.
//! Example: `layer22.m.0.Attn.i1.attn.qkv.bn.gamma` ↔ `model.22.m.0.1.attn.qkv.bn.weight`.

use std::collections::{BTreeMap, BTreeSet};

use burn::module::{ModuleMapper, ModuleVisitor, Param};
use burn::prelude::*;
use burn::tensor::TensorData;

use crate::weights::{FileDType, WeightMap, WeightTensor};

/// A weight file that does not fit the model. Lists every problem, each naming the key and both shapes.
#[derive(Debug, thiserror::Error)]
#[error("{source_file}: weights do not match the model:\n{}", problems.join("\n"))]
pub struct LoadError {
    /// The weight file.
    pub source_file: String,
    /// One line per missing key, unexpected key or shape mismatch.
    pub problems: Vec<String>,
}

/// The ultralytics state_dict key of a Burn module path (the `(name, container_type)` pairs a
/// `ModuleVisitor`/`ModuleMapper` sees in `enter_module`, ending with the parameter's own field).
pub fn ultralytics_key(path: &[(String, String)]) -> String {
    let mut out: Vec<String> = Vec::with_capacity(path.len() + 1);
    let n = path.len();
    for (idx, (name, container)) in path.iter().enumerate() {
        if container.starts_with("Enum:") {
            continue;
        }
        if let Some(num) = name.strip_prefix("layer").filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        {
            out.push("model".into());
            out.push(num.into());
        } else if let Some(num) =
            name.strip_prefix('i').filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        {
            out.push(num.into());
        } else if idx + 1 == n && container == "Struct:BatchNorm" && name == "gamma" {
            out.push("weight".into());
        } else if idx + 1 == n && container == "Struct:BatchNorm" && name == "beta" {
            out.push("bias".into());
        } else {
            out.push(name.clone());
        }
    }
    out.join(".")
}

/// Tensors that exist in ultralytics state_dicts but carry nothing the model needs.
fn ignorable(key: &str) -> bool {
    key.ends_with(".num_batches_tracked")
}

/// Why the file's tensor `w` cannot fill a float parameter of the model: an integer / bool dtype (a checkpoint
/// whose weights were saved as integers is corrupt, converting them would load garbage) or a NaN / infinite value.
fn float_problem(key: &str, w: &WeightTensor) -> Option<String> {
    if !w.dtype.is_float() {
        return Some(format!(
            "'{key}' is a {:?} tensor in the file, the model expects floating-point weights",
            w.dtype
        ));
    }
    let i = w.data.iter().position(|v| !v.is_finite())?;
    Some(format!("'{key}' holds a non-finite value ({} at flat index {i})", w.data[i]))
}

struct Loader<'a> {
    map: &'a WeightMap,
    path: Vec<(String, String)>,
    used: BTreeSet<String>,
    problems: Vec<String>,
}

impl<B: Backend> ModuleMapper<B> for Loader<'_> {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.path.push((name.to_string(), container_type.to_string()));
    }
    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let key = ultralytics_key(&self.path);
        let (id, tensor, mapper) = param.consume();
        let model_shape = tensor.dims().to_vec();
        match self.map.tensors.get(&key) {
            None => {
                self.problems.push(format!("missing key '{key}' (model expects shape {model_shape:?})"));
                Param::from_mapped_value(id, tensor, mapper)
            }
            Some(w) => {
                self.used.insert(key.clone());
                if w.shape != model_shape {
                    self.problems.push(format!(
                        "shape mismatch for '{key}': file has {:?}, model expects {model_shape:?}",
                        w.shape
                    ));
                    return Param::from_mapped_value(id, tensor, mapper);
                }
                if let Some(problem) = float_problem(&key, w) {
                    self.problems.push(problem);
                    return Param::from_mapped_value(id, tensor, mapper);
                }
                let device = tensor.device();
                let dtype = tensor.dtype();
                let t = Tensor::<B, D>::from_data(TensorData::new(w.data.clone(), model_shape), &device).cast(dtype);
                Param::from_mapped_value(id, t, mapper)
            }
        }
    }
}

/// Copies every tensor of `map` into `model`. Missing keys, unexpected keys, shape mismatches (naming both shapes),
/// integer / bool tensors where the model has a float parameter and NaN / infinite values are errors naming the
/// key (nothing is loaded partially: on error the model is returned unchanged to nobody).
pub fn load_weights<B: Backend, M: Module<B>>(model: M, map: &WeightMap) -> Result<M, LoadError> {
    let mut loader = Loader { map, path: Vec::new(), used: BTreeSet::new(), problems: Vec::new() };
    let model = model.map(&mut loader);
    let mut problems = loader.problems;
    for (key, t) in &map.tensors {
        if !loader.used.contains(key) && !ignorable(key) {
            problems.push(format!("unexpected key '{key}' (shape {:?}) is not part of the model", t.shape));
        }
    }
    if problems.is_empty() {
        Ok(model)
    } else {
        Err(LoadError { source_file: map.source.display().to_string(), problems })
    }
}

struct Collector<B: Backend> {
    path: Vec<(String, String)>,
    out: BTreeMap<String, WeightTensor>,
    _b: core::marker::PhantomData<B>,
}

impl<B: Backend> ModuleVisitor<B> for Collector<B> {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.path.push((name.to_string(), container_type.to_string()));
    }
    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let t = param.val();
        let shape = t.dims().to_vec();
        let data = t.cast(burn::tensor::DType::F32).into_data().convert::<f32>().to_vec::<f32>().unwrap_or_default();
        self.out.insert(ultralytics_key(&self.path), WeightTensor { shape, dtype: FileDType::F32, data });
    }
}

/// The model's tensors under ultralytics names (BN `num_batches_tracked` is added as 0 so the result is a complete
/// ultralytics state_dict).
pub fn collect_weights<B: Backend, M: Module<B>>(model: &M) -> WeightMap {
    let mut c = Collector::<B> { path: Vec::new(), out: BTreeMap::new(), _b: core::marker::PhantomData };
    model.visit(&mut c);
    let mut tensors = c.out;
    let bn_keys: Vec<String> = tensors
        .keys()
        .filter_map(|k| k.strip_suffix(".running_var").map(|p| format!("{p}.num_batches_tracked")))
        .collect();
    for k in bn_keys {
        tensors.insert(k, WeightTensor { shape: vec![], dtype: FileDType::I64, data: vec![0.0] });
    }
    WeightMap { tensors, ..Default::default() }
}

struct CastFloats(burn::tensor::DType);

impl<B: Backend> ModuleMapper<B> for CastFloats {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, t, mapper) = param.consume();
        Param::from_mapped_value(id, t.cast(self.0), mapper)
    }
}

/// Casts every float parameter and buffer of a module (e.g. to `DType::F16` for `--half`).
pub fn cast_floats<B: Backend, M: Module<B>>(module: M, dtype: burn::tensor::DType) -> M {
    module.map(&mut CastFloats(dtype))
}

#[cfg(test)]
mod tests {
    use super::ultralytics_key as translate;
    use super::{collect_weights, load_weights};
    use crate::weights::{FileDType, WeightMap};
    use burn::backend::Flex;
    use burn::nn::conv::{Conv2d, Conv2dConfig};

    /// A conv layer and its weights as a weight file would hold them (`weight`, `bias`).
    fn conv_and_map() -> (Conv2d<Flex>, WeightMap) {
        let conv = Conv2dConfig::new([2, 3], [1, 1]).init::<Flex>(&Default::default());
        let mut map = collect_weights(&conv);
        map.source = "crafted.pt".into();
        (conv, map)
    }

    #[test]
    fn integer_weight_where_float_expected_names_the_key() {
        let (conv, mut map) = conv_and_map();
        assert!(map.tensors.contains_key("weight"), "{:?}", map.tensors.keys());
        let w = map.tensors.get_mut("weight").unwrap();
        w.dtype = FileDType::I64;
        w.data.iter_mut().for_each(|v| *v = v.round());
        let e = load_weights(conv.clone(), &map).unwrap_err().to_string();
        assert!(e.contains("crafted.pt") && e.contains("'weight'") && e.contains("I64"), "{e}");
        map.tensors.get_mut("weight").unwrap().dtype = FileDType::Bool;
        let e = load_weights(conv, &map).unwrap_err().to_string();
        assert!(e.contains("'weight'") && e.contains("Bool"), "{e}");
    }

    #[test]
    fn nan_and_inf_weights_name_the_key() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let (conv, mut map) = conv_and_map();
            map.tensors.get_mut("bias").unwrap().data[1] = bad;
            let e = load_weights(conv, &map).unwrap_err().to_string();
            assert!(e.contains("crafted.pt") && e.contains("'bias'") && e.contains("non-finite"), "{e}");
        }
        let (conv, map) = conv_and_map();
        assert!(load_weights(conv, &map).is_ok(), "the untouched map loads");
    }

    fn p(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn names_follow_ultralytics() {
        let path = p(&[
            ("layer22", "Struct:Yolo26"),
            ("m", "Struct:C3k2"),
            ("0", "Vec"),
            ("Attn", "Enum:C3k2Block"),
            ("i1", "Struct:BottleneckPsa"),
            ("attn", "Struct:PsaBlock"),
            ("qkv", "Struct:Attention"),
            ("bn", "Struct:Conv"),
            ("gamma", "Struct:BatchNorm"),
        ]);
        assert_eq!(translate(&path), "model.22.m.0.1.attn.qkv.bn.weight");
        let path = p(&[
            ("layer23", "Struct:Yolo26"),
            ("one2one_cv3", "Struct:Detect"),
            ("2", "Vec"),
            ("i2", "Struct:ClsBranch"),
            ("bias", "Struct:Conv2d"),
        ]);
        assert_eq!(translate(&path), "model.23.one2one_cv3.2.2.bias");
    }
}
