//! Tests of the fused box loss against a float64 host implementation (value; gradient by central
//! differences of the float64 value), on the reference (`Flex`, `Autodiff<Flex>`), the raw kernels into
//! poisoned outputs (strided `dist`), and the op through `Fusion`, `Autodiff<Fusion>` and
//! `Autodiff<CubeBackend>` (wgpu on lavapipe; `cuda` on the GPU).
#![allow(dead_code)]

use burn::backend::{Autodiff, Flex};
use burn::tensor::{backend::AutodiffBackend, Int, Tensor, TensorData};

use super::{bbox_loss_sums, BboxLossBackend};
use crate::ciou::tests::{ciou_alpha_f64, ciou_terms_f64};
use crate::decode::anchor_grid_data;
use crate::test_util::*;

pub(crate) struct Case {
    pub b: usize,
    pub a: usize,
    pub g: usize,
    /// `[B, 4, A]` LTRB, grid units.
    pub dist: Vec<f32>,
    /// `[3, A]` x, y (grid units), stride.
    pub anchors: Vec<f32>,
    /// `[B, G, 4]` xyxy pixels.
    pub gt: Vec<f32>,
    pub idx: Vec<i64>,
    pub weight: Vec<f32>,
    pub image: [f32; 2],
}

/// Feature maps for a 64×48 (W×H) input at strides 8/16/32: `A = 8·6 + 4·3 + 2·2 = 64` anchors. About 40 %
/// of the anchors are background (`w = 0`); foreground anchors get a GT box near their predicted box
/// (overlapping, so every CIoU term is active) and random weights.
pub(crate) fn case(seed: u64, b: usize, g: usize) -> Case {
    let mut rng = Rng::new(seed);
    let image = [64.0f32, 48.0];
    let grid = anchor_grid_data(&[(6, 8), (3, 4), (2, 2)], &[8.0, 16.0, 32.0]);
    let anchors = grid.to_vec::<f32>().unwrap();
    let a = anchors.len() / 3;
    let dist: Vec<f32> = (0..b * 4 * a).map(|_| rng.range(0.3, 3.0)).collect();
    let mut gt = Vec::with_capacity(b * g * 4);
    for _ in 0..b * g {
        let (x, y) = (rng.range(0.0, 40.0), rng.range(0.0, 30.0));
        gt.extend([x, y, x + rng.range(4.0, 24.0), y + rng.range(4.0, 18.0)]);
    }
    let mut idx = Vec::with_capacity(b * a);
    let mut weight = Vec::with_capacity(b * a);
    for bi in 0..b {
        for ai in 0..a {
            let fg = rng.unit() > 0.4;
            let gi = (rng.unit() * g as f32) as usize % g;
            idx.push(if fg { gi as i64 } else { 0 });
            weight.push(if fg { rng.range(0.05, 1.0) } else { 0.0 });
            if fg {
                // GT box = predicted box (pixels) jittered, so the pair overlaps
                let (ax, ay, s) = (anchors[ai], anchors[a + ai], anchors[2 * a + ai]);
                let d = |k: usize| dist[(bi * 4 + k) * a + ai];
                let q = (bi * g + gi) * 4;
                gt[q] = (ax - d(0)) * s + rng.range(-3.0, 3.0);
                gt[q + 1] = (ay - d(1)) * s + rng.range(-3.0, 3.0);
                gt[q + 2] = (ax + d(2)) * s + rng.range(-3.0, 3.0);
                gt[q + 3] = (ay + d(3)) * s + rng.range(-3.0, 3.0);
            }
        }
    }
    Case { b, a, g, dist, anchors, gt, idx, weight, image }
}

/// 1 − CIoU of two xyxy boxes in float64 (ultralytics' formula, the CIoU tests' host implementation).
fn ciou_loss(p: [f64; 4], t: [f64; 4]) -> f64 {
    let (iou, r, v) = ciou_terms_f64(p, t);
    1.0 - (iou - (r + v * ciou_alpha_f64(iou, v)))
}

/// `(box_sum, l1_sum, w_sum)` in float64 for `dist` (the case's other inputs).
fn host_sums(k: &Case, dist: &[f64]) -> [f64; 3] {
    let a = k.a;
    let mut out = [0.0f64; 3];
    for b in 0..k.b {
        for ai in 0..a {
            let w = k.weight[b * a + ai] as f64;
            if w == 0.0 {
                continue;
            }
            let (ax, ay, s) = (k.anchors[ai] as f64, k.anchors[a + ai] as f64, k.anchors[2 * a + ai] as f64);
            let d = |j: usize| dist[(b * 4 + j) * a + ai];
            let q = (b * k.g + k.idx[b * a + ai] as usize) * 4;
            let t: [f64; 4] = std::array::from_fn(|j| k.gt[q + j] as f64 / s);
            let p = [ax - d(0), ay - d(1), ax + d(2), ay + d(3)];
            let tau = [ax - t[0], ay - t[1], t[2] - ax, t[3] - ay];
            let n = [k.image[0] as f64, k.image[1] as f64, k.image[0] as f64, k.image[1] as f64];
            let l1: f64 = (0..4).map(|j| (d(j) * s / n[j] - tau[j] * s / n[j]).abs()).sum::<f64>() / 4.0;
            out[0] += w * ciou_loss(p, t);
            out[1] += w * l1;
            out[2] += w;
        }
    }
    out
}

/// Gradient of `c₀·box_sum + c₁·l1_sum` w.r.t. `dist`: central differences of [`frozen_sums`] in float64
/// (alpha held at its unperturbed value, as the op and ultralytics differentiate).
fn host_grad(k: &Case, c: [f64; 2]) -> Vec<f64> {
    let dist: Vec<f64> = k.dist.iter().map(|&v| v as f64).collect();
    let mut grad = vec![0.0f64; dist.len()];
    for (i, g) in grad.iter_mut().enumerate() {
        let h = 1e-6 * dist[i].abs().max(1.0);
        let f = |x: f64| {
            let mut d = dist.clone();
            d[i] = x;
            frozen_sums(k, &d, &dist, c)
        };
        *g = (f(dist[i] + h) - f(dist[i] - h)) / (2.0 * h);
    }
    grad
}

/// `c₀·box_sum + c₁·l1_sum` at `dist` with each anchor's alpha taken at `dist0` (alpha is a constant).
fn frozen_sums(k: &Case, dist: &[f64], dist0: &[f64], c: [f64; 2]) -> f64 {
    let a = k.a;
    let mut total = 0.0;
    for b in 0..k.b {
        for ai in 0..a {
            let w = k.weight[b * a + ai] as f64;
            if w == 0.0 {
                continue;
            }
            let (ax, ay, s) = (k.anchors[ai] as f64, k.anchors[a + ai] as f64, k.anchors[2 * a + ai] as f64);
            let q = (b * k.g + k.idx[b * a + ai] as usize) * 4;
            let t: [f64; 4] = std::array::from_fn(|j| k.gt[q + j] as f64 / s);
            let boxes = |dd: &[f64]| {
                let d = |j: usize| dd[(b * 4 + j) * a + ai];
                [ax - d(0), ay - d(1), ax + d(2), ay + d(3)]
            };
            let (p, p0) = (boxes(dist), boxes(dist0));
            let (iou0, _, v0) = ciou_terms_f64(p0, t);
            let alpha = ciou_alpha_f64(iou0, v0);
            let (iou, r, v) = ciou_terms_f64(p, t);
            let d = |j: usize| dist[(b * 4 + j) * a + ai];
            let tau = [ax - t[0], ay - t[1], t[2] - ax, t[3] - ay];
            let n = [k.image[0] as f64, k.image[1] as f64, k.image[0] as f64, k.image[1] as f64];
            let l1: f64 = (0..4).map(|j| (d(j) * s / n[j] - tau[j] * s / n[j]).abs()).sum::<f64>() / 4.0;
            total += c[0] * w * (1.0 - (iou - (r + v * alpha))) + c[1] * w * l1;
        }
    }
    total
}

type Inputs<B> = (Tensor<B, 3>, Tensor<B, 2>, Tensor<B, 3>, Tensor<B, 2, Int>, Tensor<B, 2>);

/// The case on a device; `strided` uploads `dist` as a transposed view of a `[B, A, 4]` tensor.
fn inputs<B: burn::tensor::backend::Backend>(k: &Case, dev: &B::Device, strided: bool) -> Inputs<B> {
    let dist = if strided {
        transposed_view::<B>(&k.dist, [k.b, 4, k.a], dev)
    } else {
        Tensor::from_data(TensorData::new(k.dist.clone(), [k.b, 4, k.a]), dev)
    };
    (
        dist,
        Tensor::from_data(TensorData::new(k.anchors.clone(), [3, k.a]), dev),
        Tensor::from_data(TensorData::new(k.gt.clone(), [k.b, k.g, 4]), dev),
        Tensor::from_data(TensorData::new(k.idx.clone(), [k.b, k.a]), dev),
        Tensor::from_data(TensorData::new(k.weight.clone(), [k.b, k.a]), dev),
    )
}

fn want_sums(k: &Case) -> Vec<f64> {
    host_sums(k, &k.dist.iter().map(|&v| v as f64).collect::<Vec<_>>()).to_vec()
}

/// Value on `B` (no autodiff), contiguous and strided `dist`.
pub(crate) fn check_value<B: BboxLossBackend>(dev: &B::Device, seed: u64) {
    for (b, g) in [(1, 1), (3, 5)] {
        let k = case(seed + b as u64, b, g);
        let want = want_sums(&k);
        for strided in [false, true] {
            let (d, an, gt, idx, w) = inputs::<B>(&k, dev, strided);
            let got = to_vec(bbox_loss_sums(d, an, gt, idx, w, k.image));
            assert_close(&format!("{} sums b{b} g{g} strided {strided}", B::name(dev)), &got, &want, 1e-5);
        }
    }
}

/// Value and gradient under an autodiff backend `A` (upstream gradient `(0.7, −1.3, 2.0)`: the weight sum's
/// entry must have no effect).
pub(crate) fn check_grad<A: AutodiffBackend + BboxLossBackend>(dev: &A::Device, seed: u64) {
    for (b, g) in [(1, 1), (2, 3)] {
        let k = case(seed + b as u64, b, g);
        let want = want_sums(&k);
        let want_g = host_grad(&k, [0.7, -1.3]);
        let (d, an, gt, idx, w) = inputs::<A>(&k, dev, false);
        let d = d.require_grad();
        let sums = bbox_loss_sums(d.clone(), an, gt, idx, w, k.image);
        let up = Tensor::<A, 1>::from_floats([0.7, -1.3, 2.0], dev);
        let grads = (sums.clone() * up).sum().backward();
        let got = to_vec(d.grad(&grads).expect("dist gradient"));
        assert_close(&format!("{} sums", A::name(dev)), &to_vec(sums), &want, 1e-5);
        assert_close(&format!("{} grad", A::name(dev)), &got, &want_g, 2e-5);
    }
}

#[test]
fn reference_flex() {
    check_value::<Flex>(&Default::default(), 12_000);
    check_grad::<Autodiff<Flex>>(&Default::default(), 12_100);
}

#[test]
fn no_gt_slots_and_no_anchors() {
    let dev = Default::default();
    let sums = bbox_loss_sums(
        Tensor::<Flex, 3>::ones([2, 4, 5], &dev),
        Tensor::<Flex, 2>::ones([3, 5], &dev),
        Tensor::<Flex, 3>::zeros([2, 0, 4], &dev),
        Tensor::<Flex, 2, Int>::zeros([2, 5], &dev),
        Tensor::<Flex, 2>::zeros([2, 5], &dev),
        [64.0, 64.0],
    );
    assert_eq!(to_vec(sums), vec![0.0; 3]);
    let sums = bbox_loss_sums(
        Tensor::<Flex, 3>::ones([2, 4, 0], &dev),
        Tensor::<Flex, 2>::ones([3, 0], &dev),
        Tensor::<Flex, 3>::zeros([2, 1, 4], &dev),
        Tensor::<Flex, 2, Int>::zeros([2, 0], &dev),
        Tensor::<Flex, 2>::zeros([2, 0], &dev),
        [64.0, 64.0],
    );
    assert_eq!(to_vec(sums), vec![0.0; 3]);
}

#[test]
#[should_panic(expected = "bbox_loss_sums: expected dist [B, 4, A]")]
fn rejects_bad_shapes() {
    let dev = Default::default();
    let _ = bbox_loss_sums(
        Tensor::<Flex, 3>::ones([2, 4, 5], &dev),
        Tensor::<Flex, 2>::ones([3, 6], &dev),
        Tensor::<Flex, 3>::zeros([2, 1, 4], &dev),
        Tensor::<Flex, 2, Int>::zeros([2, 5], &dev),
        Tensor::<Flex, 2>::zeros([2, 5], &dev),
        [64.0, 64.0],
    );
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub(crate) mod cube {
    use burn::tensor::{DType, TensorPrimitive};
    use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeRuntime};

    use super::*;
    use crate::bbox_loss::cube::raw;

    /// Raw launches into NaN-poisoned outputs with a strided `dist`; partials must cover every anchor.
    pub(crate) fn check_kernels<R: CubeRuntime, BT: BoolElement>(dev: &R::Device, seed: u64) {
        let k = case(seed, 3, 4);
        let (b, a) = (k.b, k.a);
        let want = want_sums(&k);
        let (d, an, gt, idx, w) = inputs::<Cb<R, BT>>(&k, dev, true);
        let d: CubeTensor<R> = d.into_primitive().tensor();
        assert!(!d.is_contiguous(), "the strided case must not be contiguous");
        let an: CubeTensor<R> = burn_cubecl::kernel::into_contiguous(an.into_primitive().tensor());
        let gt: CubeTensor<R> = burn_cubecl::kernel::into_contiguous(gt.into_primitive().tensor());
        let idx: CubeTensor<R> = burn_cubecl::kernel::into_contiguous(idx.into_primitive());
        let w: CubeTensor<R> = burn_cubecl::kernel::into_contiguous(w.into_primitive().tensor());
        let (_, chunks) = raw::forward_split(b, a);
        let partial = poisoned::<R, BT, 3>([b, chunks, 3], DType::F32, dev);
        raw::launch_bbox_loss_forward(&d, &an, &gt, &idx, &w, &partial, k.image);
        let parts = download::<R, BT, 3>(partial);
        assert!(parts.iter().all(|v| v.is_finite()), "partials: unwritten entries");
        let got: Vec<f32> =
            (0..3).map(|i| parts.iter().skip(i).step_by(3).map(|&v| v as f64).sum::<f64>() as f32).collect();
        assert_close("kernel sums", &got, &want, 1e-5);

        let d_sums = upload::<R, BT, 1>(&[0.7, -1.3, 2.0], [3], DType::F32, dev);
        let out = poisoned::<R, BT, 3>([b, 4, a], DType::F32, dev);
        raw::launch_bbox_loss_backward(&d, &an, &gt, &idx, &w, &d_sums, &out, k.image);
        let got = to_vec(Tensor::<Cb<R, BT>, 3>::from_primitive(TensorPrimitive::Float(out)));
        assert_close("kernel grad", &got, &host_grad(&k, [0.7, -1.3]), 2e-5);
    }
}

#[cfg(feature = "wgpu")]
mod wgpu {
    use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
    use burn::backend::{Autodiff, Wgpu};

    use super::*;

    #[test]
    fn bbox_loss_wgpu_kernels() {
        cube::check_kernels::<WgpuRuntime, u32>(&WgpuDevice::DefaultDevice, 12_200);
    }

    #[test]
    fn bbox_loss_wgpu_fusion_and_autodiff() {
        check_value::<Wgpu>(&WgpuDevice::DefaultDevice, 12_300);
        check_grad::<Autodiff<Wgpu>>(&WgpuDevice::DefaultDevice, 12_400);
        check_grad::<Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>>(&WgpuDevice::DefaultDevice, 12_500);
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use burn::backend::cuda::CudaDevice;
    use burn::backend::{Autodiff, Cuda};
    use burn_cubecl::CubeBackend;
    use cubecl::cuda::CudaRuntime;

    use super::*;

    #[test]
    fn bbox_loss_cuda_kernels() {
        cube::check_kernels::<CudaRuntime, u8>(&CudaDevice::default(), 12_200);
    }

    #[test]
    fn bbox_loss_cuda_fusion_and_autodiff() {
        check_value::<Cuda>(&CudaDevice::default(), 12_300);
        check_grad::<Autodiff<Cuda>>(&CudaDevice::default(), 12_400);
        check_grad::<Autodiff<CubeBackend<CudaRuntime, f32, i32, u8>>>(&CudaDevice::default(), 12_500);
    }
}
