//! Saving and restoring an [`Optimizer`]'s state: the groups and step counts as a serde record, the buffers as
//! f32 tensors named `optim.<parameter name>.<buffer index>` (exact: the buffers are f32 on every backend).

use std::collections::BTreeMap;

use burn::prelude::*;
use burn::tensor::TensorData;
use yolo26_model::weights::{FileDType, WeightTensor};

use super::{Group, Optimizer, OptimizerKind, ParamState};

/// The non-tensor part of an optimizer's state.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OptimizerRecord {
    pub kind: OptimizerKind,
    pub groups: Vec<Group>,
    pub max_grad_norm: Option<f64>,
    /// Parameter name → (step count, number of buffers).
    pub params: BTreeMap<String, (u64, usize)>,
}

const PREFIX: &str = "optim.";

impl<B: kernels_cubecl::nhwc::NhwcBackend> Optimizer<B> {
    /// The record and the buffers (read back to the host).
    pub fn to_record(&self) -> (OptimizerRecord, BTreeMap<String, WeightTensor>) {
        let mut tensors = BTreeMap::new();
        let mut params = BTreeMap::new();
        for (name, st) in &self.named_state() {
            params.insert(name.clone(), (st.step, st.bufs.len()));
            for (i, b) in st.bufs.iter().enumerate() {
                let data = b.clone().into_data().convert::<f32>().to_vec::<f32>().unwrap_or_default();
                tensors.insert(
                    format!("{PREFIX}{name}.{i}"),
                    WeightTensor { shape: vec![data.len()], dtype: FileDType::F32, data },
                );
            }
        }
        let rec =
            OptimizerRecord { kind: self.kind, groups: self.groups.clone(), max_grad_norm: self.max_grad_norm, params };
        (rec, tensors)
    }

    /// Rebuilds the optimizer from [`Optimizer::to_record`]'s output; a missing buffer is an error naming it.
    pub fn from_record(
        rec: &OptimizerRecord,
        tensors: &BTreeMap<String, WeightTensor>,
        device: &B::Device,
    ) -> Result<Self, String> {
        let mut state = std::collections::HashMap::new();
        for (name, &(step, n)) in &rec.params {
            let mut bufs = Vec::with_capacity(n);
            for i in 0..n {
                let key = format!("{PREFIX}{name}.{i}");
                let t = tensors.get(&key).ok_or_else(|| format!("optimizer state: missing tensor '{key}'"))?;
                bufs.push(Tensor::from_data(TensorData::new(t.data.clone(), [t.data.len()]), device));
            }
            state.insert(name.clone(), ParamState { step, bufs });
        }
        // flat groups are gathered again at the first step (same values: the record holds exact f32 copies)
        Ok(Optimizer {
            kind: rec.kind,
            groups: rec.groups.clone(),
            state,
            flat: std::collections::HashMap::new(),
            max_grad_norm: rec.max_grad_norm,
        })
    }
}
