//! Tests of the PSA attention op against the plain ultralytics formulation in float64 on the host.
//!
//! - `reference`: the trait's default implementation (`Flex`, `Autodiff<Flex>`).
//! - `cube` (generic over the CubeCL runtime): each rearrangement kernel launched into NaN-poisoned
//!   outputs; instantiated by `wgpu` (lavapipe in CI, small shapes) and `cuda` (names contain `cuda`).

mod cube;
#[cfg(feature = "cuda")]
mod cuda;
mod reference;
#[cfg(feature = "wgpu")]
mod wgpu;

use burn::tensor::{backend::AutodiffBackend, DType};

pub(crate) use crate::attention::tests::{assert_close, tensor, to_vec, tolerance, Rng};
use crate::psa::{psa_attention, PsaBackend};

/// `B` images, `nh` heads, key dim `kd`, head dim `hd`, an `h × w` feature map.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PsaCase {
    pub b: usize,
    pub nh: usize,
    pub kd: usize,
    pub hd: usize,
    pub h: usize,
    pub w: usize,
}

impl PsaCase {
    pub const fn new(b: usize, nh: usize, kd: usize, hd: usize, h: usize, w: usize) -> Self {
        Self { b, nh, kd, hd, h, w }
    }
    pub fn n(&self) -> usize {
        self.h * self.w
    }
    pub fn c3(&self) -> usize {
        2 * self.kd + self.hd
    }
    pub fn c(&self) -> usize {
        self.nh * self.hd
    }
    pub fn scale(&self) -> f32 {
        (self.kd as f32).powf(-0.5)
    }
    pub fn qkv_shape(&self) -> [usize; 4] {
        [self.b, self.nh * self.c3(), self.h, self.w]
    }
    pub fn out_shape(&self) -> [usize; 4] {
        [self.b, self.c(), self.h, self.w]
    }
}

/// Shapes: `N` not a multiple of the FA tiles (64 rows), `nh` 1 and 2, `kd` 16 and 32 (`hd = 2·kd` as in
/// the model's `attn_ratio = 0.5`, plus one `hd ≠ 2·kd`), `B > 1`, `N = 1`. All `N ≤ 130` (lavapipe).
pub(crate) const CASES: [PsaCase; 6] = [
    PsaCase::new(2, 1, 16, 32, 7, 11),
    PsaCase::new(1, 2, 32, 64, 10, 13),
    PsaCase::new(2, 2, 16, 32, 8, 8),
    PsaCase::new(3, 1, 32, 64, 5, 5),
    PsaCase::new(1, 2, 16, 48, 9, 7),
    PsaCase::new(2, 2, 16, 32, 1, 1),
];

/// Random inputs (rounded to the storage dtype): `qkv`, and the upstream gradients `w_attn`, `w_v` of the
/// two outputs (`loss = Σ attn ∘ w_attn + Σ v ∘ w_v`).
pub(crate) struct PsaInputs {
    pub qkv: Vec<f32>,
    pub w_attn: Vec<f32>,
    pub w_v: Vec<f32>,
}

impl PsaInputs {
    pub fn random(c: &PsaCase, seed: u64, dtype: DType) -> Self {
        let mut rng = Rng::new(seed);
        let mut gen = |n: usize, amp: f32| crate::attention::tests::round_to(rng.uniform(n, amp), dtype);
        let nq = c.qkv_shape().iter().product();
        let no = c.out_shape().iter().product();
        Self { qkv: gen(nq, 2.0), w_attn: gen(no, 1.0), w_v: gen(no, 1.0) }
    }
}

/// Float64 reference: `attn`, `v` (NCHW `[B, C, H, W]`) and `d qkv` (`[B, nh·C3, H, W]`), computed with
/// ultralytics' formulation literally: `q, k, v = qkv.view(B, nh, C3, N).split(..)`,
/// `attn = softmax((q·scale)ᵀ k)`, `x = v attnᵀ`.
pub(crate) struct PsaExpected {
    pub attn: Vec<f64>,
    pub v: Vec<f64>,
    pub dqkv: Vec<f64>,
}

pub(crate) fn reference_f64(c: &PsaCase, x: &PsaInputs, scale: f32) -> PsaExpected {
    let (n, kd, hd, c3, cc) = (c.n(), c.kd, c.hd, c.c3(), c.c());
    let scale = scale as f64;
    let qkv: Vec<f64> = x.qkv.iter().map(|&a| a as f64).collect();
    let mut attn = vec![0.0; c.b * cc * n];
    let mut vn = vec![0.0; c.b * cc * n];
    let mut dqkv = vec![0.0; qkv.len()];
    for b in 0..c.b {
        for h in 0..c.nh {
            // qkv.view(B, nh, C3, N)[b, h, ch, t]
            let base = (b * c.nh + h) * c3;
            let at = |ch: usize, t: usize| qkv[(base + ch) * n + t];
            let q = |d: usize, t: usize| at(d, t);
            let k = |d: usize, t: usize| at(kd + d, t);
            let v = |d: usize, t: usize| at(2 * kd + d, t);
            // attn[i][j] = softmax_j(Σ_d q[d][i]·scale · k[d][j])
            let mut p = vec![0.0; n * n];
            for i in 0..n {
                let row = &mut p[i * n..][..n];
                for (j, r) in row.iter_mut().enumerate() {
                    *r = (0..kd).map(|d| q(d, i) * scale * k(d, j)).sum::<f64>();
                }
                let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let mut l = 0.0;
                for r in row.iter_mut() {
                    *r = (*r - m).exp();
                    l += *r;
                }
                for r in row.iter_mut() {
                    *r /= l;
                }
            }
            // x[d][i] = Σ_j v[d][j] attn[i][j]; channel h·hd + d of the NCHW output.
            let out_at = |d: usize, t: usize| (b * cc + h * hd + d) * n + t;
            for d in 0..hd {
                for i in 0..n {
                    attn[out_at(d, i)] = (0..n).map(|j| v(d, j) * p[i * n + j]).sum();
                    vn[out_at(d, i)] = v(d, i);
                }
            }
            // Backward: g[d][i] = ∂loss/∂x[d][i]; dv[d][j] = Σ_i g[d][i] p[i][j] + w_v[d][j];
            // dp[i][j] = Σ_d g[d][i] v[d][j]; ds = p (dp − Σ_j p dp); dq[d][i] = scale Σ_j ds[i][j] k[d][j];
            // dk[d][j] = scale Σ_i ds[i][j] q[d][i].
            let g = |d: usize, t: usize| x.w_attn[out_at(d, t)] as f64;
            let mut ds = vec![0.0; n * n];
            for i in 0..n {
                let mut dp = vec![0.0; n];
                for (j, e) in dp.iter_mut().enumerate() {
                    *e = (0..hd).map(|d| g(d, i) * v(d, j)).sum::<f64>();
                }
                let delta: f64 = (0..n).map(|j| p[i * n + j] * dp[j]).sum();
                for j in 0..n {
                    ds[i * n + j] = p[i * n + j] * (dp[j] - delta);
                }
            }
            for d in 0..kd {
                for i in 0..n {
                    dqkv[(base + d) * n + i] = scale * (0..n).map(|j| ds[i * n + j] * k(d, j)).sum::<f64>();
                    dqkv[(base + kd + d) * n + i] = scale * (0..n).map(|j| ds[j * n + i] * q(d, j)).sum::<f64>();
                }
            }
            for d in 0..hd {
                for j in 0..n {
                    let dv: f64 = (0..n).map(|i| g(d, i) * p[i * n + j]).sum();
                    dqkv[(base + 2 * kd + d) * n + j] = dv + x.w_v[out_at(d, j)] as f64;
                }
            }
        }
    }
    PsaExpected { attn, v: vn, dqkv }
}

/// Forward and gradient through the public [`psa_attention`] on an autodiff backend, against the f64
/// ultralytics formulation. Returns the relative errors `(attn, v, dqkv)`.
pub(crate) fn check_autodiff<B>(device: &B::Device, c: &PsaCase, dtype: DType, seed: u64) -> [f64; 3]
where
    B: AutodiffBackend + PsaBackend,
{
    let scale = c.scale();
    let x = PsaInputs::random(c, seed, dtype);
    let want = reference_f64(c, &x, scale);
    let qkv = tensor::<B, 4>(&x.qkv, c.qkv_shape(), dtype, device).require_grad();
    let wa = tensor::<B, 4>(&x.w_attn, c.out_shape(), dtype, device);
    let wv = tensor::<B, 4>(&x.w_v, c.out_shape(), dtype, device);
    let (attn, v) = psa_attention(qkv.clone(), c.nh, c.kd, scale);
    assert_eq!(attn.dims(), c.out_shape());
    assert_eq!(v.dims(), c.out_shape());
    assert_eq!(attn.dtype(), dtype);
    let grads = ((attn.clone() * wa).sum() + (v.clone() * wv).sum()).backward();
    let tol = tolerance(dtype);
    eprintln!("{c:?} {dtype:?} on {}", B::name(device));
    [
        assert_close("attn", &to_vec(attn), &want.attn, tol),
        assert_close("v", &to_vec(v), &want.v, tol),
        assert_close("dqkv", &to_vec(qkv.grad(&grads).expect("dqkv")), &want.dqkv, tol),
    ]
}

/// Forward only through [`psa_attention`] on any backend.
pub(crate) fn check_forward<B: PsaBackend>(device: &B::Device, c: &PsaCase, dtype: DType, seed: u64) -> [f64; 2] {
    let scale = c.scale();
    let x = PsaInputs::random(c, seed, dtype);
    let want = reference_f64(c, &x, scale);
    let qkv = tensor::<B, 4>(&x.qkv, c.qkv_shape(), dtype, device);
    let (attn, v) = psa_attention(qkv, c.nh, c.kd, scale);
    eprintln!("{c:?} {dtype:?} forward on {}", B::name(device));
    [
        assert_close("attn", &to_vec(attn), &want.attn, tolerance(dtype)),
        assert_close("v", &to_vec(v), &want.v, tolerance(dtype)),
    ]
}
