//! Tests of the detect-decode op against a float64 host reference.
//!
//! - `reference`: the trait's default implementation (`Flex`, `Autodiff<Flex>`) and the anchor grid.
//! - `cube` (generic over the CubeCL runtime): raw kernel launches into NaN-poisoned outputs; instantiated
//!   by `wgpu` (lavapipe) and `cuda` (test names contain `cuda`).
//! - gradients through `Autodiff<Wgpu>` (fusion), `Autodiff<CubeBackend<..>>` and `Autodiff<Flex>`.

mod cube;
#[cfg(feature = "cuda")]
mod cuda;
mod reference;
#[cfg(feature = "wgpu")]
mod wgpu;

use burn::tensor::{backend::AutodiffBackend, DType, Tensor};

use super::{anchor_grid, anchor_grid_data, detect_decode, BoxFormat, DetectDecodeBackend};
use crate::test_util::*;

/// A problem: batch size and the feature maps `(h, w)` with their strides.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    pub batch: usize,
    pub sizes: Vec<(usize, usize)>,
    pub strides: Vec<f32>,
}

impl Case {
    pub fn new(batch: usize, sizes: &[(usize, usize)], strides: &[f32]) -> Self {
        Self { batch, sizes: sizes.to_vec(), strides: strides.to_vec() }
    }
    pub fn anchors(&self) -> usize {
        self.sizes.iter().map(|(h, w)| h * w).sum()
    }
}

/// Small multi-level cases (an odd, non-square level and `B > 1`), and a single anchor.
pub(crate) fn small_cases() -> Vec<Case> {
    vec![
        Case::new(2, &[(8, 8), (4, 4), (2, 2)], &[8.0, 16.0, 32.0]),
        Case::new(3, &[(7, 5), (3, 11)], &[8.0, 32.0]),
        Case::new(1, &[(1, 1)], &[16.0]),
    ]
}

/// Host inputs: distances `[B, 4, A]` (mostly positive, a few negative as an untrained head gives),
/// upstream gradient `w [B, 4, A]`, anchors `[3, A]` (from [`anchor_grid_data`]).
pub(crate) struct Inputs {
    pub dist: Vec<f32>,
    pub w: Vec<f32>,
    pub anchors: Vec<f32>,
}

impl Inputs {
    pub fn random(c: &Case, seed: u64, dtype: DType) -> Self {
        let mut rng = Rng::new(seed);
        let n = c.batch * 4 * c.anchors();
        let dist = round_to((0..n).map(|_| rng.range(-1.0, 12.0)).collect(), dtype);
        let w = round_to(rng.uniform(n, 1.0), dtype);
        let anchors = anchor_grid_data(&c.sizes, &c.strides).to_vec::<f32>().unwrap();
        Self { dist, w, anchors }
    }
}

/// Float64 `(boxes, d dist)` for upstream gradient `w`.
pub(crate) fn reference_f64(c: &Case, x: &Inputs, format: BoxFormat) -> (Vec<f64>, Vec<f64>) {
    let a_n = c.anchors();
    let mut boxes = vec![0.0; x.dist.len()];
    let mut grad = vec![0.0; x.dist.len()];
    for b in 0..c.batch {
        for a in 0..a_n {
            let idx = |ch: usize| (b * 4 + ch) * a_n + a;
            let d = |ch: usize| x.dist[idx(ch)] as f64;
            let g = |ch: usize| x.w[idx(ch)] as f64;
            let (ax, ay, s) = (x.anchors[a] as f64, x.anchors[a_n + a] as f64, x.anchors[2 * a_n + a] as f64);
            let (x1, y1, x2, y2) = (ax - d(0), ay - d(1), ax + d(2), ay + d(3));
            let (out, gr) = match format {
                BoxFormat::Xyxy => ([x1 * s, y1 * s, x2 * s, y2 * s], [-g(0) * s, -g(1) * s, g(2) * s, g(3) * s]),
                BoxFormat::Xywh => (
                    [(x1 + x2) / 2.0 * s, (y1 + y2) / 2.0 * s, (x2 - x1) * s, (y2 - y1) * s],
                    [
                        (g(2) - g(0) / 2.0) * s,
                        (g(3) - g(1) / 2.0) * s,
                        (g(2) + g(0) / 2.0) * s,
                        (g(3) + g(1) / 2.0) * s,
                    ],
                ),
            };
            for ch in 0..4 {
                boxes[idx(ch)] = out[ch];
                grad[idx(ch)] = gr[ch];
            }
        }
    }
    (boxes, grad)
}

/// Public API on an autodiff backend: `loss = Σ detect_decode(dist, anchors) ∘ w`; compares the boxes and
/// `d dist` with the f64 reference. Returns the two measured errors.
pub(crate) fn check_autodiff<B>(device: &B::Device, c: &Case, format: BoxFormat, dtype: DType, seed: u64) -> (f64, f64)
where
    B: AutodiffBackend + DetectDecodeBackend,
{
    let x = Inputs::random(c, seed, dtype);
    let (want_boxes, want_grad) = reference_f64(c, &x, format);
    let shape = [c.batch, 4, c.anchors()];
    let dist = tensor::<B, 3>(&x.dist, shape, dtype, device).require_grad();
    let w = tensor::<B, 3>(&x.w, shape, dtype, device);
    let anchors: Tensor<B, 2> = anchor_grid(&c.sizes, &c.strides, device);
    let boxes = detect_decode(dist.clone(), anchors, format);
    assert_eq!(boxes.dims(), shape);
    assert_eq!(boxes.dtype(), dtype);
    let grads = (boxes.clone() * w).sum().backward();
    let tol = tolerance(dtype);
    eprintln!("{c:?} {format:?} {dtype:?} on {}", B::name(device));
    let e1 = assert_close("boxes", &to_vec(boxes), &want_boxes, tol);
    let e2 = assert_close("d dist", &to_vec(dist.grad(&grads).expect("d dist")), &want_grad, tol);
    (e1, e2)
}

/// Forward only (inference path), any backend.
pub(crate) fn check_forward<B: DetectDecodeBackend>(device: &B::Device, c: &Case, format: BoxFormat, seed: u64) {
    let x = Inputs::random(c, seed, DType::F32);
    let (want, _) = reference_f64(c, &x, format);
    let dist = tensor::<B, 3>(&x.dist, [c.batch, 4, c.anchors()], DType::F32, device);
    let anchors: Tensor<B, 2> = anchor_grid(&c.sizes, &c.strides, device);
    let boxes = detect_decode(dist, anchors, format);
    eprintln!("{c:?} {format:?} forward on {}", B::name(device));
    assert_close("boxes", &to_vec(boxes), &want, 1e-5);
}
