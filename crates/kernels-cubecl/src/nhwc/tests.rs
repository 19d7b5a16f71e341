//! `Flex`'s loops against the reference (Burn's own ops on `Flex`): exact, since max and copies do no arithmetic.
use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use burn::tensor::{Tensor, TensorData};

use super::{cat_channels, float, max_pool2d, reference, tensor, upsample2x, PoolSpec};
use crate::test_util::Rng;

fn random(shape: [usize; 4], lo: f32, hi: f32, seed: u64) -> Tensor<Flex, 4> {
    let mut rng = Rng::new(seed);
    let n = shape.iter().product();
    Tensor::from_data(TensorData::new((0..n).map(|_| rng.range(lo, hi)).collect::<Vec<f32>>(), shape), &FlexDevice)
}

fn assert_same(got: Tensor<Flex, 4>, want: Tensor<Flex, 4>, what: &str) {
    assert_eq!(got.dims(), want.dims(), "{what}: shape");
    let (g, w) = (got.into_data().to_vec::<f32>().unwrap(), want.into_data().to_vec::<f32>().unwrap());
    assert!(g.iter().zip(&w).all(|(a, b)| a.to_bits() == b.to_bits()), "{what}: values differ");
}

#[test]
fn nhwc_flex_max_pool_equals_reference() {
    let specs = [
        ([5, 5], [1, 1], [2, 2]), // SPPF
        ([3, 3], [2, 2], [1, 1]),
        ([2, 2], [2, 2], [0, 0]),
        ([3, 1], [1, 2], [1, 0]),
    ];
    for (i, (kernel, stride, padding)) in specs.into_iter().enumerate() {
        let spec = PoolSpec { kernel, stride, padding };
        // all values negative: a padded tap must never win (padding is -inf, not 0)
        for (lo, hi) in [(-1.0, 1.0), (-5.0, -1.0)] {
            let x = random([2, 7, 9, 5], lo, hi, 10 + i as u64);
            let want = tensor(reference::max_pool2d::<Flex>(float(x.clone()), spec));
            assert_same(max_pool2d(x, spec), want, &format!("pool {spec:?}"));
        }
    }
    // a non-contiguous input (NHWC view of an NCHW tensor)
    let x = random([2, 6, 7, 8], -1.0, 1.0, 3).permute([0, 2, 3, 1]);
    let spec = PoolSpec { kernel: [5, 5], stride: [1, 1], padding: [2, 2] };
    let want = tensor(reference::max_pool2d::<Flex>(float(x.clone()), spec));
    assert_same(max_pool2d(x, spec), want, "pool of a permuted view");
}

#[test]
fn nhwc_flex_cat_and_upsample_equal_reference() {
    let a = random([2, 5, 3, 4], -1.0, 1.0, 1);
    let b = random([2, 3, 5, 6], -1.0, 1.0, 2).permute([0, 2, 1, 3]); // [2, 5, 3, 6], strided
    let c = random([2, 5, 3, 8], -1.0, 1.0, 3).narrow(3, 2, 3); // [2, 5, 3, 3], a channel slice
    let xs = vec![a, b, c];
    let want = tensor(reference::cat_channels::<Flex>(xs.iter().cloned().map(float).collect()));
    assert_same(cat_channels(xs), want, "cat");
    for x in [random([2, 3, 4, 5], -1.0, 1.0, 4), random([1, 4, 5, 3], -1.0, 1.0, 5).permute([0, 2, 1, 3])] {
        let want = tensor(reference::upsample2x::<Flex>(float(x.clone())));
        assert_same(upsample2x(x), want, "upsample");
    }
}

/// The concatenation's inputs as the model meets them: a tight tensor, a permuted view (strided channels), a
/// channel slice of a wider tensor (`chunk` of a conv output) and another tight one — `[2, 5, 3, Cᵢ]`, Cᵢ = 4, 6,
/// 3, 8; values rounded to `dtype`. Returns the tensors and their row-major host values.
pub(crate) fn cat_inputs<B: burn::tensor::backend::Backend>(
    dtype: burn::tensor::DType,
    device: &B::Device,
) -> Vec<(Tensor<B, 4>, Vec<f32>)> {
    use crate::test_util::{round_to, tensor};
    let mut rng = Rng::new(7);
    let (b, h, w) = (2, 5, 3);
    let mut out = Vec::new();
    for (i, c) in [4usize, 6, 3, 8].into_iter().enumerate() {
        let v = round_to(rng.uniform(b * h * w * c, 2.0), dtype);
        let t = match i {
            1 => {
                // stored [B, C, H, W], viewed [B, H, W, C]
                let mut nchw = vec![0.0f32; v.len()];
                for p in 0..b * h * w {
                    for ch in 0..c {
                        nchw[((p / (h * w)) * c + ch) * h * w + p % (h * w)] = v[p * c + ch];
                    }
                }
                tensor::<B, 4>(&nchw, [b, c, h, w], dtype, device).permute([0, 2, 3, 1])
            }
            2 => {
                // channels 2..2+c of a [B, H, W, c + 5] tensor
                let wide: Vec<f32> = (0..b * h * w)
                    .flat_map(|p| {
                        let mut row = vec![-9.0f32; c + 5];
                        row[2..2 + c].copy_from_slice(&v[p * c..(p + 1) * c]);
                        row
                    })
                    .collect();
                tensor::<B, 4>(&wide, [b, h, w, c + 5], dtype, device).narrow(3, 2, c)
            }
            _ => tensor::<B, 4>(&v, [b, h, w, c], dtype, device),
        };
        out.push((t, v));
    }
    out
}

/// Row-major channel concatenation of host `[pixels, Cᵢ]` arrays.
pub(crate) fn cat_host(parts: &[&[f32]], widths: &[usize]) -> Vec<f32> {
    let pixels = parts[0].len() / widths[0];
    (0..pixels).flat_map(|p| parts.iter().zip(widths).flat_map(move |(v, &c)| v[p * c..(p + 1) * c].to_vec())).collect()
}

/// `cat_channels` on backend `B` (1 to 9 inputs) equals the host concatenation exactly.
pub(crate) fn check_cat<B: super::NhwcBackend>(dtype: burn::tensor::DType, device: &B::Device) {
    let inputs = cat_inputs::<B>(dtype, device);
    let widths: Vec<usize> = inputs.iter().map(|(t, _)| t.dims()[3]).collect();
    // one to nine inputs: nine take three launches on CubeCL; an input listed twice
    let picks: [&[usize]; 7] =
        [&[0], &[1, 2], &[2, 0, 3], &[0, 1, 2, 3], &[3, 1, 0, 2, 1], &[1, 1], &[0, 1, 2, 3, 3, 2, 1, 0, 2]];
    for pick in picks {
        let xs: Vec<Tensor<B, 4>> = pick.iter().map(|&i| inputs[i].0.clone()).collect();
        let parts: Vec<&[f32]> = pick.iter().map(|&i| inputs[i].1.as_slice()).collect();
        let ws: Vec<usize> = pick.iter().map(|&i| widths[i]).collect();
        let got = cat_channels(xs);
        assert_eq!(got.dims(), [2, 5, 3, ws.iter().sum()], "cat {pick:?}: shape");
        assert_eq!(got.dtype(), dtype, "cat {pick:?}: dtype");
        let got = crate::test_util::to_vec(got);
        assert!(got == cat_host(&parts, &ws), "cat {pick:?} {dtype:?}: values differ");
    }
}

/// Gradients through `cat_channels` under autodiff: `L = Σ r·cat(xs)` gives each input its channel range of `r`.
pub(crate) fn check_cat_grads<B: burn::tensor::backend::AutodiffBackend + super::NhwcBackend>(device: &B::Device) {
    let dtype = burn::tensor::DType::F32;
    let inputs = cat_inputs::<B>(dtype, device);
    for pick in [&[0usize, 1][..], &[2, 0, 3], &[0, 1, 2, 3], &[3, 1, 0, 2, 1]] {
        let xs: Vec<Tensor<B, 4>> = pick.iter().map(|&i| inputs[i].0.clone().require_grad()).collect();
        let ws: Vec<usize> = xs.iter().map(|t| t.dims()[3]).collect();
        let ct: usize = ws.iter().sum();
        let r: Vec<f32> = Rng::new(11).uniform(30 * ct, 1.0);
        let rt = crate::test_util::tensor::<B, 4>(&r, [2, 5, 3, ct], dtype, device);
        let grads = (cat_channels(xs.clone()) * rt).sum().backward();
        let mut start = 0;
        for (k, (x, &c)) in xs.iter().zip(&ws).enumerate() {
            // an input listed twice gets both ranges summed
            let mut want = vec![0.0f32; 30 * c];
            let mut s2 = 0;
            for (j, &cj) in ws.iter().enumerate() {
                if pick[j] == pick[k] {
                    for p in 0..30 {
                        for ch in 0..c {
                            want[p * c + ch] += r[p * ct + s2 + ch];
                        }
                    }
                }
                s2 += cj;
            }
            let got = crate::test_util::to_vec(x.grad(&grads).expect("input gradient"));
            assert!(got == want, "cat {pick:?}: gradient of input #{k} (channels {start}..{})", start + c);
            start += c;
        }
    }
}

#[test]
fn nhwc_flex_cat_op_and_grads() {
    check_cat::<Flex>(burn::tensor::DType::F32, &FlexDevice);
    check_cat_grads::<burn::backend::Autodiff<Flex>>(&FlexDevice);
}

/// The kernel launched raw into a NaN-poisoned output (every element must be written).
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub(crate) fn check_cat_kernel<R: burn_cubecl::CubeRuntime, BT: burn_cubecl::BoolElement>(
    dtype: burn::tensor::DType,
    device: &R::Device,
) {
    use crate::test_util::{download, poisoned, Cb};
    let inputs = cat_inputs::<Cb<R, BT>>(dtype, device);
    for pick in [&[0usize][..], &[1, 2], &[2, 0, 3], &[0, 1, 2, 3], &[3, 2, 1, 0, 1, 2]] {
        let ws: Vec<usize> = pick.iter().map(|&i| inputs[i].0.dims()[3]).collect();
        let xs: Vec<_> = pick.iter().map(|&i| inputs[i].0.clone().into_primitive().tensor()).collect();
        let out = poisoned::<R, BT, 4>([2, 5, 3, ws.iter().sum()], dtype, device);
        super::kernels::launch_cat_channels(&xs, &out);
        let parts: Vec<&[f32]> = pick.iter().map(|&i| inputs[i].1.as_slice()).collect();
        assert!(download::<R, BT, 4>(out) == cat_host(&parts, &ws), "cat kernel {pick:?} {dtype:?}: values differ");
    }
}

#[cfg(feature = "wgpu")]
mod wgpu {
    use burn::backend::wgpu::{WgpuDevice, WgpuRuntime};
    use burn::backend::{Autodiff, Wgpu};
    use burn::tensor::DType;

    use super::{check_cat, check_cat_grads, check_cat_kernel};
    use crate::test_util::Cb;

    #[test]
    fn nhwc_wgpu_cat_kernel_op_and_grads() {
        let d = WgpuDevice::DefaultDevice;
        for dtype in [DType::F32, DType::F16] {
            check_cat_kernel::<WgpuRuntime, u32>(dtype, &d);
            check_cat::<Cb<WgpuRuntime, u32>>(dtype, &d);
            check_cat::<Wgpu>(dtype, &d);
        }
        check_cat_grads::<Autodiff<Wgpu>>(&d);
        check_cat_grads::<Autodiff<Cb<WgpuRuntime, u32>>>(&d);
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use burn::backend::cuda::CudaDevice;
    use burn::backend::{Autodiff, Cuda};
    use burn::tensor::DType;
    use cubecl::cuda::CudaRuntime;

    use super::{check_cat, check_cat_grads, check_cat_kernel};
    use crate::test_util::Cb;

    #[test]
    fn nhwc_cuda_cat_kernel_op_and_grads() {
        let d = CudaDevice { index: 0 };
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            check_cat_kernel::<CudaRuntime, u8>(dtype, &d);
            check_cat::<Cb<CudaRuntime, u8>>(dtype, &d);
            check_cat::<Cuda>(dtype, &d);
        }
        check_cat_grads::<Autodiff<Cuda>>(&d);
    }
}
