//! The anchor-pass kernels against the float64 references of the ops they fuse ([`crate::bbox_loss`]'s and
//! [`crate::bce_onehot`]'s tensor-op references on `Flex` in F64), on random inputs: strided `dist` and
//! logits (transposed views), anchor rows with a pitch, background anchors, labels outside `[0, C)`, more
//! anchors than one cube; every output NaN-poisoned before the launch.
#![allow(dead_code)]

use burn::backend::Flex;
use burn::tensor::{DType, Int, Tensor, TensorData, TensorPrimitive};

use crate::decode::anchor_grid_data;
use crate::test_util::*;

struct Case {
    b: usize,
    c: usize,
    a: usize,
    g: usize,
    dist: Vec<f32>,
    logits: Vec<f32>,
    anchors: Vec<f32>,
    gt: Vec<f32>,
    idx: Vec<i64>,
    labels: Vec<i64>,
    score: Vec<f32>,
    image: [f32; 2],
}

/// A 160×128 input at strides 8/16/32 (`A = 20·16 + 10·8 + 5·4 = 420`: two cubes); about 40 % background
/// (`w = 0`), foreground anchors with a GT box near their predicted box; labels in `[−1, C]`.
fn case(seed: u64, b: usize, c: usize, g: usize) -> Case {
    let mut rng = Rng::new(seed);
    let image = [160.0f32, 128.0];
    let anchors = anchor_grid_data(&[(16, 20), (8, 10), (4, 5)], &[8.0, 16.0, 32.0]).to_vec::<f32>().unwrap();
    let a = anchors.len() / 3;
    let dist: Vec<f32> = (0..b * 4 * a).map(|_| rng.range(0.3, 3.0)).collect();
    let logits: Vec<f32> = (0..b * c * a).map(|_| rng.range(-7.0, 4.0)).collect();
    let mut gt = Vec::with_capacity(b * g * 4);
    for _ in 0..b * g {
        let (x, y) = (rng.range(0.0, 120.0), rng.range(0.0, 100.0));
        gt.extend([x, y, x + rng.range(4.0, 40.0), y + rng.range(4.0, 28.0)]);
    }
    let (mut idx, mut labels, mut score) = (Vec::new(), Vec::new(), Vec::new());
    for bi in 0..b {
        for ai in 0..a {
            let fg = rng.unit() > 0.4;
            let gi = (rng.unit() * g as f32) as usize % g;
            idx.push(if fg { gi as i64 } else { 0 });
            labels.push(((rng.unit() * (c + 2) as f32) as i64).min(c as i64 + 1) - 1);
            score.push(if fg { rng.range(0.05, 1.0) } else { 0.0 });
            if fg {
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
    Case { b, c, a, g, dist, logits, anchors, gt, idx, labels, score, image }
}

type F = Flex;

fn f64t<const D: usize>(data: &[f32], shape: [usize; D]) -> Tensor<F, D> {
    Tensor::<F, D>::from_data(TensorData::new(data.to_vec(), shape), &Default::default()).cast(DType::F64)
}

fn intt(data: &[i64], shape: [usize; 2]) -> Tensor<F, 2, Int> {
    Tensor::<F, 2, Int>::from_data(TensorData::new(data.to_vec(), shape), &Default::default())
}

fn host(t: Tensor<F, 1>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

fn host3(t: burn::tensor::ops::FloatTensor<F>) -> Vec<f64> {
    Tensor::<F, 3>::from_primitive(TensorPrimitive::Float(t)).into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

/// Float64 references: `(S_box, S_l1, W, S_cls)`, `d dist` and `d logits` for the backward factors
/// `gains`, `mix`, `d_total`.
fn reference(k: &Case, gains: [f32; 3], mix: f32, d_total: f32) -> ([f64; 4], Vec<f64>, Vec<f64>) {
    let (b, c, a, g) = (k.b, k.c, k.a, k.g);
    let dist = || f64t(&k.dist, [b, 4, a]).into_primitive().tensor();
    let anchors = || f64t(&k.anchors, [3, a]).into_primitive().tensor();
    let gt = || f64t(&k.gt, [b, g, 4]).into_primitive().tensor();
    let idx = || intt(&k.idx, [b, a]).into_primitive();
    let labels = || intt(&k.labels, [b, a]).into_primitive();
    let score = || f64t(&k.score, [b, a]).into_primitive().tensor();
    let logits = || f64t(&k.logits, [b, c, a]).into_primitive().tensor();
    let box_sums = host(Tensor::from_primitive(TensorPrimitive::Float(crate::bbox_loss::reference_sums::<F>(
        dist(),
        anchors(),
        gt(),
        idx(),
        score(),
        k.image,
    ))));
    let cls = host(Tensor::from_primitive(TensorPrimitive::Float(crate::bce_onehot::reference_sum::<F>(
        logits(),
        labels(),
        score(),
    ))));
    let d = mix as f64 * d_total as f64 / box_sums[2].max(1.0);
    let gv = gains.map(|v| v as f64);
    let d_sums = Tensor::<F, 1>::from_data(TensorData::new(vec![gv[0] * d, gv[2] * d, 0.0], [3]), &Default::default());
    let d_dist = host3(crate::bbox_loss::reference_backward::<F>(
        dist(),
        anchors(),
        gt(),
        idx(),
        score(),
        k.image,
        d_sums.into_primitive().tensor(),
    ));
    let d_cls = Tensor::<F, 1>::from_data(TensorData::new(vec![gv[1] * d], [1]), &Default::default());
    let d_logits =
        host3(crate::bce_onehot::reference_backward::<F>(logits(), labels(), score(), d_cls.into_primitive().tensor()));
    ([box_sums[0], box_sums[1], box_sums[2], cls[0]], d_dist, d_logits)
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub(crate) mod cube {
    use burn_cubecl::{kernel::into_contiguous, tensor::CubeTensor, BoolElement, CubeRuntime};

    use super::*;
    use crate::branch_loss::kernels::det_loss::{
        forward_split, launch_det_loss_backward, launch_det_loss_forward, AnchorPass,
    };

    fn ints<R: CubeRuntime, BT: BoolElement>(data: &[i64], shape: [usize; 2], dev: &R::Device) -> CubeTensor<R> {
        into_contiguous(
            Tensor::<Cb<R, BT>, 2, Int>::from_data(TensorData::new(data.to_vec(), shape), dev).into_primitive(),
        )
    }

    /// Both kernels for one case; `strided`: `dist` and the logits as transposed views, anchor rows pitched.
    pub(crate) fn check_kernels<R: CubeRuntime, BT: BoolElement>(dev: &R::Device) {
        let gains = [7.5f32 * 2.0, 0.5 * 2.0, 1.5 * 2.0];
        for (seed, c, g, strided) in [(41_000u64, 5usize, 3usize, false), (41_001, 80, 7, true)] {
            let k = case(seed, 2, c, g);
            let (b, a) = (k.b, k.a);
            let (dist, logits, anchors): (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) = if strided {
                let anchors = pitched_rows::<R, BT>(&k.anchors, [3, a], a + 5, dev);
                (
                    transposed_view::<Cb<R, BT>>(&k.dist, [b, 4, a], dev).into_primitive().tensor(),
                    transposed_view::<Cb<R, BT>>(&k.logits, [b, c, a], dev).into_primitive().tensor(),
                    anchors,
                )
            } else {
                (
                    upload::<R, BT, 3>(&k.dist, [b, 4, a], DType::F32, dev),
                    upload::<R, BT, 3>(&k.logits, [b, c, a], DType::F32, dev),
                    upload::<R, BT, 2>(&k.anchors, [3, a], DType::F32, dev),
                )
            };
            if strided {
                assert!(!dist.is_contiguous() && !logits.is_contiguous(), "the strided case must be strided");
                assert_ne!(anchors.meta.strides()[0], a, "the anchor rows must be pitched");
            }
            let gt_boxes = upload::<R, BT, 3>(&k.gt, [b, g, 4], DType::F32, dev);
            let gt_idx = ints::<R, BT>(&k.idx, [b, a], dev);
            let labels = ints::<R, BT>(&k.labels, [b, a], dev);
            let score = upload::<R, BT, 2>(&k.score, [b, a], DType::F32, dev);
            let pass = AnchorPass {
                dist: &dist,
                logits: &logits,
                anchors: &anchors,
                gt_boxes: &gt_boxes,
                gt_idx: &gt_idx,
                labels: &labels,
                score: &score,
                image: k.image,
            };
            let (mix, d_total) = (0.3f32, 1.7f32);
            let (want, want_dd, want_dl) = reference(&k, gains, mix, d_total);
            let what = format!("det_loss B {b} C {c} A {a} G {g} strided {strided}");

            let (_, chunks) = forward_split(b, a);
            assert!(chunks > 1, "the case must span several cubes");
            let box_partial = poisoned::<R, BT, 3>([b, chunks, 3], DType::F32, dev);
            let cls_partial = poisoned::<R, BT, 2>([b, chunks], DType::F32, dev);
            launch_det_loss_forward(pass, &box_partial, &cls_partial);
            let bp = download::<R, BT, 3>(box_partial);
            let cp = download::<R, BT, 2>(cls_partial);
            assert!(bp.iter().chain(&cp).all(|v| v.is_finite()), "{what}: unwritten partials");
            let col = |i: usize| bp.iter().skip(i).step_by(3).map(|&v| v as f64).sum::<f64>() as f32;
            let got = [col(0), col(1), col(2), cp.iter().map(|&v| v as f64).sum::<f64>() as f32];
            for (i, name) in ["S_box", "S_l1", "W", "S_cls"].iter().enumerate() {
                assert_close(&format!("{what}: {name}"), &got[i..i + 1], &want[i..i + 1], 2e-5);
            }

            // the backward takes W from the forward's items kernel: here the host value
            let w_sum = upload::<R, BT, 1>(&[want[2] as f32], [1], DType::F32, dev);
            let d_t = upload::<R, BT, 1>(&[d_total], [1], DType::F32, dev);
            let d_dist = poisoned::<R, BT, 3>([b, 4, a], DType::F32, dev);
            let d_logits = poisoned::<R, BT, 3>([b, c, a], DType::F32, dev);
            launch_det_loss_backward(pass, &w_sum, &d_t, &d_dist, &d_logits, gains, mix);
            assert_close(&format!("{what}: d dist"), &download::<R, BT, 3>(d_dist), &want_dd, 2e-5);
            assert_close(&format!("{what}: d logits"), &download::<R, BT, 3>(d_logits), &want_dl, 2e-5);
        }
    }
}

#[cfg(feature = "wgpu")]
mod wgpu {
    use burn::backend::wgpu::{WgpuDevice, WgpuRuntime};

    #[test]
    fn det_loss_wgpu_kernels() {
        super::cube::check_kernels::<WgpuRuntime, u32>(&WgpuDevice::DefaultDevice);
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use burn::backend::cuda::CudaDevice;
    use cubecl::cuda::CudaRuntime;

    #[test]
    fn det_loss_cuda_kernels() {
        super::cube::check_kernels::<CudaRuntime, u8>(&CudaDevice::default());
    }
}
