//! Tests of the CIoU loss: forward against a float64 host implementation of ultralytics' `bbox_iou`, and
//! gradients against Burn's autodiff of the plain tensor formula ([`crate::ciou::ciou_formula`], alpha
//! detached, PyTorch's min/max/clamp gradient conventions) in F64 on `Autodiff<Flex>`.
//!
//! - `reference`: the trait's default implementation (`Flex`, `Autodiff<Flex>`), incl. the hand-derived
//!   backward in F64 against autodiff.
//! - `cube` (generic over the CubeCL runtime): raw kernel launches into NaN-poisoned outputs; instantiated
//!   by `wgpu` (lavapipe) and `cuda` (test names contain `cuda`).
//! - gradients through `Autodiff<Wgpu>` (fusion) and `Autodiff<CubeBackend<..>>`.

mod cube;
#[cfg(feature = "cuda")]
mod cuda;
mod reference;
#[cfg(feature = "wgpu")]
mod wgpu;

use burn::backend::{Autodiff, Flex};
use burn::tensor::{backend::AutodiffBackend, DType, Tensor, TensorData};

use super::{ciou_formula, ciou_loss, CiouLossBackend, CIOU_EPS};
use crate::test_util::*;

/// A named set of `m` box pairs (xyxy, rounded to the storage dtype) and an upstream gradient `w [m]`.
pub(crate) struct Boxes {
    pub name: &'static str,
    pub pred: Vec<f32>,
    pub target: Vec<f32>,
    pub w: Vec<f32>,
}

impl Boxes {
    pub fn m(&self) -> usize {
        self.w.len()
    }
}

fn xyxy(cx: f32, cy: f32, w: f32, h: f32) -> [f32; 4] {
    [cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0]
}

/// A generator of one (pred, target) box pair.
type PairGen<'a> = &'a mut dyn FnMut(&mut Rng) -> ([f32; 4], [f32; 4]);

/// The box sets of one seed: random overlapping pairs, identical boxes, non-overlapping boxes, touching
/// boxes (intersection width exactly 0), shared edges (min/max ties), nested boxes, tiny boxes, large
/// boxes (640-pixel image), and a mixed set of `m = 300` (more than one cube). Half-precision storage
/// skips the tiny boxes (1e-3-pixel boxes have gradients beyond the f16 range, ~1e5).
pub(crate) fn box_sets(seed: u64, dtype: DType) -> Vec<Boxes> {
    let mut rng = Rng::new(seed);
    let mut sets = Vec::new();
    let make = |name: &'static str, rng: &mut Rng, m: usize, f: PairGen| {
        let (mut p, mut t) = (Vec::new(), Vec::new());
        for _ in 0..m {
            let (a, b) = f(rng);
            p.extend_from_slice(&a);
            t.extend_from_slice(&b);
        }
        let w = rng.uniform(m, 1.0);
        Boxes { name, pred: round_to(p, dtype), target: round_to(t, dtype), w: round_to(w, dtype) }
    };
    let rand_box = |rng: &mut Rng, lo: f32, hi: f32| {
        xyxy(rng.range(0.0, 100.0), rng.range(0.0, 100.0), rng.range(lo, hi), rng.range(lo, hi))
    };
    sets.push(make("overlapping", &mut rng, 37, &mut |rng: &mut Rng| {
        let t = rand_box(rng, 2.0, 40.0);
        let p = [0, 1, 2, 3].map(|i| t[i] + rng.range(-4.0, 4.0));
        let p = [p[0].min(p[2] - 0.5), p[1].min(p[3] - 0.5), p[2], p[3]];
        (p, t)
    }));
    sets.push(make("identical", &mut rng, 16, &mut |rng: &mut Rng| {
        let t = rand_box(rng, 1.0, 50.0);
        (t, t)
    }));
    sets.push(make("disjoint", &mut rng, 16, &mut |rng: &mut Rng| {
        let t = rand_box(rng, 1.0, 20.0);
        let (dx, dy) = (rng.range(25.0, 60.0), rng.range(-30.0, 30.0));
        (xyxy((t[0] + t[2]) / 2.0 + dx, (t[1] + t[3]) / 2.0 + dy, rng.range(1.0, 20.0), rng.range(1.0, 20.0)), t)
    }));
    sets.push(make("touching", &mut rng, 16, &mut |rng: &mut Rng| {
        let t = rand_box(rng, 2.0, 20.0);
        let w = rng.range(1.0, 20.0);
        ([t[2], t[1] + rng.range(-3.0, 3.0), t[2] + w, t[3] + rng.range(-3.0, 3.0)], t)
    }));
    sets.push(make("shared edges", &mut rng, 16, &mut |rng: &mut Rng| {
        let t = rand_box(rng, 4.0, 30.0);
        ([t[0], t[1], t[2] + rng.range(-2.0, 2.0), t[3] + rng.range(1.0, 5.0)], t)
    }));
    sets.push(make("nested", &mut rng, 16, &mut |rng: &mut Rng| {
        let t = rand_box(rng, 20.0, 40.0);
        (
            [
                t[0] + rng.range(1.0, 5.0),
                t[1] + rng.range(1.0, 5.0),
                t[2] - rng.range(1.0, 5.0),
                t[3] - rng.range(1.0, 5.0),
            ],
            t,
        )
    }));
    let tiny = make("tiny", &mut rng, 16, &mut |rng: &mut Rng| {
        let (cx, cy) = (rng.range(0.0, 10.0), rng.range(0.0, 10.0));
        let t = xyxy(cx, cy, rng.range(1e-3, 1e-2), rng.range(1e-3, 1e-2));
        let p = xyxy(
            cx + rng.range(-2e-3, 2e-3),
            cy + rng.range(-2e-3, 2e-3),
            rng.range(1e-3, 1e-2),
            rng.range(1e-3, 1e-2),
        );
        (p, t)
    });
    if matches!(dtype, DType::F32 | DType::F64) {
        sets.push(tiny);
    }
    sets.push(make("large", &mut rng, 16, &mut |rng: &mut Rng| {
        let t = xyxy(rng.range(100.0, 540.0), rng.range(100.0, 540.0), rng.range(50.0, 600.0), rng.range(50.0, 600.0));
        let p = xyxy(rng.range(100.0, 540.0), rng.range(100.0, 540.0), rng.range(50.0, 600.0), rng.range(50.0, 600.0));
        (p, t)
    }));
    sets.push(make("mixed 300", &mut rng, 300, &mut |rng: &mut Rng| {
        let t = rand_box(rng, 1.0, 40.0);
        let p = rand_box(rng, 1.0, 40.0);
        (p, t)
    }));
    sets
}

/// `(iou, rho2/c2, v)` of ultralytics' CIoU for xyxy boxes `p`, `t` in float64 (eps 1e-7): the loss is
/// `1 − (iou − (rho2/c2 + v·alpha))` with `alpha = v / (v − iou + 1 + eps)`.
pub(crate) fn ciou_terms_f64(p: [f64; 4], t: [f64; 4]) -> (f64, f64, f64) {
    let eps = CIOU_EPS as f64;
    let (w1, h1) = (p[2] - p[0], p[3] - p[1] + eps);
    let (w2, h2) = (t[2] - t[0], t[3] - t[1] + eps);
    let inter = (p[2].min(t[2]) - p[0].max(t[0])).max(0.0) * (p[3].min(t[3]) - p[1].max(t[1])).max(0.0);
    let union = w1 * h1 + w2 * h2 - inter + eps;
    let iou = inter / union;
    let cw = p[2].max(t[2]) - p[0].min(t[0]);
    let ch = p[3].max(t[3]) - p[1].min(t[1]);
    let c2 = cw * cw + ch * ch + eps;
    let rho2 = ((t[0] + t[2] - p[0] - p[2]).powi(2) + (t[1] + t[3] - p[1] - p[3]).powi(2)) / 4.0;
    let v = 4.0 / (std::f64::consts::PI * std::f64::consts::PI) * ((w2 / h2).atan() - (w1 / h1).atan()).powi(2);
    (iou, rho2 / c2, v)
}

/// CIoU's `alpha` from [`ciou_terms_f64`]'s `iou` and `v`.
pub(crate) fn ciou_alpha_f64(iou: f64, v: f64) -> f64 {
    v / (v - iou + (1.0 + CIOU_EPS as f64))
}

/// Float64 host implementation of ultralytics' `1 − bbox_iou(.., xywh=False, CIoU=True)`: `(loss, alpha)`.
pub(crate) fn forward_f64(b: &Boxes) -> (Vec<f64>, Vec<f64>) {
    let (mut loss, mut alpha) = (Vec::new(), Vec::new());
    for i in 0..b.m() {
        let p: [f64; 4] = std::array::from_fn(|k| b.pred[4 * i + k] as f64);
        let t: [f64; 4] = std::array::from_fn(|k| b.target[4 * i + k] as f64);
        let (iou, r, v) = ciou_terms_f64(p, t);
        let a = ciou_alpha_f64(iou, v);
        loss.push(1.0 - (iou - (r + v * a)));
        alpha.push(a);
    }
    (loss, alpha)
}

/// Gradient reference: `(d pred, d target)` of `Σ_i w_i · (1 − CIoU_i)` by Burn's autodiff of
/// [`ciou_formula`] in F64 on `Autodiff<Flex>` (plain tensor ops, alpha detached).
pub(crate) fn grads_f64(b: &Boxes) -> (Vec<f64>, Vec<f64>) {
    type A = Autodiff<Flex>;
    let device = Default::default();
    let t64 = |v: &[f32], shape: Vec<usize>| TensorData::new(v.iter().map(|&x| x as f64).collect::<Vec<f64>>(), shape);
    let m = b.m();
    let pred = Tensor::<A, 2>::from_data(t64(&b.pred, vec![m, 4]), (&device, DType::F64)).require_grad();
    let target = Tensor::<A, 2>::from_data(t64(&b.target, vec![m, 4]), (&device, DType::F64)).require_grad();
    let w = Tensor::<A, 1>::from_data(t64(&b.w, vec![m]), (&device, DType::F64));
    assert_eq!(pred.dtype(), DType::F64);
    let (loss, _alpha) = ciou_formula(pred.clone(), target.clone());
    let grads = (loss * w).sum().backward();
    (to_vec_f64(pred.grad(&grads).unwrap()), to_vec_f64(target.grad(&grads).unwrap()))
}

/// Gradient tolerance: f32 gradients of `1 − CIoU` carry a few ulps of cancellation (`1 + iou`,
/// `w·h` sums); measured errors are printed by every check.
pub(crate) fn grad_tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => 2e-5,
        d => tolerance(d),
    }
}

/// Public API on an autodiff backend: `L = Σ ciou_loss(pred, target) ∘ w`; compares the loss and both
/// gradients with the F64 references. Returns the largest measured error.
pub(crate) fn check_autodiff<B>(device: &B::Device, dtype: DType, seed: u64) -> f64
where
    B: AutodiffBackend + CiouLossBackend,
{
    let mut worst = 0.0f64;
    for b in box_sets(seed, dtype) {
        let m = b.m();
        let (want_loss, _) = forward_f64(&b);
        let (want_dp, want_dt) = grads_f64(&b);
        let pred = tensor::<B, 2>(&b.pred, [m, 4], dtype, device).require_grad();
        let target = tensor::<B, 2>(&b.target, [m, 4], dtype, device).require_grad();
        let w = tensor::<B, 1>(&b.w, [m], dtype, device);
        let loss = ciou_loss(pred.clone(), target.clone());
        assert_eq!(loss.dims(), [m]);
        assert_eq!(loss.dtype(), dtype);
        let grads = (loss.clone() * w).sum().backward();
        eprintln!("{} (m = {m}) {dtype:?} on {}", b.name, B::name(device));
        worst = worst.max(assert_close("loss", &to_vec(loss), &want_loss, tolerance(dtype)));
        let gt = grad_tolerance(dtype);
        worst = worst.max(assert_close("d pred", &to_vec(pred.grad(&grads).expect("d pred")), &want_dp, gt));
        worst = worst.max(assert_close("d target", &to_vec(target.grad(&grads).expect("d target")), &want_dt, gt));
    }
    worst
}

/// Forward only through the public API (inference path), any backend.
pub(crate) fn check_forward<B: CiouLossBackend>(device: &B::Device, seed: u64) {
    for b in box_sets(seed, DType::F32) {
        let m = b.m();
        let (want, _) = forward_f64(&b);
        let pred = tensor::<B, 2>(&b.pred, [m, 4], DType::F32, device);
        let target = tensor::<B, 2>(&b.target, [m, 4], DType::F32, device);
        eprintln!("{} forward on {}", b.name, B::name(device));
        assert_close("loss", &to_vec(ciou_loss(pred, target)), &want, 1e-5);
    }
}
