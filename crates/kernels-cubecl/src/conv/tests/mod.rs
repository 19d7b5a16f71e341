//! Tests of the NHWC convolution against a float64 host convolution written out loop by loop (`naive`), for
//! every kind of convolution YOLO26 has (3-channel stem with stride 2, 1×1, 3×3, depthwise 3×3 / 5×5 / 7×7,
//! strided depthwise) plus grouped, dilated, odd-sized and tile-tail cases.
//!
//! - `reference`: the trait's default implementation on `Flex` (f64 and f32) and its gradients under
//!   `Autodiff<Flex>`.
//! - `cube` (generic over the CubeCL runtime): raw kernel launches into NaN-poisoned outputs (forward with
//!   bias + SiLU, input gradient, weight-gradient partials), the backend op with strided inputs, and gradients
//!   through `Autodiff<CubeBackend>` and `Autodiff<Fusion>`; instantiated by `wgpu` (lavapipe) and `cuda`.

mod cube;
#[cfg(feature = "cuda")]
mod cuda;
mod reference;
#[cfg(feature = "wgpu")]
mod wgpu;

use super::{Activation, Conv2dGeometry, Conv2dSpec};
use crate::test_util::*;

/// One test convolution: sizes, spec and seeded data (`x`, `w` in OHWI, `bias`, upstream gradient `r` of `y`).
pub(crate) struct Case {
    pub name: &'static str,
    pub geo: Conv2dGeometry,
    pub spec: Conv2dSpec,
    pub x: Vec<f32>,
    pub w: Vec<f32>,
    pub bias: Vec<f32>,
    pub r: Vec<f32>,
}

/// `(name, batch, h, w, ci, co, k, stride, pad, groups, dilation)`.
type Sizes = (&'static str, usize, usize, usize, usize, usize, usize, usize, usize, usize, usize);

const SIZES: [Sizes; 13] = [
    ("stem 3→16 3x3 s2", 2, 17, 23, 3, 16, 3, 2, 1, 1, 1),
    ("3x3 16→8", 2, 9, 11, 16, 8, 3, 1, 1, 1, 1),
    ("1x1 32→40 (tile tail)", 3, 7, 5, 32, 40, 1, 1, 0, 1, 1),
    ("3x3 s2 24→70 (K and N tails)", 1, 13, 10, 24, 70, 3, 2, 1, 1, 1),
    ("3x3 5→130 (N > 128)", 1, 6, 7, 5, 130, 3, 1, 1, 1, 1),
    ("1x1 160→4 (K > 128, N = 4)", 2, 8, 8, 160, 4, 1, 1, 0, 1, 1),
    ("depthwise 3x3", 2, 10, 9, 16, 16, 3, 1, 1, 16, 1),
    ("depthwise 5x5 s2", 1, 11, 12, 8, 8, 5, 2, 2, 8, 1),
    ("depthwise 7x7", 1, 9, 9, 12, 12, 7, 1, 3, 12, 1),
    ("grouped 8→12 g4 3x3", 2, 7, 6, 8, 12, 3, 1, 1, 4, 1),
    ("dilated 3x3 d2", 1, 9, 10, 6, 10, 3, 1, 2, 1, 2),
    ("no padding 3x3 s2 (floor)", 2, 10, 9, 7, 9, 3, 2, 0, 1, 1),
    // yolo26 model.1: the first stride-2 conv whose channel counts cubek's tensor-core GEMM takes
    ("3x3 s2 16→32 (model.1)", 2, 11, 10, 16, 32, 3, 2, 1, 1, 1),
];

/// Every test case of one seed, with `activation` and values rounded to `dtype`.
pub(crate) fn cases(seed: u64, activation: Activation, dtype: burn::tensor::DType) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    SIZES
        .iter()
        .map(|&(name, b, h, w, ci, co, k, s, p, g, d)| {
            let mut spec = Conv2dSpec::new(s, p, g).with_activation(activation);
            spec.dilation = [d, d];
            let geo = Conv2dGeometry::new(&[b, h, w, ci], &[co, k, k, ci / g], &spec).unwrap();
            let fan_in = (k * k * ci / g) as f32;
            let x = round_to(rng.uniform(b * h * w * ci, 2.0), dtype);
            let wt = round_to(rng.uniform(co * k * k * ci / g, 2.0 / fan_in.sqrt()), dtype);
            let bias = round_to(rng.uniform(co, 0.5), dtype);
            let r = round_to(rng.uniform(geo.out_shape().iter().product(), 1.0), dtype);
            Case { name, geo, spec, x, w: wt, bias, r }
        })
        .collect()
}

/// The host convolution in f64: `(z = conv + bias, y = act(z))`, NHWC.
pub(crate) fn naive_forward(c: &Case) -> (Vec<f64>, Vec<f64>) {
    let g = &c.geo;
    let (cig, cog) = (g.c_in / g.groups, g.c_out / g.groups);
    let mut z = vec![0.0f64; g.out_shape().iter().product()];
    for b in 0..g.batch {
        for oh in 0..g.oh {
            for ow in 0..g.ow {
                for co in 0..g.c_out {
                    let grp = co / cog;
                    let mut acc = c.bias[co] as f64;
                    for_taps(g, oh, ow, |kh, kw, ih, iw| {
                        for ci in 0..cig {
                            let xv = c.x[((b * g.h + ih) * g.w + iw) * g.c_in + grp * cig + ci] as f64;
                            acc += xv * c.w[((co * g.kh + kh) * g.kw + kw) * cig + ci] as f64;
                        }
                    });
                    z[((b * g.oh + oh) * g.ow + ow) * g.c_out + co] = acc;
                }
            }
        }
    }
    let y = z.iter().map(|&v| act(c.spec.activation, v)).collect();
    (z, y)
}

/// The in-image taps of output pixel `(oh, ow)`: `f(kh, kw, ih, iw)`.
fn for_taps(g: &Conv2dGeometry, oh: usize, ow: usize, mut f: impl FnMut(usize, usize, usize, usize)) {
    for kh in 0..g.kh {
        for kw in 0..g.kw {
            let ih = (oh * g.stride[0] + kh * g.dilation[0]) as isize - g.padding[0] as isize;
            let iw = (ow * g.stride[1] + kw * g.dilation[1]) as isize - g.padding[1] as isize;
            if ih >= 0 && iw >= 0 && (ih as usize) < g.h && (iw as usize) < g.w {
                f(kh, kw, ih as usize, iw as usize);
            }
        }
    }
}

fn act(a: Activation, v: f64) -> f64 {
    match a {
        Activation::None => v,
        Activation::Silu => v / (1.0 + (-v).exp()),
    }
}

/// `d act / d z`.
fn act_grad(a: Activation, z: f64) -> f64 {
    match a {
        Activation::None => 1.0,
        Activation::Silu => {
            let s = 1.0 / (1.0 + (-z).exp());
            s * (1.0 + z * (1.0 - s))
        }
    }
}

/// Gradients of `L = Σ r·y` in f64: `(dz, dx, dw, db)` (`dz` = the pre-activation gradient the backward
/// passes receive).
pub(crate) fn naive_backward(c: &Case) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let g = &c.geo;
    let (cig, cog) = (g.c_in / g.groups, g.c_out / g.groups);
    let (z, _) = naive_forward(c);
    let dz: Vec<f64> = z.iter().zip(&c.r).map(|(&z, &r)| r as f64 * act_grad(c.spec.activation, z)).collect();
    let mut dx = vec![0.0f64; c.x.len()];
    let mut dw = vec![0.0f64; c.w.len()];
    let mut db = vec![0.0f64; g.c_out];
    for b in 0..g.batch {
        for oh in 0..g.oh {
            for ow in 0..g.ow {
                for co in 0..g.c_out {
                    let grp = co / cog;
                    let d = dz[((b * g.oh + oh) * g.ow + ow) * g.c_out + co];
                    db[co] += d;
                    for_taps(g, oh, ow, |kh, kw, ih, iw| {
                        for ci in 0..cig {
                            let xi = ((b * g.h + ih) * g.w + iw) * g.c_in + grp * cig + ci;
                            let wi = ((co * g.kh + kh) * g.kw + kw) * cig + ci;
                            dx[xi] += d * c.w[wi] as f64;
                            dw[wi] += d * c.x[xi] as f64;
                        }
                    });
                }
            }
        }
    }
    (dz, dx, dw, db)
}

/// Gradient tolerance by storage dtype (sums of up to a few thousand products).
pub(crate) fn grad_tolerance(dtype: burn::tensor::DType) -> f64 {
    match dtype {
        burn::tensor::DType::F32 => 2e-5,
        d => 4.0 * tolerance(d),
    }
}

use burn::tensor::{backend::AutodiffBackend, backend::Backend, DType, Tensor};

use super::{conv2d_nhwc, Conv2dBackend};

/// `conv2d_nhwc` on backend `B` in `dtype` for every case (with and without bias) against [`naive_forward`].
pub(crate) fn check_forward<B: Conv2dBackend>(device: &B::Device, dtype: DType, seed: u64, tol: f64) {
    for activation in [Activation::None, Activation::Silu] {
        for c in cases(seed, activation, dtype) {
            let g = &c.geo;
            let x = tensor::<B, 4>(&c.x, [g.batch, g.h, g.w, g.c_in], dtype, device);
            let w = tensor::<B, 4>(&c.w, g.weight_shape(), dtype, device);
            let bias = tensor::<B, 1>(&c.bias, [g.c_out], dtype, device);
            eprintln!("forward {} {activation:?} {dtype:?}", c.name);
            let y = conv2d_nhwc(x.clone(), w.clone(), Some(bias), c.spec);
            assert_eq!(y.dims(), g.out_shape(), "{}: output shape", c.name);
            assert_close(c.name, &to_vec(y), &naive_forward(&c).1, tol);
            // without bias: the bias-free result is z − bias
            let nb = Case { bias: vec![0.0; g.c_out], ..c };
            let y = conv2d_nhwc(x, w, None, nb.spec);
            assert_close("  no bias", &to_vec(y), &naive_forward(&nb).1, tol);
        }
    }
}

/// Gradients of `Σ r·conv2d_nhwc(x, w, bias)` (SiLU) w.r.t. `x`, `w`, `bias` on `B` against [`naive_backward`].
pub(crate) fn check_autodiff<B: AutodiffBackend + Conv2dBackend>(
    device: &B::Device,
    dtype: DType,
    seed: u64,
    tol: f64,
) {
    for (i, c) in cases(seed, Activation::Silu, dtype).into_iter().enumerate() {
        let g = &c.geo;
        eprintln!("autodiff {} {dtype:?}", c.name);
        let x = tensor::<B, 4>(&c.x, [g.batch, g.h, g.w, g.c_in], dtype, device).require_grad();
        // every other case: the weight as the model has it, an OIHW parameter viewed OHWI (a strided view)
        let w = match i % 2 {
            0 => tensor::<B, 4>(&c.w, g.weight_shape(), dtype, device).require_grad(),
            _ => {
                let [co, kh, kw, ci] = g.weight_shape();
                let mut oihw = vec![0.0f32; c.w.len()];
                for o in 0..co {
                    for t in 0..kh * kw {
                        for k in 0..ci {
                            oihw[(o * ci + k) * kh * kw + t] = c.w[(o * kh * kw + t) * ci + k];
                        }
                    }
                }
                tensor::<B, 4>(&oihw, [co, ci, kh, kw], dtype, device).require_grad()
            }
        };
        let w_view = match i % 2 {
            0 => w.clone(),
            _ => w.clone().permute([0, 2, 3, 1]),
        };
        let bias = tensor::<B, 1>(&c.bias, [g.c_out], dtype, device).require_grad();
        let r = tensor::<B, 4>(&c.r, g.out_shape(), dtype, device);
        let y = conv2d_nhwc(x.clone(), w_view, Some(bias.clone()), c.spec);
        let grads = (y * r).sum().backward();
        let (_, dx, dw, db) = naive_backward(&c);
        let got = |t: Option<Tensor<B::InnerBackend, 4>>| to_vec(t.expect("gradient"));
        assert_close("  dx", &got(x.grad(&grads)), &dx, tol);
        let dw_got = match i % 2 {
            0 => got(w.grad(&grads)),
            _ => to_vec(w.grad(&grads).expect("gradient").permute([0, 2, 3, 1])),
        };
        assert_close("  dw", &dw_got, &dw, tol);
        assert_close("  db", &to_vec(bias.grad(&grads).expect("bias gradient")), &db, tol);
    }
}

/// The backward entry points of backend `B` fed the naive pre-activation gradient, against [`naive_backward`].
pub(crate) fn check_backward_ops<B: Backend + Conv2dBackend>(device: &B::Device, dtype: DType, seed: u64, tol: f64) {
    for c in cases(seed, Activation::Silu, dtype) {
        let g = &c.geo;
        eprintln!("backward ops {} {dtype:?}", c.name);
        let (dz, ..) = naive_backward(&c);
        let dz: Vec<f32> = round_to(dz.iter().map(|&v| v as f32).collect(), dtype);
        // the references from the rounded dz (f16 rounding of dz is an input, not a kernel error)
        let want = Case { r: dz.clone(), spec: c.spec.with_activation(Activation::None), ..c };
        let (_, want_dx, want_dw, _) = naive_backward(&want);
        let x = tensor::<B, 4>(&want.x, [g.batch, g.h, g.w, g.c_in], dtype, device).into_primitive().tensor();
        let w = tensor::<B, 4>(&want.w, g.weight_shape(), dtype, device).into_primitive().tensor();
        let d = tensor::<B, 4>(&dz, g.out_shape(), dtype, device).into_primitive().tensor();
        let got_dx = B::conv2d_nhwc_backward_data(x.clone(), w.clone(), d.clone(), want.spec);
        let got_dw = B::conv2d_nhwc_backward_weight(x, w, d, want.spec);
        assert_close("  dx", &to_vec(crate::tensor_util::float::<B, 4>(got_dx)), &want_dx, tol);
        assert_close("  dw", &to_vec(crate::tensor_util::float::<B, 4>(got_dw)), &want_dw, tol);
    }
}
