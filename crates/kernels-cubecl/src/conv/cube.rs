//! [`Conv2dBackend`] for [`CubeBackend`]: tight inputs in the output dtype, one kernel per pass (plus the sum of
//! the weight gradient's split-K partials). Which kernel:
//!
//! | case | forward | input gradient | weight gradient |
//! |---|---|---|---|
//! | depthwise (`groups = Ci = Co`) | `dw_forward` (bias, act) | `dw_dgrad` | `dw_wgrad` partials + sum |
//! | `ConvMath::Fast`, `groups = 1`, cubek accepts it | cubek implicit GEMM (bias) + SiLU in place | cubek backward-data (stride 1; strided, with [`super::set_tensor_core_gradients`] on: of `dy` spread onto the stride-1 grid, [`strided_fast_dgrad`]) | as below |
//! | otherwise | `conv_gemm` `FWD` (bias, act) | `conv_gemm` `DGRAD` | f16/bf16 where the device has `cmma` and [`super::set_tensor_core_gradients`] is on: `wgrad_cmma` partials + sum (any `ConvMath`: f16 products are exact in f32); else `conv_gemm` `WGRAD` partials + sum |
//!
//! F64 goes through the reference (the kernels compute in f32).
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{DType, Shape};
use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};
use cubek::convolution::{
    launch_ref, AcceleratedTileKind, ConvAlgorithm, ConvolutionArgs, ConvolutionInputs, Strategy,
};
use cubek::matmul::definition::{MatmulElems, MatmulGlobalElems};
use cubek::std::InputBinding;

use super::kernels::{self, act::launch_silu_inplace, gemm, pick_tile, pick_wgrad_tile};
use super::{reference_backward_data, reference_backward_weight, reference_forward};
use super::{Activation, Conv2dBackend, Conv2dGeometry, Conv2dSpec, ConvMath};
use crate::cube_util::{empty, tight_as};
use crate::tensor_util::float;

impl<R, F, I, BT> Conv2dBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn conv2d_nhwc(x: CubeTensor<R>, w: CubeTensor<R>, bias: Option<CubeTensor<R>>, spec: Conv2dSpec) -> CubeTensor<R> {
        if x.dtype == DType::F64 {
            return reference_forward::<Self>(x, w, bias, spec);
        }
        forward(x, w, bias, spec)
    }

    fn conv2d_nhwc_backward_data(
        x: CubeTensor<R>,
        w: CubeTensor<R>,
        dy: CubeTensor<R>,
        spec: Conv2dSpec,
    ) -> CubeTensor<R> {
        if x.dtype == DType::F64 {
            return reference_backward_data::<Self>(x, w, dy, spec);
        }
        backward_data(x, w, dy, spec)
    }

    fn conv2d_nhwc_backward_weight(
        x: CubeTensor<R>,
        w: CubeTensor<R>,
        dy: CubeTensor<R>,
        spec: Conv2dSpec,
    ) -> CubeTensor<R> {
        if x.dtype == DType::F64 {
            return reference_backward_weight::<Self>(x, w, dy, spec);
        }
        let geo = geometry(&x, &w, &spec);
        let dtype = x.dtype;
        if geo.batch * geo.oh * geo.ow == 0 {
            return Self::float_zeros(Shape::new(geo.weight_shape()), &x.device, dtype.into());
        }
        let part = backward_weight_partials(x, w, dy, spec);
        // Σ over the splits (f32) in stages (one unit per output walking thousands of splits was the floor of
        // every small conv's gradient), then the weight's shape and dtype.
        let [splits, co, n] = part.meta.shape().dims::<3>();
        let [a1, a2, a3] = super::row_stages::<Self>(splits, co * n);
        let part = float::<Self, 4>(Self::float_reshape(part, Shape::new([a1, a2, a3, co * n])));
        let dw = super::reduce_rows(part, false).into_primitive().tensor();
        let dw = Self::float_reshape(dw, Shape::new(geo.weight_shape()));
        tight_as(dw, dtype)
    }
}

/// The checked geometry (panics with the shapes when they do not fit).
pub(crate) fn geometry<R: CubeRuntime>(x: &CubeTensor<R>, w: &CubeTensor<R>, spec: &Conv2dSpec) -> Conv2dGeometry {
    Conv2dGeometry::new(x.meta.shape(), w.meta.shape(), spec).unwrap_or_else(|e| panic!("{e}"))
}

fn act_code(a: Activation) -> u32 {
    match a {
        Activation::None => gemm::ACT_NONE,
        Activation::Silu => gemm::ACT_SILU,
    }
}

/// Kernel forward: `[B, OH, OW, Co]` in `x`'s dtype.
pub fn forward<R: CubeRuntime>(
    x: CubeTensor<R>,
    w: CubeTensor<R>,
    bias: Option<CubeTensor<R>>,
    spec: Conv2dSpec,
) -> CubeTensor<R> {
    let geo = geometry(&x, &w, &spec);
    let dtype = x.dtype;
    let x = tight_as(x, dtype);
    let w = tight_as(w, dtype);
    let has_bias = bias.is_some();
    let bias = bias.map(|b| tight_as(b, dtype));
    let out = empty(&x, Shape::new(geo.out_shape()), dtype);
    if out.meta.shape().num_elements() == 0 {
        return out;
    }
    let act = act_code(spec.activation);
    if geo.depthwise() {
        kernels::launch_dw_forward(&geo, &x, &w, bias.as_ref().unwrap_or(&x), &out, has_bias, act);
    } else if spec.math == ConvMath::Fast
        && cubek_fits(&geo, dtype)
        && cubek_pass(Pass::Forward, &geo, &x, &w, bias.as_ref(), &out).is_ok()
    {
        if spec.activation == Activation::Silu {
            launch_silu_inplace(&out);
        }
    } else {
        let (m, n, _) = kernels::gemm_dims(&geo, gemm::FWD);
        let bias = bias.as_ref().unwrap_or(&x);
        kernels::launch_gemm(gemm::FWD, &geo, pick_tile(m, n), &x, &w, bias, &out, has_bias, act);
    }
    out
}

/// Kernel input gradient: `[B, H, W, Ci]` in `x`'s dtype.
pub fn backward_data<R: CubeRuntime>(
    x: CubeTensor<R>,
    w: CubeTensor<R>,
    dy: CubeTensor<R>,
    spec: Conv2dSpec,
) -> CubeTensor<R> {
    let geo = geometry(&x, &w, &spec);
    let dtype = x.dtype;
    let w = tight_as(w, dtype);
    let dy = tight_as(dy, dtype);
    let dx = empty(&dy, x.meta.shape().clone(), dtype);
    if dx.meta.shape().num_elements() == 0 {
        return dx;
    }
    let fast = spec.math == ConvMath::Fast && cubek_fits(&geo, dtype) && cubek_dgrad_channels(&geo);
    if geo.depthwise() {
        kernels::launch_dw_dgrad(&geo, &dy, &w, &dx);
    } else if !(fast
        && if cubek_dgrad_fits(&geo) {
            cubek_pass(Pass::BackwardData, &geo, &dy, &w, None, &dx).is_ok()
        } else {
            super::tensor_core_gradients() && strided_fast_dgrad(&geo, &spec, &dy, &w, &dx)
        })
    {
        let (m, n, _) = kernels::gemm_dims(&geo, gemm::DGRAD);
        kernels::launch_gemm(gemm::DGRAD, &geo, pick_tile(m, n), &dy, &w, &dy, &dx, false, gemm::ACT_NONE);
    }
    dx
}

/// Kernel weight gradient as f32 partial sums `[splits, Co, KH·KW·Ci/groups]` (their sum over axis 0 is `∂L/∂w`);
/// at least one output pixel.
pub fn backward_weight_partials<R: CubeRuntime>(
    x: CubeTensor<R>,
    w: CubeTensor<R>,
    dy: CubeTensor<R>,
    spec: Conv2dSpec,
) -> CubeTensor<R> {
    let geo = geometry(&x, &w, &spec);
    let dtype = x.dtype;
    let x = tight_as(x, dtype);
    let dy = tight_as(dy, dtype);
    let taps = geo.kh * geo.kw;
    assert!(geo.batch * geo.oh * geo.ow > 0, "conv2d_nhwc weight gradient: no output pixels");
    if geo.depthwise() {
        let (chunks, _) = kernels::dw_wgrad_chunks(&geo);
        let part = empty(&x, Shape::new([chunks, geo.c_out, taps]), DType::F32);
        kernels::launch_dw_wgrad(&geo, &x, &dy, &part);
        part
    } else if super::tensor_core_gradients() && kernels::wgrad_cmma::supported(&x) {
        let (_, n, _) = kernels::gemm_dims(&geo, gemm::WGRAD);
        let (splits, _) = kernels::wgrad_cmma::splits(&geo);
        let part = empty(&x, Shape::new([splits, geo.c_out, n]), DType::F32);
        kernels::wgrad_cmma::launch(&geo, &dy, &x, &part);
        part
    } else {
        let (m, n, _) = kernels::gemm_dims(&geo, gemm::WGRAD);
        let tile = pick_wgrad_tile(m, n);
        let (splits, _) = kernels::wgrad_splits(&geo, tile);
        let part = empty(&x, Shape::new([splits, geo.c_out, n]), DType::F32);
        kernels::launch_gemm(gemm::WGRAD, &geo, tile, &dy, &x, &dy, &part, false, gemm::ACT_NONE);
        part
    }
}

/// Whether cubek's GEMM is tried: `groups = 1`, and for f16/bf16 channel counts that are multiples of 8 (measured on
/// an H100: with 4 output channels its f16 kernel passes `launch_ref` but fails to compile at execution, "too many
/// data will be loaded", which poisons the device stream, so it must not be launched at all).
fn cubek_fits(geo: &Conv2dGeometry, dtype: DType) -> bool {
    let half = matches!(dtype, DType::F16 | DType::BF16);
    geo.groups == 1 && (!half || (geo.c_in.is_multiple_of(8) && geo.c_out.is_multiple_of(8)))
}

/// Whether cubek's backward-data GEMM is tried (beyond [`cubek_fits`]): stride 1, and both channel counts
/// multiples of 8 in every dtype.
///
/// - **Stride 1 only** (Burn's own rule: `burn-cubecl` 0.21 `kernel/conv/base.rs` `conv_data_backward` sends
///   `stride != 1` to its direct fallback). cubek-convolution 0.2's backward-data im2col
///   (`components/global/layout/im2col.rs`) reads `dy` at `(ih + pad - kh·dilation) / stride` without checking that
///   the division is exact, so for stride 2 every input pixel gathers taps that do not touch it (and `-1 / 2`
///   truncates to row 0). Measured on an H100 (2026-12-07): with it, one yolo26n training step under `--tf32` had
///   stem gradients 76–420× too large and uncorrelated with the exact ones (cos ≈ 0.08); the test
///   `check_strided_and_fast` now runs the fast input gradient on the stride-2 cases.
/// - **Channels multiples of 8**: measured on an H100 (2026-12-06): a yolo26n training step with TF32
///   (`bench --train --tf32`) failed with cubek's "too many data will be loaded" compilation error at execution
///   (not at `launch_ref`, so the fallback cannot catch it). The failing shape was not isolated; the rule keeps off
///   cubek the same small channel counts (the head's 4-channel convs) that failed in the f16 forward pass.
///
/// The exact kernel takes everything else.
pub(crate) fn cubek_dgrad_fits(geo: &Conv2dGeometry) -> bool {
    geo.stride == [1, 1] && cubek_dgrad_channels(geo)
}

/// Both channel counts multiples of 8 (see [`cubek_dgrad_fits`]).
fn cubek_dgrad_channels(geo: &Conv2dGeometry) -> bool {
    geo.c_in.is_multiple_of(8) && geo.c_out.is_multiple_of(8)
}

/// The input gradient of a strided convolution on cubek's stride-1 backward-data GEMM: `dy` spread onto the
/// stride-1 output grid (zeros between: [`kernels::spread`]), then the stride-1 pass with the same padding and
/// dilation. `s²` times the products of the exact sum, on tensor cores: measured on an H100 (2026-12-08, `--amp`,
/// batch 64 at 640), the exact kernel took 39.7 ms of a 188 ms training step for yolo26n's six stride-2 input
/// gradients. `false` (nothing written to `dx`) when cubek cannot run it.
pub(crate) fn strided_fast_dgrad<R: CubeRuntime>(
    geo: &Conv2dGeometry,
    spec: &Conv2dSpec,
    dy: &CubeTensor<R>,
    w: &CubeTensor<R>,
    dx: &CubeTensor<R>,
) -> bool {
    let unit = Conv2dSpec { stride: [1, 1], ..*spec };
    let Ok(geo1) = Conv2dGeometry::new(dx.meta.shape(), w.meta.shape(), &unit) else {
        return false;
    };
    if geo1.oh < (geo.oh - 1) * geo.stride[0] + 1 || geo1.ow < (geo.ow - 1) * geo.stride[1] + 1 {
        return false;
    }
    let spread = empty(dy, Shape::new([geo.batch, geo1.oh, geo1.ow, geo.c_out]), dy.dtype);
    if spread.meta.shape().num_elements() > u32::MAX as usize {
        return false;
    }
    kernels::spread::launch_spread(dy, &spread, geo.stride);
    cubek_pass(Pass::BackwardData, &geo1, &spread, w, None, dx).is_ok()
}

/// Which cubek pass.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    Forward,
    BackwardData,
}

/// cubek-convolution's tensor-core implicit GEMM (the algorithm Burn's `ConvStrategy::ImplicitGemm` uses:
/// synchronous loads, mma tiles) into `out`; `Err` when cubek cannot run it on this device or shape (then `out`
/// is untouched and the caller runs the plain kernel). Forward: `(a, b) = (x, w)`; backward-data: `(dy, w)`.
fn cubek_pass<R: CubeRuntime>(
    pass: Pass,
    geo: &Conv2dGeometry,
    a: &CubeTensor<R>,
    b: &CubeTensor<R>,
    bias: Option<&CubeTensor<R>>,
    out: &CubeTensor<R>,
) -> Result<(), String> {
    let bind = |t: &CubeTensor<R>| InputBinding::new(t.clone().binding(), t.dtype.into());
    let inputs = match pass {
        Pass::Forward => ConvolutionInputs::Forward {
            input: bind(a),
            weight: bind(b),
            bias: bias.map(|t| InputBinding::Normal(t.clone().binding(), t.dtype.into())),
            out: out.clone().binding(),
        },
        Pass::BackwardData => {
            ConvolutionInputs::BackwardData { out_grad: bind(a), weights: bind(b), in_grad: out.clone().binding() }
        }
    };
    let dtypes = MatmulElems::from_globals(&MatmulGlobalElems {
        lhs: a.dtype.into(),
        rhs: b.dtype.into(),
        out: out.dtype.into(),
    });
    let strategy =
        Strategy::Inferred { algorithm: ConvAlgorithm::SimpleSyncStrided, tile_kind: AcceleratedTileKind::Mma };
    let args = ConvolutionArgs { stride: geo.stride, padding: geo.padding, dilation: geo.dilation };
    launch_ref::<R, 2>(&strategy, &a.client, inputs, args, dtypes).map_err(|e| format!("{e:?}"))
}
