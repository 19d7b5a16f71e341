//! Tests of the Flash Attention op against a float64 host reference.
//!
//! - `reference`: the trait's default implementation (`Flex`, `Autodiff<Flex>`).
//! - `cube` (generic over the CubeCL runtime): kernel launches with NaN-poisoned outputs, and gradients
//!   through `Autodiff<Fusion<CubeBackend>>` / `Autodiff<CubeBackend>`; instantiated by `wgpu` (lavapipe in
//!   CI, small shapes) and `cuda` (test names contain `cuda`; CI skips them).

pub(crate) mod cube;
#[cfg(feature = "cuda")]
mod cuda;
mod reference;
#[cfg(feature = "wgpu")]
mod wgpu;

use burn::tensor::{DType, TensorData};

/// Problem size: `bh` heads of `q [nq, dk]`, `k [nk, dk]`, `v [nk, dv]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Case {
    pub bh: usize,
    pub nq: usize,
    pub nk: usize,
    pub dk: usize,
    pub dv: usize,
}

impl Case {
    pub const fn new(bh: usize, nq: usize, nk: usize, dk: usize, dv: usize) -> Self {
        Self { bh, nq, nk, dk, dv }
    }
    pub fn scale(&self) -> f32 {
        1.0 / (self.dk as f32).sqrt()
    }
}

pub(crate) use crate::test_util::{round_to, tensor, to_vec, Rng};

/// Host inputs of one case (values already rounded to the storage dtype, so the f64 reference sees
/// exactly what the kernel sees).
pub(crate) struct Inputs {
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    /// Upstream gradient `dO` (`[bh, nq, dv]`).
    pub d_o: Vec<f32>,
}

impl Inputs {
    pub fn random(c: &Case, seed: u64, dtype: DType) -> Self {
        let mut rng = Rng::new(seed);
        // Amplitude 2 gives peaked softmax rows (exercises the running max) without overflow.
        let mut gen = |n: usize, amp: f32| round_to(rng.uniform(n, amp), dtype);
        Self {
            q: gen(c.bh * c.nq * c.dk, 2.0),
            k: gen(c.bh * c.nk * c.dk, 2.0),
            v: gen(c.bh * c.nk * c.dv, 1.0),
            d_o: gen(c.bh * c.nq * c.dv, 1.0),
        }
    }
}

/// Float64 reference outputs: `o [bh, nq, dv]`, `lse [bh, nq]`, `dq`, `dk`, `dv`.
pub(crate) struct Expected {
    pub o: Vec<f64>,
    pub lse: Vec<f64>,
    pub dq: Vec<f64>,
    pub dk: Vec<f64>,
    pub dv: Vec<f64>,
}

/// Straightforward f64 attention forward + backward on the host (materialises `P`).
pub(crate) fn reference_f64(c: &Case, x: &Inputs, scale: f32) -> Expected {
    let Case { bh, nq, nk, dk, dv } = *c;
    let scale = scale as f64;
    let f = |v: &[f32]| v.iter().map(|&a| a as f64).collect::<Vec<f64>>();
    let (q, k, v, g) = (f(&x.q), f(&x.k), f(&x.v), f(&x.d_o));
    let mut o = vec![0.0; bh * nq * dv];
    let mut lse = vec![0.0; bh * nq];
    let mut dq = vec![0.0; bh * nq * dk];
    let mut dkk = vec![0.0; bh * nk * dk];
    let mut dvv = vec![0.0; bh * nk * dv];
    let mut p = vec![0.0; nk];
    for h in 0..bh {
        for i in 0..nq {
            let qi = &q[(h * nq + i) * dk..][..dk];
            let mut m = f64::NEG_INFINITY;
            for j in 0..nk {
                let kj = &k[(h * nk + j) * dk..][..dk];
                p[j] = scale * qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>();
                m = m.max(p[j]);
            }
            let mut l = 0.0;
            for pj in p.iter_mut() {
                *pj = (*pj - m).exp();
                l += *pj;
            }
            lse[h * nq + i] = m + l.ln();
            for pj in p.iter_mut() {
                *pj /= l;
            }
            let oi = &mut o[(h * nq + i) * dv..][..dv];
            for j in 0..nk {
                let vj = &v[(h * nk + j) * dv..][..dv];
                for d in 0..dv {
                    oi[d] += p[j] * vj[d];
                }
            }
            // Backward for row i.
            let gi = &g[(h * nq + i) * dv..][..dv];
            let delta: f64 = gi.iter().zip(oi.iter()).map(|(a, b)| a * b).sum();
            for j in 0..nk {
                let vj = &v[(h * nk + j) * dv..][..dv];
                let dp: f64 = gi.iter().zip(vj).map(|(a, b)| a * b).sum();
                let ds = p[j] * (dp - delta);
                for d in 0..dv {
                    dvv[(h * nk + j) * dv + d] += p[j] * gi[d];
                }
                for d in 0..dk {
                    dq[(h * nq + i) * dk + d] += scale * ds * k[(h * nk + j) * dk + d];
                    dkk[(h * nk + j) * dk + d] += scale * ds * qi[d];
                }
            }
        }
    }
    Expected { o, lse, dq, dk: dkk, dv: dvv }
}

/// Relative tolerance by storage dtype (error normalised by the reference's largest magnitude).
pub(crate) fn tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 1e-2,
        DType::BF16 => 5e-2,
        _ => 1e-4,
    }
}

/// `max |got − want| / max(max |want|, 1e-2)` (the floor keeps exactly-zero gradients, e.g. `Nk = 1`
/// where `dQ = dK = 0`, from dividing round-off by round-off); panics on a length mismatch or any non-finite value (NaN poison left
/// in an unwritten element fails here).
pub(crate) fn rel_err(name: &str, got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len(), "{name}: length");
    if let Some(i) = got.iter().position(|v| !v.is_finite()) {
        panic!("{name}: non-finite value {} at flat index {i} (unwritten or overflow)", got[i]);
    }
    let scale = want.iter().fold(0.0f64, |a, &b| a.max(b.abs())).max(1e-2);
    let err = got.iter().zip(want).fold(0.0f64, |a, (&g, &w)| a.max((g as f64 - w).abs()));
    err / scale
}

/// Asserts `rel_err ≤ tol` and returns the error.
pub(crate) fn assert_close(what: &str, got: &[f32], want: &[f64], tol: f64) -> f64 {
    let e = rel_err(what, got, want);
    eprintln!("  {what}: rel err {e:.3e} (tol {tol:.0e})");
    assert!(e <= tol, "{what}: relative error {e:.3e} > {tol:.0e}");
    e
}

pub(crate) const SMALL_CASES: [Case; 6] = [
    Case::new(2, 37, 53, 16, 16),
    Case::new(3, 70, 45, 32, 32),
    Case::new(1, 65, 129, 64, 64),
    Case::new(2, 17, 100, 128, 128),
    Case::new(2, 33, 41, 32, 64),
    Case::new(1, 1, 1, 16, 16),
];

/// Gradients through the public API on an autodiff backend: `loss = Σ flash_attention(q, k, v) ∘ dO`, so
/// `∂loss/∂o = dO`; compares `o`, `dq`, `dk`, `dv` with the f64 reference.
pub(crate) fn check_autodiff<B>(device: &B::Device, c: &Case, dtype: DType, seed: u64, scale: f32)
where
    B: burn::tensor::backend::AutodiffBackend + crate::attention::FlashAttentionBackend,
{
    let (b, h) = if c.bh.is_multiple_of(2) { (2, c.bh / 2) } else { (1, c.bh) };
    let x = Inputs::random(c, seed, dtype);
    let want = reference_f64(c, &x, scale);
    let q = tensor::<B, 4>(&x.q, [b, h, c.nq, c.dk], dtype, device).require_grad();
    let k = tensor::<B, 4>(&x.k, [b, h, c.nk, c.dk], dtype, device).require_grad();
    let v = tensor::<B, 4>(&x.v, [b, h, c.nk, c.dv], dtype, device).require_grad();
    let w = tensor::<B, 4>(&x.d_o, [b, h, c.nq, c.dv], dtype, device);

    let o = crate::attention::flash_attention(q.clone(), k.clone(), v.clone(), scale);
    assert_eq!(o.dims(), [b, h, c.nq, c.dv]);
    assert_eq!(o.dtype(), dtype);
    let grads = (o.clone() * w).sum().backward();
    let tol = tolerance(dtype);
    eprintln!("{c:?} {dtype:?} scale {scale} on {}", B::name(device));
    assert_close("o", &to_vec(o), &want.o, tol);
    assert_close("dq", &to_vec(q.grad(&grads).expect("dq")), &want.dq, tol);
    assert_close("dk", &to_vec(k.grad(&grads).expect("dk")), &want.dk, tol);
    assert_close("dv", &to_vec(v.grad(&grads).expect("dv")), &want.dv, tol);
}

/// Forward only, through the public API on any backend.
pub(crate) fn check_forward<B>(device: &B::Device, c: &Case, dtype: DType, seed: u64, scale: f32)
where
    B: crate::attention::FlashAttentionBackend,
{
    let x = Inputs::random(c, seed, dtype);
    let want = reference_f64(c, &x, scale);
    let q = tensor::<B, 4>(&x.q, [1, c.bh, c.nq, c.dk], dtype, device);
    let k = tensor::<B, 4>(&x.k, [1, c.bh, c.nk, c.dk], dtype, device);
    let v = tensor::<B, 4>(&x.v, [1, c.bh, c.nk, c.dv], dtype, device);
    let o = crate::attention::flash_attention(q, k, v, scale);
    eprintln!("{c:?} {dtype:?} forward on {}", B::name(device));
    assert_close("o", &to_vec(o), &want.o, tolerance(dtype));
}
