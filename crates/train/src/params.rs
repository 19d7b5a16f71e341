//! The model's float tensors by ultralytics name, flattened to 1-D: what the optimizer, the EMA and the
//! training checkpoints work on, independent of each tensor's rank.
//!
//! Names follow `yolo26_model::load::ultralytics_key` (`model.23.cv3.0.2.bias`, `model.0.bn.running_mean`, ...),
//! so optimizer state and checkpoints are keyed like ultralytics' state_dict. BatchNorm running statistics are
//! visited too (Burn's `RunningState` is visited as a float tensor); they have no gradient and are
//! [`TensorRole::Buffer`].

use std::collections::HashMap;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use yolo26_model::load::ultralytics_key;

/// The `enter_module` / `exit_module` pair of a `ModuleVisitor` or `ModuleMapper` that keeps the module path
/// (`Vec<(name, container type)>`, what `ultralytics_key` reads) in the field `self.<field path>`.
macro_rules! track_module_path {
    ($($field:ident).+) => {
        fn enter_module(&mut self, name: &str, container_type: &str) {
            self.$($field).+.push((name.to_string(), container_type.to_string()));
        }
        fn exit_module(&mut self, _name: &str, _container_type: &str) {
            self.$($field).+.pop();
        }
    };
}
pub(crate) use track_module_path;

/// What a float tensor is to the trainer (ultralytics `BaseTrainer.build_optimizer`'s grouping, plus buffers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorRole {
    /// Convolution weight (2-D or 4-D): weight decay; the Muon group under MuSGD.
    Weight,
    /// BatchNorm weight (`gamma`): no weight decay.
    NormWeight,
    /// Any bias (conv or BatchNorm `beta`): no weight decay; its lr warms up from `warmup_bias_lr`.
    Bias,
    /// BatchNorm running mean / variance: no gradient, averaged by the EMA.
    Buffer,
}

impl TensorRole {
    fn of(path: &[(String, String)], name: &str) -> Self {
        let in_bn = path.len() >= 2 && path[path.len() - 1].1 == "Struct:BatchNorm";
        if name.ends_with(".running_mean") || name.ends_with(".running_var") {
            TensorRole::Buffer
        } else if name.contains("bias") {
            TensorRole::Bias
        } else if in_bn {
            TensorRole::NormWeight
        } else {
            TensorRole::Weight
        }
    }
}

/// One float tensor of a module.
#[derive(Clone, Debug)]
pub struct TensorInfo {
    pub id: ParamId,
    pub name: String,
    pub shape: Vec<usize>,
    pub role: TensorRole,
}

impl TensorInfo {
    /// In ultralytics' boosted MuSGD groups (`lr × 3`): the parameters of the class branches `cv3` and
    /// `one2one_cv3` of the Detect head (`model.23`).
    pub fn in_cls_head(&self) -> bool {
        self.name.starts_with("model.23.cv3.") || self.name.starts_with("model.23.one2one_cv3.")
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

pub(crate) struct Walk<F> {
    pub(crate) path: Vec<(String, String)>,
    pub(crate) f: F,
}

impl<F> Walk<F> {
    pub(crate) fn info(&self, id: ParamId, shape: Vec<usize>) -> TensorInfo {
        let name = ultralytics_key(&self.path);
        TensorInfo { id, role: TensorRole::of(&self.path, &name), name, shape }
    }
}

impl<B: Backend, F: FnMut(&TensorInfo, Tensor<B, 1>)> ModuleVisitor<B> for Walk<F> {
    track_module_path!(path);
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let t = param.val();
        let info = self.info(param.id, t.dims().to_vec());
        (self.f)(&info, t.reshape([info.numel()]));
    }
}

/// Calls `f` with every float tensor of `module` (parameters and running statistics), flattened, in module order.
pub fn visit_named<B: Backend, M: Module<B>>(module: &M, f: impl FnMut(&TensorInfo, Tensor<B, 1>)) {
    module.visit(&mut Walk { path: Vec::new(), f });
}

/// Every float tensor of `module`, flattened, by name.
pub fn named_tensors<B: Backend, M: Module<B>>(module: &M) -> HashMap<String, Tensor<B, 1>> {
    let mut out = HashMap::new();
    visit_named(module, |info, t| {
        out.insert(info.name.clone(), t);
    });
    out
}

/// The [`TensorInfo`] of every float tensor of `module`, in module order.
pub fn tensor_infos<B: Backend, M: Module<B>>(module: &M) -> Vec<TensorInfo> {
    let mut out = Vec::new();
    visit_named(module, |info, _| out.push(info.clone()));
    out
}

/// A mapper that hands each float tensor to `f` flattened and puts back what `f` returns (same length).
/// A parameter that required a gradient still does afterwards.
pub(crate) struct MapNamed<F> {
    walk: Walk<F>,
}

impl<B: Backend, F: FnMut(&TensorInfo, Tensor<B, 1>) -> Tensor<B, 1>> ModuleMapper<B> for MapNamed<F> {
    track_module_path!(walk.path);
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, t, mapper) = param.consume();
        let shape = t.dims();
        let info = self.walk.info(id, shape.to_vec());
        let require_grad = t.is_require_grad();
        let out = (self.walk.f)(&info, t.reshape([info.numel()]));
        assert_eq!(out.dims()[0], info.numel(), "map_named: '{}' changed its number of elements", info.name);
        let mut out = out.reshape(shape);
        if require_grad && !out.is_require_grad() {
            out = out.require_grad();
        }
        Param::from_mapped_value(id, out, mapper)
    }
}

/// Maps every float tensor of `module` through `f` (flattened in, flattened out).
///
/// Burn's `RunningState` writes the mapped value into storage shared by every clone of the module, so map only
/// modules that own their running statistics (e.g. the result of `AutodiffModule::valid`, or the training model
/// itself).
pub fn map_named<B: Backend, M: Module<B>>(module: M, f: impl FnMut(&TensorInfo, Tensor<B, 1>) -> Tensor<B, 1>) -> M {
    module.map(&mut MapNamed { walk: Walk { path: Vec::new(), f } })
}

/// Marks every parameter of an autodiff module as requiring a gradient (BatchNorm running statistics excepted).
///
/// Needed after `AutodiffModule::from_inner`: Burn keeps a parameter's `require_grad` flag from its value, and
/// a tensor of a non-autodiff backend never requires a gradient, so any module mapped on the inner backend (weights
/// loaded, biases initialised) would come back with no trainable parameter at all.
pub fn set_trainable<AB: AutodiffBackend, M: Module<AB>>(module: M) -> M {
    struct Trainable {
        walk: Walk<()>,
    }
    impl<AB: AutodiffBackend> ModuleMapper<AB> for Trainable {
        track_module_path!(walk.path);
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<AB, D>>) -> Param<Tensor<AB, D>> {
            let (id, t, mapper) = param.consume();
            let info = self.walk.info(id, t.dims().to_vec());
            let t = if info.role == TensorRole::Buffer { t } else { t.require_grad() };
            Param::from_mapped_value(id, t, mapper)
        }
    }
    module.map(&mut Trainable { walk: Walk { path: Vec::new(), f: () } })
}
