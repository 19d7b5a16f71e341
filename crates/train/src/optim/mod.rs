//! ultralytics 8.4.190 optimizers with its parameter groups (`BaseTrainer.build_optimizer`): PyTorch `SGD`
//! (Nesterov), PyTorch `AdamW`, and ultralytics' `MuSGD` (`optim/muon.py`), each group with its own lr,
//! momentum and weight decay that the trainer's schedule sets every iteration.
//!
//! Groups (ultralytics order): weights with decay, BatchNorm weights (no decay), biases (no decay); under MuSGD
//! every 2-D/4-D weight goes to a fourth "muon" group, and each group is split into the class-branch parameters
//! (`model.23.cv3`, `model.23.one2one_cv3`: lr × 3) and the rest, giving eight groups.
//!
//! The update of one parameter is [`update`] on flattened 1-D tensors of the inner (non-autodiff) backend;
//! [`Optimizer::step`] walks the model, clips the gradients' global norm (`clip_grad_norm_(max_norm=10)`) and
//! applies it. State is keyed by the parameter's ultralytics name, so it survives checkpoints.

mod muon;
mod state;

use std::collections::HashMap;

use burn::module::{AutodiffModule, ModuleMapper, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use kernels_cubecl::nhwc::{cat_channels, NhwcBackend};

pub use muon::newton_schulz5;
pub use state::OptimizerRecord;

use crate::params::{track_module_path, TensorInfo, TensorRole, Walk};

/// Which update rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum OptimizerKind {
    /// `torch.optim.SGD(nesterov=True)`.
    Sgd,
    /// `torch.optim.AdamW(betas=(momentum, 0.999), eps=1e-8)`.
    AdamW,
    /// ultralytics `MuSGD(muon=0.2, sgd=1.0, nesterov=True)`.
    MuSgd,
}

impl OptimizerKind {
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::Sgd => "SGD",
            OptimizerKind::AdamW => "AdamW",
            OptimizerKind::MuSgd => "MuSGD",
        }
    }
}

/// The optimizer `build_optimizer` settles on: kind, lr0 and momentum (and whether `auto` zeroed
/// `warmup_bias_lr`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OptimizerChoice {
    pub kind: OptimizerKind,
    pub lr0: f64,
    pub momentum: f64,
    /// `optimizer=auto` also sets `warmup_bias_lr = 0`.
    pub auto: bool,
}

impl OptimizerChoice {
    /// ultralytics' rule: `auto` → MuSGD (lr 0.01, momentum 0.9) when `iterations > 10000`, else AdamW with
    /// `lr = round(0.002·5/(4 + nc), 6)`, momentum 0.9, where `iterations = ceil(n_train / max(batch, nbs))·epochs`.
    /// Names are matched case-insensitively; an unknown one is an error naming the choices.
    pub fn resolve(name: &str, lr0: f64, momentum: f64, nc: usize, iterations: usize) -> Result<Self, String> {
        let kind = match name.to_ascii_lowercase().as_str() {
            "auto" => {
                let lr_fit = (0.002 * 5.0 / (4.0 + nc as f64) * 1e6).round_ties_even() / 1e6;
                return Ok(if iterations > 10000 {
                    OptimizerChoice { kind: OptimizerKind::MuSgd, lr0: 0.01, momentum: 0.9, auto: true }
                } else {
                    OptimizerChoice { kind: OptimizerKind::AdamW, lr0: lr_fit, momentum: 0.9, auto: true }
                });
            }
            "sgd" => OptimizerKind::Sgd,
            "adamw" => OptimizerKind::AdamW,
            "musgd" => OptimizerKind::MuSgd,
            other => return Err(format!("--optimizer {other}: expected auto, SGD, AdamW or MuSGD")),
        };
        Ok(OptimizerChoice { kind, lr0, momentum, auto: false })
    }
}

/// Which group a tensor belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum GroupKind {
    /// Weights with weight decay (ultralytics `param_group="weight"`).
    Weight,
    /// Normalisation weights, no decay (`"bn"`).
    Norm,
    /// Biases, no decay (`"bias"`): the warmup starts their lr at `warmup_bias_lr`.
    Bias,
    /// MuSGD's orthogonalised weights (`"muon"`), with weight decay in their SGD part.
    Muon,
}

/// One parameter group and the hyper-parameters the schedule sets on it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Group {
    pub kind: GroupKind,
    /// MuSGD's lr × 3 class-branch groups.
    pub boosted: bool,
    /// `initial_lr` (`lr0`, × 3 when boosted).
    pub initial_lr: f64,
    pub lr: f64,
    pub momentum: f64,
    pub weight_decay: f64,
}

/// ultralytics' parameter groups for `kind`: `[weight, bn, bias]`, or under MuSGD
/// `[weight×3, weight, bn×3, bn, bias×3, bias, muon×3, muon]`.
pub fn build_groups(kind: OptimizerKind, lr0: f64, momentum: f64, weight_decay: f64) -> Vec<Group> {
    let g = |kind, boosted: bool, wd| Group {
        kind,
        boosted,
        initial_lr: if boosted { 3.0 * lr0 } else { lr0 },
        lr: if boosted { 3.0 * lr0 } else { lr0 },
        momentum,
        weight_decay: wd,
    };
    let base = [(GroupKind::Weight, weight_decay), (GroupKind::Norm, 0.0), (GroupKind::Bias, 0.0)];
    if kind != OptimizerKind::MuSgd {
        return base.iter().map(|&(k, wd)| g(k, false, wd)).collect();
    }
    base.iter()
        .chain(&[(GroupKind::Muon, weight_decay)])
        .flat_map(|&(k, wd)| [g(k, true, wd), g(k, false, wd)])
        .collect()
}

/// The group index of a trainable tensor (`None` for buffers).
pub fn group_index(kind: OptimizerKind, info: &TensorInfo) -> Option<usize> {
    let base = match info.role {
        TensorRole::Buffer => return None,
        TensorRole::Weight if kind == OptimizerKind::MuSgd && matches!(info.shape.len(), 2 | 4) => 3,
        TensorRole::Weight => 0,
        TensorRole::NormWeight => 1,
        TensorRole::Bias => 2,
    };
    Some(if kind == OptimizerKind::MuSgd { 2 * base + usize::from(!info.in_cls_head()) } else { base })
}

/// Per-parameter state: SGD `momentum_buffer`; AdamW `exp_avg`, `exp_avg_sq` and its step count; MuSGD
/// `momentum_buffer` (Muon) and `momentum_buffer_SGD`.
#[derive(Clone, Debug)]
pub struct ParamState<B: Backend> {
    pub step: u64,
    pub bufs: Vec<Tensor<B, 1>>,
}

/// One optimizer step of one parameter, flattened (`shape` is its real shape, for Muon's matrix view).
/// `state` is `None` on the parameter's first step.
pub fn update<B: Backend>(
    kind: OptimizerKind,
    group: &Group,
    shape: &[usize],
    param: Tensor<B, 1>,
    grad: Tensor<B, 1>,
    state: Option<ParamState<B>>,
) -> (Tensor<B, 1>, ParamState<B>) {
    let (lr, mom, wd) = (group.lr, group.momentum, group.weight_decay);
    match kind {
        OptimizerKind::Sgd => {
            let (p, buf) = sgd_nesterov(param, grad, state.map(|s| s.bufs[0].clone()), lr, mom, wd);
            (p, ParamState { step: 0, bufs: vec![buf] })
        }
        OptimizerKind::AdamW => {
            // torch `_single_tensor_adam` with decoupled weight decay; beta1 = the group's betas[0], which the
            // warmup does not touch (ultralytics only ramps a group's "momentum" key, which Adam groups lack).
            let (beta1, beta2, eps): (f64, f64, f64) = (mom, 0.999, 1e-8);
            let (step, m, v) = match state {
                Some(s) => (s.step + 1, s.bufs[0].clone(), s.bufs[1].clone()),
                None => (1, param.zeros_like(), param.zeros_like()),
            };
            let param = if wd != 0.0 { param.mul_scalar(1.0 - lr * wd) } else { param };
            // exp_avg.lerp_(grad, 1 - beta1)
            let m = m.clone() + (grad.clone() - m).mul_scalar(1.0 - beta1);
            let v = v.mul_scalar(beta2) + grad.clone() * grad.mul_scalar(1.0 - beta2);
            let bc1 = 1.0 - beta1.powf(step as f64);
            let bc2_sqrt = (1.0 - beta2.powf(step as f64)).sqrt();
            let denom = v.clone().sqrt().div_scalar(bc2_sqrt).add_scalar(eps);
            let p = param - (m.clone() / denom).mul_scalar(lr / bc1);
            (p, ParamState { step, bufs: vec![m, v] })
        }
        OptimizerKind::MuSgd if group.kind == GroupKind::Muon => {
            let (mbuf, sbuf) = match state {
                Some(s) => (Some(s.bufs[0].clone()), Some(s.bufs[1].clone())),
                None => (None, None),
            };
            // muon_update: Nesterov momentum on the raw gradient (zeros-initialised buffer, EMA form)
            let mbuf = match mbuf {
                Some(b) => b.mul_scalar(mom) + grad.clone().mul_scalar(1.0 - mom),
                None => grad.clone().mul_scalar(1.0 - mom),
            };
            let u = mbuf.clone().mul_scalar(mom) + grad.clone().mul_scalar(1.0 - mom);
            let rows = shape[0];
            let cols: usize = shape[1..].iter().product();
            // `max(1, grad.size(-2) / grad.size(-1)) ** 0.5`: rows/cols for a matrix, kh/kw (= 1) for a conv
            let scale = (shape[shape.len() - 2] as f64 / shape[shape.len() - 1] as f64).max(1.0).sqrt();
            let o = newton_schulz5(u.reshape([rows, cols])).reshape([rows * cols]).mul_scalar(scale);
            let param = param - o.mul_scalar(lr * 0.2);
            // then the SGD part on the updated parameter, lr × 1.0
            let (p, sbuf) = sgd_nesterov(param, grad, sbuf, lr, mom, wd);
            (p, ParamState { step: 0, bufs: vec![mbuf, sbuf] })
        }
        OptimizerKind::MuSgd => {
            let (p, buf) = sgd_nesterov(param, grad, state.map(|s| s.bufs[0].clone()), lr, mom, wd);
            (p, ParamState { step: 0, bufs: vec![buf] })
        }
    }
}

/// torch `SGD(nesterov=True, dampening=0)`: `g += wd·p; buf = g` (first step) `else buf = m·buf + g;
/// p -= lr·(g + m·buf)`.
fn sgd_nesterov<B: Backend>(
    param: Tensor<B, 1>,
    grad: Tensor<B, 1>,
    buf: Option<Tensor<B, 1>>,
    lr: f64,
    mom: f64,
    wd: f64,
) -> (Tensor<B, 1>, Tensor<B, 1>) {
    let g = if wd != 0.0 { grad + param.clone().mul_scalar(wd) } else { grad };
    let buf = match buf {
        Some(b) => b.mul_scalar(mom) + g.clone(),
        None => g.clone(),
    };
    let d = g + buf.clone().mul_scalar(mom);
    (param - d.mul_scalar(lr), buf)
}

/// An optimizer over the YOLO26 parameters: its groups (whose `lr`/`momentum` the trainer sets) and per-parameter
/// state on the inner backend `B`.
///
/// The groups whose rule is elementwise (SGD, AdamW, MuSGD's SGD groups) are updated as one flat tensor each
/// (PyTorch's `foreach` implementations do the same): the parameters and gradients of a group are concatenated,
/// updated by [`update`] once, and sliced back. Per element this is the arithmetic of the per-parameter update
/// (same operations, same order); it replaces ~15 tensor operations per parameter tensor (~300 of them), which
/// made the step host-bound on a GPU, by ~15 per group. MuSGD's Muon group is updated per parameter (its
/// Newton–Schulz steps work on each matrix).
#[derive(Clone, Debug)]
pub struct Optimizer<B: Backend> {
    pub kind: OptimizerKind,
    pub groups: Vec<Group>,
    /// Per-parameter state (the Muon group's, and any not yet absorbed into [`Optimizer::flat`]).
    pub state: HashMap<String, ParamState<B>>,
    /// Flat state of the groups updated as one tensor, by group index.
    pub flat: HashMap<usize, FlatState<B>>,
    /// Gradient-norm clipping (`clip_grad_norm_(max_norm=10.0)`); `None` = off.
    pub max_grad_norm: Option<f64>,
}

/// `parts` (1-D) as one tensor, in order: the channel concatenation of `[1, 1, 1, nᵢ]` views (`kernels_cubecl`'s
/// `cat_channels`: on CubeCL one kernel launch per four parts, where Burn's `Tensor::cat` launches one slice-assign
/// per part — ~600 per training step for yolo26n's flat groups).
fn cat_flat<B: NhwcBackend>(parts: Vec<Tensor<B, 1>>) -> Tensor<B, 1> {
    let n: usize = parts.iter().map(|t| t.dims()[0]).sum();
    if n == 0 {
        return Tensor::cat(parts, 0); // nothing to copy (and the parts' device)
    }
    let parts: Vec<Tensor<B, 4>> = parts
        .into_iter()
        .filter_map(|t| {
            let len = t.dims()[0];
            (len > 0).then(|| t.reshape([1, 1, 1, len]))
        })
        .collect();
    cat_channels(parts).reshape([n])
}

/// The state of a group updated as one tensor: its members (name, number of elements) in concatenation order,
/// the shared step count and the flat buffers.
#[derive(Clone, Debug)]
pub struct FlatState<B: Backend> {
    pub members: Vec<(String, usize)>,
    pub state: ParamState<B>,
}

impl<B: Backend> FlatState<B> {
    /// The per-parameter states it holds (slices of the flat buffers).
    pub fn split(&self) -> Vec<(String, ParamState<B>)> {
        let mut off = 0;
        self.members
            .iter()
            .map(|(name, len)| {
                let bufs = self.state.bufs.iter().map(|b| b.clone().slice(off..off + len)).collect();
                off += len;
                (name.clone(), ParamState { step: self.state.step, bufs })
            })
            .collect()
    }
}

/// A parameter that has a gradient this step.
struct Member<B: Backend> {
    name: String,
    shape: Vec<usize>,
    group: usize,
    param: Tensor<B, 1>,
    grad: Tensor<B, 1>,
}

impl<B: NhwcBackend> Optimizer<B> {
    pub fn new(choice: OptimizerChoice, weight_decay: f64) -> Self {
        Optimizer {
            kind: choice.kind,
            groups: build_groups(choice.kind, choice.lr0, choice.momentum, weight_decay),
            state: HashMap::new(),
            flat: HashMap::new(),
            max_grad_norm: Some(10.0),
        }
    }

    /// Every parameter's state by name (flat groups split into slices).
    pub fn named_state(&self) -> Vec<(String, ParamState<B>)> {
        let mut out: Vec<_> = self.state.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for f in self.flat.values() {
            out.extend(f.split());
        }
        out
    }

    /// The state of group `gi` as one flat tensor for `members`, or `Err(())` when it cannot be one (members
    /// with different step counts or buffer counts, or state for some members only: then the group is updated
    /// per parameter). `Ok(None)`: no member has state yet (first step).
    fn take_flat(&mut self, gi: usize, members: &[(String, usize)]) -> Result<Option<ParamState<B>>, ()> {
        if let Some(f) = self.flat.remove(&gi) {
            if f.members == members {
                return Ok(Some(f.state));
            }
            // the group changed: back to per-parameter state, then gathered again below
            self.state.extend(f.split());
        }
        let have: Vec<&ParamState<B>> = members.iter().filter_map(|(n, _)| self.state.get(n)).collect();
        if have.is_empty() {
            return Ok(None);
        }
        let (step, nbufs) = (have[0].step, have[0].bufs.len());
        if have.len() != members.len() || have.iter().any(|s| s.step != step || s.bufs.len() != nbufs) {
            return Err(());
        }
        let states: Vec<ParamState<B>> = members.iter().map(|(n, _)| self.state.remove(n).unwrap()).collect();
        let bufs = (0..nbufs).map(|i| cat_flat(states.iter().map(|s| s.bufs[i].clone()).collect())).collect();
        Ok(Some(ParamState { step, bufs }))
    }

    /// Clips the gradients (flattened, by parameter name: [`accumulate_grads`]) to their global norm (if set),
    /// applies one update to every parameter of `model` that has one, and returns the model and the gradient
    /// norm before clipping (`[1]`, on the device; `None` when there were no gradients).
    pub fn step<AB, M>(&mut self, model: M, grads: HashMap<String, Tensor<B, 1>>) -> (M, Option<Tensor<B, 1>>)
    where
        AB: AutodiffBackend<InnerBackend = B>,
        M: AutodiffModule<AB>,
    {
        let (model, norm, _) = self.step_inner::<AB, M>(model, grads, None);
        (model, norm)
    }

    /// [`Optimizer::step`] for gradients of a loss multiplied by `scale` (mixed precision, [`crate::amp`]): torch's
    /// `scaler.unscale_(opt)`, `clip_grad_norm_`, `scaler.step(opt)`. The gradients are divided by `scale` (folded
    /// into the clipping factor; exact for a power of two) and the norm is that of the unscaled gradients. When
    /// the norm is not finite (an infinite or NaN gradient) nothing is updated and the optimizer state is kept:
    /// returns `false` (the step was skipped), else `true`. Reads the norm back to the host (a device
    /// synchronisation, as torch's `found_inf.item()`).
    pub fn step_scaled<AB, M>(
        &mut self,
        model: M,
        grads: HashMap<String, Tensor<B, 1>>,
        scale: f64,
    ) -> (M, Option<Tensor<B, 1>>, bool)
    where
        AB: AutodiffBackend<InnerBackend = B>,
        M: AutodiffModule<AB>,
    {
        self.step_inner::<AB, M>(model, grads, Some(scale))
    }

    /// One optimizer step for the gradients of a loss scaled by `scaler` (mixed precision): [`Optimizer::step_scaled`]
    /// with its scale, then the scaler's update (torch `scaler.step(opt)`, `scaler.update()`); without a scaler,
    /// [`Optimizer::step`].
    pub fn step_amp<AB, M>(
        &mut self,
        model: M,
        grads: HashMap<String, Tensor<B, 1>>,
        scaler: Option<&mut crate::amp::GradScaler>,
    ) -> M
    where
        AB: AutodiffBackend<InnerBackend = B>,
        M: AutodiffModule<AB>,
    {
        match scaler {
            None => self.step::<AB, M>(model, grads).0,
            Some(s) => {
                let (model, _, applied) = self.step_scaled::<AB, M>(model, grads, s.scale);
                s.update(!applied);
                model
            }
        }
    }

    fn step_inner<AB, M>(
        &mut self,
        model: M,
        mut grads: HashMap<String, Tensor<B, 1>>,
        scale: Option<f64>,
    ) -> (M, Option<Tensor<B, 1>>, bool)
    where
        AB: AutodiffBackend<InnerBackend = B>,
        M: AutodiffModule<AB>,
    {
        let mut members = Vec::new();
        let mut gather = Gather::<B> {
            kind: self.kind,
            grads: &mut grads,
            out: &mut members,
            walk: Walk { path: Vec::new(), f: () },
        };
        model.visit(&mut gather);
        if members.is_empty() {
            return (model, None, true);
        }
        let mut by_group: Vec<Vec<Member<B>>> = (0..self.groups.len()).map(|_| Vec::new()).collect();
        for m in members {
            by_group[m.group].push(m);
        }
        // per group: (flat gradient and state, or the members one by one)
        enum Plan<B: Backend> {
            Flat(Tensor<B, 1>, Option<ParamState<B>>),
            Each,
        }
        let mut plans = Vec::with_capacity(by_group.len());
        for (gi, ms) in by_group.iter().enumerate() {
            let elementwise = !(self.kind == OptimizerKind::MuSgd && self.groups[gi].kind == GroupKind::Muon);
            let layout: Vec<(String, usize)> = ms.iter().map(|m| (m.name.clone(), m.param.dims()[0])).collect();
            let plan = match (ms.is_empty(), elementwise) {
                (true, _) => Plan::Each,
                (false, true) => match self.take_flat(gi, &layout) {
                    Ok(state) => Plan::Flat(cat_flat(ms.iter().map(|m| m.grad.clone()).collect()), state),
                    Err(()) => Plan::Each,
                },
                (false, false) => Plan::Each,
            };
            plans.push(plan);
        }
        // the global norm over every gradient (flat groups as one tensor each)
        let mut sq: Option<Tensor<B, 1>> = None;
        let mut add = |t: &Tensor<B, 1>| {
            let s = t.clone().square().sum();
            sq = Some(match sq.take() {
                Some(a) => a + s,
                None => s,
            });
        };
        for (plan, ms) in plans.iter().zip(&by_group) {
            match plan {
                Plan::Flat(g, _) => add(g),
                Plan::Each => ms.iter().for_each(|m| add(&m.grad)),
            }
        }
        let mut total = sq.expect("at least one gradient").sqrt();
        if let Some(s) = scale {
            // the norm of the unscaled gradients (`scale` a power of two: exact); a non-finite one skips the step
            total = total.div_scalar(s);
            let norm: f64 = total.clone().into_scalar().elem();
            if !norm.is_finite() {
                for ((gi, plan), ms) in plans.into_iter().enumerate().zip(&by_group) {
                    if let Plan::Flat(_, Some(state)) = plan {
                        let members = ms.iter().map(|m| (m.name.clone(), m.param.dims()[0])).collect();
                        self.flat.insert(gi, FlatState { members, state });
                    }
                }
                return (model, Some(total), false);
            }
        }
        // torch: clip_coef = max_norm / (total_norm + 1e-6), clamped to 1; mixed precision: times 1 / scale
        let coef = self
            .max_grad_norm
            .map(|m| (total.ones_like().mul_scalar(m) / total.clone().add_scalar(1e-6)).clamp_max(1.0))
            .map(|c| match scale {
                Some(s) => c.div_scalar(s),
                None => c,
            });
        let clip = |g: Tensor<B, 1>| match (&coef, scale) {
            (Some(c), _) => g * c.clone(),
            (None, Some(s)) => g.div_scalar(s),
            (None, None) => g,
        };
        let mut new_values: HashMap<String, Tensor<B, 1>> = HashMap::new();
        for (gi, (plan, ms)) in plans.into_iter().zip(by_group).enumerate() {
            match plan {
                Plan::Flat(g, state) => {
                    let n = g.dims()[0];
                    let p = cat_flat(ms.iter().map(|m| m.param.clone()).collect());
                    let (p, st) = update(self.kind, &self.groups[gi], &[n], p, clip(g), state);
                    let mut off = 0;
                    let mut layout = Vec::with_capacity(ms.len());
                    for m in ms {
                        let len = m.param.dims()[0];
                        new_values.insert(m.name.clone(), p.clone().slice(off..off + len));
                        layout.push((m.name, len));
                        off += len;
                    }
                    self.flat.insert(gi, FlatState { members: layout, state: st });
                }
                Plan::Each => {
                    for m in ms {
                        let state = self.state.remove(&m.name);
                        let (p, st) = update(self.kind, &self.groups[gi], &m.shape, m.param, clip(m.grad), state);
                        self.state.insert(m.name.clone(), st);
                        new_values.insert(m.name, p);
                    }
                }
            }
        }
        let mut put = Put { values: &mut new_values, walk: Walk { path: Vec::new(), f: () } };
        let model = model.map(&mut put);
        (model, Some(total), true)
    }
}

/// Moves the gradients of `model`'s parameters out of `grads` into `acc` (flattened, by ultralytics name), adding
/// to what `acc` already holds: PyTorch's `.grad` accumulation over `accumulate` batches.
pub fn accumulate_grads<AB: AutodiffBackend, M: AutodiffModule<AB>>(
    model: &M,
    mut grads: GradientsParams,
    acc: &mut HashMap<String, Tensor<AB::InnerBackend, 1>>,
) {
    let mut c = Collect::<AB::InnerBackend> { grads: &mut grads, acc, walk: Walk { path: Vec::new(), f: () } };
    model.visit(&mut c);
}

/// The inverse of [`accumulate_grads`]: the named flattened gradients of `model`'s parameters as burn's
/// [`GradientsParams`] (by parameter id, in the parameters' shapes). Names `model` does not have are dropped.
pub fn grads_params<AB: AutodiffBackend, M: AutodiffModule<AB>>(
    model: &M,
    mut named: HashMap<String, Tensor<AB::InnerBackend, 1>>,
) -> GradientsParams {
    let mut grads = GradientsParams::new();
    let mut r =
        Register::<AB::InnerBackend> { grads: &mut grads, named: &mut named, walk: Walk { path: Vec::new(), f: () } };
    model.visit(&mut r);
    grads
}

struct Register<'a, B: Backend> {
    grads: &'a mut GradientsParams,
    named: &'a mut HashMap<String, Tensor<B, 1>>,
    walk: Walk<()>,
}

impl<AB: AutodiffBackend> ModuleVisitor<AB> for Register<'_, AB::InnerBackend> {
    track_module_path!(walk.path);
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AB, D>>) {
        let dims = param.dims();
        let info = self.walk.info(param.id, dims.to_vec());
        if let Some(g) = self.named.remove(&info.name) {
            self.grads.register::<AB::InnerBackend, D>(param.id, g.reshape(dims));
        }
    }
}

struct Collect<'a, B: Backend> {
    grads: &'a mut GradientsParams,
    acc: &'a mut HashMap<String, Tensor<B, 1>>,
    walk: Walk<()>,
}

impl<AB: AutodiffBackend> ModuleVisitor<AB> for Collect<'_, AB::InnerBackend> {
    track_module_path!(walk.path);
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AB, D>>) {
        if let Some(g) = self.grads.remove::<AB::InnerBackend, D>(param.id) {
            let info = self.walk.info(param.id, g.dims().to_vec());
            let g = g.reshape([info.numel()]);
            let sum = match self.acc.remove(&info.name) {
                Some(prev) => prev + g,
                None => g,
            };
            self.acc.insert(info.name, sum);
        }
    }
}

/// Collects the parameters that have a gradient and a group, in module order.
struct Gather<'a, B: Backend> {
    kind: OptimizerKind,
    grads: &'a mut HashMap<String, Tensor<B, 1>>,
    out: &'a mut Vec<Member<B>>,
    walk: Walk<()>,
}

impl<AB: AutodiffBackend> ModuleVisitor<AB> for Gather<'_, AB::InnerBackend> {
    track_module_path!(walk.path);
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AB, D>>) {
        let t = param.val();
        let info = self.walk.info(param.id, t.dims().to_vec());
        let (Some(gi), true) = (group_index(self.kind, &info), self.grads.contains_key(&info.name)) else {
            return;
        };
        let grad = self.grads.remove(&info.name).unwrap();
        let n = info.numel();
        debug_assert_eq!(grad.dims()[0], n);
        self.out.push(Member { param: t.inner().reshape([n]), grad, group: gi, shape: info.shape, name: info.name });
    }
}

/// Puts the updated values back (same shape, still requiring a gradient where the parameter did).
struct Put<'a, B: Backend> {
    values: &'a mut HashMap<String, Tensor<B, 1>>,
    walk: Walk<()>,
}

impl<AB: AutodiffBackend> ModuleMapper<AB> for Put<'_, AB::InnerBackend> {
    track_module_path!(walk.path);
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<AB, D>>) -> Param<Tensor<AB, D>> {
        let (id, tensor, mapper) = param.consume();
        let shape = tensor.dims();
        let info = self.walk.info(id, shape.to_vec());
        let Some(p) = self.values.remove(&info.name) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let require_grad = tensor.is_require_grad();
        let mut out = Tensor::<AB, D>::from_inner(p.reshape(shape));
        if require_grad {
            out = out.require_grad();
        }
        Param::from_mapped_value(id, out, mapper)
    }
}
