//! The items kernels against a float64 host computation on random partial sums (two weight scales: the
//! `max(W, 1)` clamp active and not), into NaN-poisoned outputs; the tensor-op reference likewise.
use burn::backend::Flex;
use burn::tensor::{Tensor, TensorData};

use crate::branch_loss::{items_backward, items_from_sums};
use crate::test_util::{assert_close, to_vec, Rng};

const GAINS: [f32; 3] = [7.5 * 3.0, 0.5 * 3.0, 1.5 * 3.0];

/// `(box_partial [3n], cls_partial [m])`; weights scaled by `w_scale`.
fn partials(seed: u64, n: usize, m: usize, w_scale: f32) -> (Vec<f32>, Vec<f32>) {
    let mut rng = Rng::new(seed);
    let mut bp = Vec::with_capacity(3 * n);
    for _ in 0..n {
        bp.extend([rng.range(0.0, 2.0), rng.range(0.0, 1.0), rng.range(0.0, w_scale)]);
    }
    (bp, (0..m).map(|_| rng.range(0.0, 5.0)).collect())
}

/// Host items and `k = 1 / max(W, 1)`.
fn host_items(bp: &[f32], cp: &[f32]) -> ([f64; 4], f64) {
    let col = |c: usize| bp.iter().skip(c).step_by(3).map(|&v| v as f64).sum::<f64>();
    let (s_box, s_l1, w) = (col(0), col(1), col(2));
    let s_cls = cp.iter().map(|&v| v as f64).sum::<f64>();
    let k = 1.0 / w.max(1.0);
    let g = GAINS.map(|v| v as f64);
    ([g[0] * s_box * k, g[1] * s_cls * k, g[2] * s_l1 * k, w], k)
}

#[test]
fn reference_items_match_host() {
    let dev = Default::default();
    for (seed, w_scale) in [(31_000, 0.01f32), (31_001, 3.0)] {
        let (bp, cp) = partials(seed, 5, 4, w_scale);
        let col = |c: usize| bp.iter().skip(c).step_by(3).sum::<f32>();
        let box_sums = Tensor::<Flex, 1>::from_data(TensorData::new(vec![col(0), col(1), col(2)], [3]), &dev);
        let cls = Tensor::<Flex, 1>::from_data(TensorData::new(vec![cp.iter().sum::<f32>()], [1]), &dev);
        let (items, w) = items_from_sums(box_sums, cls, GAINS);
        let got = [to_vec(items), to_vec(w.clone())].concat();
        let (want, k) = host_items(&bp, &cp);
        assert_close(&format!("reference items (W scale {w_scale})"), &got, &want, 1e-5);
        let d_items = Tensor::<Flex, 1>::from_data(TensorData::new(vec![0.7f32, -1.3, 2.1], [3]), &dev);
        let (d_box, d_cls) = items_backward(d_items, w, GAINS);
        let g = GAINS.map(|v| v as f64);
        let want_box = [g[0] * k * 0.7, g[2] * k * 2.1, 0.0];
        assert_close("reference d_box", &to_vec(d_box), &want_box, 1e-5);
        assert_close("reference d_cls", &to_vec(d_cls), &[g[1] * k * -1.3], 1e-5);
    }
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub(crate) mod cube {
    use burn::tensor::DType;
    use burn_cubecl::{BoolElement, CubeRuntime};

    use super::*;
    use crate::branch_loss::kernels::loss_items::{launch_loss_items_forward, ItemsOut};
    use crate::test_util::{download, poisoned, upload};

    /// Over more partials than units (strided unit loop) and fewer (idle units), with a branch weight.
    pub(crate) fn check_kernels<R: CubeRuntime, BT: BoolElement>(dev: &R::Device) {
        for (seed, n, m, w_scale) in [(32_000, 3 * 37, 700, 0.01f32), (32_001, 5, 3, 4.0), (32_002, 1000, 5120, 0.5)] {
            let (bp, cp) = partials(seed, n, m, w_scale);
            let box_partial = upload::<R, BT, 3>(&bp, [1, n, 3], DType::F32, dev);
            let cls_partial = upload::<R, BT, 2>(&cp, [m, 1], DType::F32, dev);
            let items = poisoned::<R, BT, 1>([3], DType::F32, dev);
            let w_sum = poisoned::<R, BT, 1>([1], DType::F32, dev);
            let total = poisoned::<R, BT, 1>([1], DType::F32, dev);
            let terms = poisoned::<R, BT, 1>([3], DType::F32, dev);
            let mix = 0.3f32;
            let out = ItemsOut { items: &items, w_sum: &w_sum, total: &total, terms: &terms };
            launch_loss_items_forward(&box_partial, &cls_partial, out, GAINS, mix);
            let (want, _k) = host_items(&bp, &cp);
            let what = format!("items kernel n {n} m {m} W scale {w_scale}");
            let got = [download::<R, BT, 1>(items), download::<R, BT, 1>(w_sum)].concat();
            assert_close(&what, &got, &want, 1e-5);
            let mx = mix as f64;
            let want_terms = [mx * want[0], mx * want[1], mx * want[2]];
            assert_close(&format!("{what}: terms"), &download::<R, BT, 1>(terms), &want_terms, 1e-5);
            let want_total = mx * (want[0] + want[1] + want[2]);
            assert_close(&format!("{what}: total"), &download::<R, BT, 1>(total), &[want_total], 1e-5);
        }
    }
}

#[cfg(feature = "wgpu")]
mod wgpu {
    use burn::backend::wgpu::{WgpuDevice, WgpuRuntime};

    #[test]
    fn loss_items_wgpu_kernels() {
        super::cube::check_kernels::<WgpuRuntime, u32>(&WgpuDevice::DefaultDevice);
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use burn::backend::cuda::CudaDevice;
    use cubecl::cuda::CudaRuntime;

    #[test]
    fn loss_items_cuda_kernels() {
        super::cube::check_kernels::<CudaRuntime, u8>(&CudaDevice::default());
    }
}
