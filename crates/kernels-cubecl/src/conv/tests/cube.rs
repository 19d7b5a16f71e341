//! Runtime-generic checks of the convolution kernels (instantiated by `wgpu` and `cuda`).
#![allow(dead_code)]

use burn::tensor::{DType, Tensor};
use burn_cubecl::{BoolElement, CubeRuntime};

use super::*;
use crate::conv::kernels::{self, gemm, pick_tile, pick_wgrad_tile};

/// Every kernel launched raw into NaN-poisoned outputs: forward (bias + SiLU), input gradient from the naive
/// pre-activation gradient, and the weight-gradient partials summed on the host.
pub(crate) fn check_kernels<R: CubeRuntime, BT: BoolElement>(device: &R::Device, dtype: DType, seed: u64) {
    let tol = tolerance(dtype);
    for c in cases(seed, Activation::Silu, dtype) {
        let g = c.geo;
        eprintln!("kernels {} {dtype:?}", c.name);
        let x = upload::<R, BT, 4>(&c.x, [g.batch, g.h, g.w, g.c_in], dtype, device);
        let w = upload::<R, BT, 4>(&c.w, g.weight_shape(), dtype, device);
        let bias = upload::<R, BT, 1>(&c.bias, [g.c_out], dtype, device);
        let (z, y) = naive_forward(&c);
        let _ = z;
        let out = poisoned::<R, BT, 4>(g.out_shape(), dtype, device);
        if g.depthwise() {
            kernels::launch_dw_forward(&g, &x, &w, &bias, &out, true, gemm::ACT_SILU);
        } else {
            let (m, n, _) = kernels::gemm_dims(&g, gemm::FWD);
            kernels::launch_gemm(gemm::FWD, &g, pick_tile(m, n), &x, &w, &bias, &out, true, gemm::ACT_SILU);
        }
        assert_close("  y", &download::<R, BT, 4>(out), &y, tol);

        let (dz, ..) = naive_backward(&c);
        let dz: Vec<f32> = round_to(dz.iter().map(|&v| v as f32).collect(), dtype);
        let lin = Case { r: dz.clone(), spec: c.spec.with_activation(Activation::None), ..c };
        let (_, want_dx, want_dw, _) = naive_backward(&lin);
        let d = upload::<R, BT, 4>(&dz, g.out_shape(), dtype, device);

        let dx = poisoned::<R, BT, 4>([g.batch, g.h, g.w, g.c_in], dtype, device);
        if g.depthwise() {
            kernels::launch_dw_dgrad(&g, &d, &w, &dx);
        } else {
            let (m, n, _) = kernels::gemm_dims(&g, gemm::DGRAD);
            kernels::launch_gemm(gemm::DGRAD, &g, pick_tile(m, n), &d, &w, &d, &dx, false, gemm::ACT_NONE);
        }
        assert_close("  dx", &download::<R, BT, 4>(dx), &want_dx, grad_tolerance(dtype));

        let taps = g.kh * g.kw;
        let n = taps * g.c_in / g.groups;
        let (splits, part) = if g.depthwise() {
            let (chunks, _) = kernels::dw_wgrad_chunks(&g);
            let part = poisoned::<R, BT, 3>([chunks, g.c_out, taps], DType::F32, device);
            kernels::launch_dw_wgrad(&g, &x, &d, &part);
            (chunks, part)
        } else {
            let tile = pick_wgrad_tile(g.c_out / g.groups, n);
            let (splits, _) = kernels::wgrad_splits(&g, tile);
            let part = poisoned::<R, BT, 3>([splits, g.c_out, n], DType::F32, device);
            kernels::launch_gemm(gemm::WGRAD, &g, tile, &d, &x, &d, &part, false, gemm::ACT_NONE);
            (splits, part)
        };
        let part = download::<R, BT, 3>(part);
        let per = g.c_out * n;
        let dw: Vec<f32> = (0..per).map(|i| (0..splits).map(|s| part[s * per + i]).sum()).collect();
        assert_close(&format!("  dw ({splits} splits)"), &dw, &want_dw, grad_tolerance(dtype));
        if !g.depthwise() && kernels::wgrad_cmma::supported(&x) {
            let (splits, _) = kernels::wgrad_cmma::splits(&g);
            let part = poisoned::<R, BT, 3>([splits, g.c_out, n], DType::F32, device);
            kernels::wgrad_cmma::launch(&g, &d, &x, &part);
            let part = download::<R, BT, 3>(part);
            let dw: Vec<f32> = (0..per).map(|i| (0..splits).map(|s| part[s * per + i]).sum()).collect();
            assert_close(&format!("  dw tensor cores ({splits} splits)"), &dw, &want_dw, grad_tolerance(dtype));
        }
    }
}

/// The backend op on a non-contiguous `x` (an NCHW tensor permuted to NHWC), and forward and input gradient with
/// `ConvMath::Fast` (where the runtime has tensor cores: cubek's GEMM for the shapes it takes, the exact kernels
/// for the rest; elsewhere the exact kernels throughout).
pub(crate) fn check_strided_and_fast<R: CubeRuntime, BT: BoolElement>(device: &R::Device, seed: u64, fast_tol: f64) {
    for c in cases(seed, Activation::Silu, DType::F32) {
        let g = &c.geo;
        let (_, y) = naive_forward(&c);
        // x stored NCHW, viewed NHWC
        let mut nchw = vec![0.0f32; c.x.len()];
        for b in 0..g.batch {
            for i in 0..g.h * g.w {
                for ch in 0..g.c_in {
                    nchw[(b * g.c_in + ch) * g.h * g.w + i] = c.x[(b * g.h * g.w + i) * g.c_in + ch];
                }
            }
        }
        let x = tensor::<Cb<R, BT>, 4>(&nchw, [g.batch, g.c_in, g.h, g.w], DType::F32, device).permute([0, 2, 3, 1]);
        let w = tensor::<Cb<R, BT>, 4>(&c.w, g.weight_shape(), DType::F32, device);
        let bias = tensor::<Cb<R, BT>, 1>(&c.bias, [g.c_out], DType::F32, device);
        eprintln!("strided / fast {}", c.name);
        let got: Tensor<Cb<R, BT>, 4> = conv2d_nhwc(x.clone(), w.clone(), Some(bias.clone()), c.spec);
        assert_close("  strided x", &to_vec(got), &y, 1e-5);
        let fast = c.spec.with_math(super::super::ConvMath::Fast);
        let got = conv2d_nhwc(x.clone(), w.clone(), Some(bias), fast);
        assert_close("  fast", &to_vec(got), &y, fast_tol);

        // input gradient from the naive pre-activation gradient (what the backward pass hands the conv)
        let (dz, ..) = naive_backward(&c);
        let dz: Vec<f32> = dz.iter().map(|&v| v as f32).collect();
        let lin = Case { r: dz.clone(), spec: c.spec.with_activation(Activation::None), ..c };
        let (_, want_dx, ..) = naive_backward(&lin);
        let d = tensor::<Cb<R, BT>, 4>(&dz, g.out_shape(), DType::F32, device).into_primitive().tensor();
        let prim = |t: Tensor<Cb<R, BT>, 4>| t.into_primitive().tensor();
        let got = Cb::<R, BT>::conv2d_nhwc_backward_data(prim(x), prim(w), d, fast.with_activation(Activation::None));
        let got = to_vec(crate::tensor_util::float::<Cb<R, BT>, 4>(got));
        assert_close("  fast dx", &got, &want_dx, fast_tol);
    }
}

/// The spread of a strided conv's output gradient onto the stride-1 grid (`kernels::spread`, the first step of the
/// fast strided input gradient), raw into a NaN-poisoned output, against the host: strides 2 and 3, odd and even
/// sizes, a grid one row and column larger than `(OH − 1)·s + 1`.
pub(crate) fn check_spread<R: CubeRuntime, BT: BoolElement>(device: &R::Device, dtype: DType, seed: u64) {
    let mut rng = crate::test_util::Rng::new(seed);
    // [B, OH, OW, C] spread at strides s onto [B, H2, W2, C]
    type SpreadCase = ([usize; 4], [usize; 2], [usize; 2]);
    let cases: [SpreadCase; 3] =
        [([2, 5, 4, 8], [2, 2], [10, 8]), ([1, 3, 3, 16], [3, 3], [8, 7]), ([2, 4, 6, 3], [2, 1], [8, 6])];
    for ([b, oh, ow, c], s, [h2, w2]) in cases {
        let dy = round_to(rng.uniform(b * oh * ow * c, 1.0), dtype);
        let mut want = vec![0.0f64; b * h2 * w2 * c];
        for bb in 0..b {
            for r in 0..oh {
                for q in 0..ow {
                    for ch in 0..c {
                        want[((bb * h2 + r * s[0]) * w2 + q * s[1]) * c + ch] =
                            dy[((bb * oh + r) * ow + q) * c + ch] as f64;
                    }
                }
            }
        }
        let d = upload::<R, BT, 4>(&dy, [b, oh, ow, c], dtype, device);
        let out = poisoned::<R, BT, 4>([b, h2, w2, c], dtype, device);
        kernels::spread::launch_spread(&d, &out, s);
        assert_close(&format!("spread {dtype:?} s{s:?}"), &download::<R, BT, 4>(out), &want, 0.0);
    }
}

/// cubek's input-gradient GEMM only at stride 1 (its backward-data im2col does not check that
/// `(ih + pad − kh) / stride` is exact); the stem-like and head-like shapes stay on the exact kernel.
#[test]
fn fast_input_gradient_only_at_stride_1() {
    use crate::conv::cube::cubek_dgrad_fits;
    let geo = |s: usize, ci: usize, co: usize| {
        Conv2dGeometry::new(&[2, 16, 16, ci], &[co, 3, 3, ci], &Conv2dSpec::new(s, 1, 1)).unwrap()
    };
    assert!(cubek_dgrad_fits(&geo(1, 16, 32)));
    assert!(!cubek_dgrad_fits(&geo(2, 16, 32)), "stride 2 must take the exact kernel");
    assert!(!cubek_dgrad_fits(&geo(1, 16, 4)), "4 output channels must take the exact kernel");
    assert!(!cubek_dgrad_fits(&geo(1, 3, 16)), "3 input channels must take the exact kernel");
}
