//! The channel concatenation of NHWC tensors, [`CAT_INPUTS`] inputs per launch (Burn's `cat` is one slice-assign
//! launch per input, and a strided input, such as a `chunk` of a conv output, costs a copy before it): one unit
//! per output element of the launch's channel range reads its input with that input's strides.
//!
//! Layouts: inputs `[B, H, W, Cᵢ]` with any strides; output `[B, H, W, C]` tight, `C = ΣCᵢ` over all launches
//! (more inputs: one launch per [`CAT_INPUTS`], each writing its channel range). A launch with fewer inputs binds
//! the unused slots to its first input with 0 channels.
use burn_cubecl::{tensor::CubeTensor, CubeRuntime};
use cubecl::prelude::*;

/// Inputs one launch concatenates.
pub const CAT_INPUTS: usize = 4;

/// Element `(b, y, x, c)` of a 4-D tensor through its strides.
#[cube]
fn at<F: Float>(t: &Tensor<F>, b: usize, y: usize, x: usize, c: u32) -> F {
    t[b * t.stride(0) + y * t.stride(1) + x * t.stride(2) + c as usize * t.stride(3)]
}

/// `out[b, y, x, c_off..c_off + ΣCᵢ] = [x0[b, y, x, :], x1[…], x2[…], x3[…]]` of an output with `c_total` channels;
/// `total` = pixels × `ΣCᵢ` (surplus units return).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn cat_channels_kernel<F: Float>(
    x0: &Tensor<F>,
    x1: &Tensor<F>,
    x2: &Tensor<F>,
    x3: &Tensor<F>,
    out: &mut Tensor<F>,
    total: u32,
    c_total: u32,
    c_off: u32,
    h: u32,
    w: u32,
    c0: u32,
    c1: u32,
    c2: u32,
    c3: u32,
    #[define(F)] _dtype: StorageType,
) {
    let i = (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) * CUBE_DIM_X + UNIT_POS_X;
    if i >= total {
        terminate!();
    }
    let ct = c0 + c1 + c2 + c3;
    let pix = i / ct;
    let c = i % ct;
    let x = (pix % w) as usize;
    let row = pix / w;
    let y = (row % h) as usize;
    let b = (row / h) as usize;
    let v = if c < c0 {
        at(x0, b, y, x, c)
    } else if c < c0 + c1 {
        at(x1, b, y, x, c - c0)
    } else if c < c0 + c1 + c2 {
        at(x2, b, y, x, c - c0 - c1)
    } else {
        at(x3, b, y, x, c - c0 - c1 - c2)
    };
    out[(pix * c_total + c_off + c) as usize] = v;
}

/// Launches [`cat_channels_kernel`] once per [`CAT_INPUTS`] of `xs` (tensors `[B, H, W, Cᵢ]` with channels, of
/// `out`'s dtype, any strides) into the tight `out` `[B, H, W, ΣCᵢ]` of fewer than 2³² elements.
pub fn launch_cat_channels<R: CubeRuntime>(xs: &[CubeTensor<R>], out: &CubeTensor<R>) {
    crate::cube_util::assert_tight("cat_channels output", &[out]);
    let [_, h, w, ct] = out.meta.shape().dims::<4>();
    let total = out.meta.shape().num_elements();
    assert!(total <= u32::MAX as usize, "cat_channels kernel: {total} elements");
    let widths: Vec<usize> = xs.iter().map(|t| t.meta.shape().dims::<4>()[3]).collect();
    assert!(!xs.is_empty() && !widths.contains(&0), "cat_channels kernel: inputs {widths:?}");
    assert_eq!(widths.iter().sum::<usize>(), ct, "cat_channels kernel: channel counts");
    let mut c_off = 0;
    for part in xs.chunks(CAT_INPUTS) {
        launch_part(part, out, [h, w, ct], c_off);
        c_off += part.iter().map(|t| t.meta.shape().dims::<4>()[3]).sum::<usize>();
    }
}

/// One launch: up to [`CAT_INPUTS`] inputs into channels `c_off..` of `out` (`[H, W, C]` = `hwc`).
fn launch_part<R: CubeRuntime>(xs: &[CubeTensor<R>], out: &CubeTensor<R>, [h, w, ct]: [usize; 3], c_off: usize) {
    let c = |i: usize| xs.get(i).map_or(0, |t| t.meta.shape().dims::<4>()[3]) as u32;
    let pixels = out.meta.shape().num_elements() / ct;
    let total = pixels * (0..CAT_INPUTS).map(c).sum::<u32>() as usize;
    let arg = |i: usize| xs.get(i).unwrap_or(&xs[0]).clone().into_tensor_arg();
    let (gx, gy) = crate::conv::kernels::grid_2d(total.div_ceil(256));
    // SAFETY: one unit per output element of channels `c_off .. c_off + Σc`, bounded by `total` (≤ the output's
    // size); each reads one element of the input whose channel range holds it, at an index inside that input
    // (its own shape and strides).
    unsafe {
        cat_channels_kernel::launch_unchecked::<R>(
            &out.client,
            CubeCount::Static(gx, gy, 1),
            CubeDim::new_1d(256),
            arg(0),
            arg(1),
            arg(2),
            arg(3),
            out.clone().into_tensor_arg(),
            total as u32,
            ct as u32,
            c_off as u32,
            h as u32,
            w as u32,
            c(0),
            c(1),
            c(2),
            c(3),
            out.dtype.into(),
        )
    }
}

/// One representative specialisation (f32) for the source snapshots of [`crate::snapshot`].
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, R, S, T};
    vec![kernel_def!(
        "nhwc_cat_channels_f32",
        cat_channels_kernel::CatChannelsKernel<R>,
        units = 256,
        [T, T, T, T, T, S, S, S, S, S, S, S, S, S, F32]
    )]
}
