//! Tests of BCE-with-logits against a float64 host reference (`max(x,0) − x·t + ln_1p(e^{−|x|})`,
//! gradient `w·(σ(x) − t)`).
//!
//! - `reference`: the trait's default implementation (`Flex`, `Autodiff<Flex>`).
//! - `cube` (generic over the CubeCL runtime): raw kernel launches into NaN-poisoned outputs; instantiated
//!   by `wgpu` (lavapipe) and `cuda` (test names contain `cuda`).
//! - gradients through `Autodiff<Wgpu>` (fusion) and `Autodiff<CubeBackend<..>>`; targets get no gradient.

mod cube;
#[cfg(feature = "cuda")]
mod cuda;
mod reference;
#[cfg(feature = "wgpu")]
mod wgpu;

use burn::tensor::{backend::AutodiffBackend, DType};

use super::{bce_with_logits, BceWithLogitsBackend};
use crate::test_util::*;

/// Logits, soft targets and an upstream gradient (rounded to the storage dtype).
pub(crate) struct Inputs {
    pub name: &'static str,
    pub x: Vec<f32>,
    pub t: Vec<f32>,
    pub w: Vec<f32>,
}

/// Two sets of `n` values: moderate logits (`|x| < 8`) and extreme ones (±50, ±20, 0, ±1e-3, ±88 mixed
/// with moderate ones); targets in `[0, 1]` including exact 0 and 1.
pub(crate) fn input_sets(n: usize, seed: u64, dtype: DType) -> Vec<Inputs> {
    let mut rng = Rng::new(seed);
    let targets = |rng: &mut Rng| -> Vec<f32> {
        (0..n)
            .map(|i| match i % 5 {
                0 => 0.0,
                1 => 1.0,
                _ => rng.unit(),
            })
            .collect()
    };
    let moderate = rng.uniform(n, 8.0);
    let t1 = targets(&mut rng);
    let w1 = rng.uniform(n, 1.0);
    let specials = [50.0f32, -50.0, 20.0, -20.0, 0.0, 1e-3, -1e-3, 88.0, -88.0];
    let extreme: Vec<f32> =
        (0..n).map(|i| if i % 2 == 0 { specials[(i / 2) % specials.len()] } else { rng.range(-8.0, 8.0) }).collect();
    let t2 = targets(&mut rng);
    let w2 = rng.uniform(n, 1.0);
    let r = |v: Vec<f32>| round_to(v, dtype);
    vec![
        Inputs { name: "moderate", x: r(moderate), t: r(t1), w: r(w1) },
        Inputs { name: "extreme", x: r(extreme), t: r(t2), w: r(w2) },
    ]
}

/// Float64 `(loss, d logits)` for upstream gradient `w`.
pub(crate) fn reference_f64(x: &Inputs) -> (Vec<f64>, Vec<f64>) {
    let mut loss = Vec::new();
    let mut grad = Vec::new();
    for i in 0..x.x.len() {
        let (v, t, w) = (x.x[i] as f64, x.t[i] as f64, x.w[i] as f64);
        loss.push(v.max(0.0) - v * t + (-v.abs()).exp().ln_1p());
        grad.push(w * (1.0 / (1.0 + (-v).exp()) - t));
    }
    (loss, grad)
}

/// Public API on an autodiff backend with rank-3 tensors: `L = Σ bce(x, t) ∘ w`; compares the loss and
/// `d x` with the f64 reference, and checks that a targets tensor marked `require_grad` gets no gradient.
pub(crate) fn check_autodiff<B>(device: &B::Device, shape: [usize; 3], dtype: DType, seed: u64) -> f64
where
    B: AutodiffBackend + BceWithLogitsBackend,
{
    let n = shape.iter().product();
    let mut worst = 0.0f64;
    for x in input_sets(n, seed, dtype) {
        let (want_loss, want_grad) = reference_f64(&x);
        let logits = tensor::<B, 3>(&x.x, shape, dtype, device).require_grad();
        let targets = tensor::<B, 3>(&x.t, shape, dtype, device).require_grad();
        let w = tensor::<B, 3>(&x.w, shape, dtype, device);
        let loss = bce_with_logits(logits.clone(), targets.clone());
        assert_eq!(loss.dims(), shape);
        assert_eq!(loss.dtype(), dtype);
        let grads = (loss.clone() * w).sum().backward();
        eprintln!("{} {shape:?} {dtype:?} on {}", x.name, B::name(device));
        worst = worst.max(assert_close("loss", &to_vec(loss), &want_loss, tolerance(dtype)));
        worst = worst.max(assert_close(
            "d logits",
            &to_vec(logits.grad(&grads).expect("d logits")),
            &want_grad,
            tolerance(dtype),
        ));
        assert!(targets.grad(&grads).is_none(), "targets must get no gradient");
    }
    worst
}

/// Forward only through the public API (rank 2), any backend.
pub(crate) fn check_forward<B: BceWithLogitsBackend>(device: &B::Device, seed: u64) {
    let shape = [13, 29];
    for x in input_sets(13 * 29, seed, DType::F32) {
        let (want, _) = reference_f64(&x);
        let logits = tensor::<B, 2>(&x.x, shape, DType::F32, device);
        let targets = tensor::<B, 2>(&x.t, shape, DType::F32, device);
        eprintln!("{} forward on {}", x.name, B::name(device));
        assert_close("loss", &to_vec(bce_with_logits(logits, targets)), &want, 1e-5);
    }
}
