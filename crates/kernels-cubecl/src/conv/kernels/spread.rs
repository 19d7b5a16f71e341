//! The output gradient of a strided convolution spread onto the stride-1 output grid (zeros between), so that a
//! stride-1 input-gradient GEMM computes the strided one: for `y[oh] = Σ_kh x[oh·s + kh·d − p] · w[kh]`,
//! `dx[ih] = Σ_kh dy↑[ih + p − kh·d] · w[kh]` with `dy↑[j] = dy[j / s]` where `s` divides `j`, else 0 — the
//! stride-1 convolution's input gradient (same padding and dilation) of `dy↑`, whose rows
//! `H + 2p − d·(KH − 1)` cover every `(OH − 1)·s + 1` (ultralytics/PyTorch: cuDNN's strided dgrad does the same
//! sum). Used where cubek's tensor-core backward-data GEMM is only correct at stride 1.
use burn_cubecl::{tensor::CubeTensor, CubeRuntime};
use cubecl::prelude::*;

/// `out[b, y, x, c] = dy[b, y / sh, x / sw, c]` where `sh | y`, `sw | x` and the source is inside `dy`, else 0
/// (`dy: [B, OH, OW, C]`, `out: [B, H2, W2, C]`, both tight); one unit per output element.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn spread_kernel<F: Float>(
    dy: &Tensor<F>,
    out: &mut Tensor<F>,
    oh: u32,
    ow: u32,
    h2: u32,
    w2: u32,
    c: u32,
    sh: u32,
    sw: u32,
    n: u32,
    #[define(F)] _dtype: StorageType,
) {
    let i = (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) * CUBE_DIM_X + UNIT_POS_X;
    if i >= n {
        terminate!();
    }
    let ch = i % c;
    let t = i / c;
    let x = t % w2;
    let t2 = t / w2;
    let y = t2 % h2;
    let b = t2 / h2;
    let r = y / sh;
    let q = x / sw;
    let mut v = F::new(0.0);
    if r * sh == y && q * sw == x && r < oh && q < ow {
        v = dy[(((b * oh + r) * ow + q) * c + ch) as usize];
    }
    out[i as usize] = v;
}

/// Launches [`spread_kernel`]: `dy [B, OH, OW, C]` onto `out [B, H2, W2, C]` (tight, same dtype) at strides `s`.
pub fn launch_spread<R: CubeRuntime>(dy: &CubeTensor<R>, out: &CubeTensor<R>, s: [usize; 2]) {
    crate::cube_util::assert_tight("spread", &[dy, out]);
    let [b, oh, ow, c] = dy.meta.shape().dims::<4>();
    let [b2, h2, w2, c2] = out.meta.shape().dims::<4>();
    assert!(b == b2 && c == c2 && h2 >= oh && w2 >= ow, "spread: dy {:?} onto {:?}", [b, oh, ow, c], [b2, h2, w2, c2]);
    let n = out.meta.shape().num_elements();
    assert!(n <= u32::MAX as usize, "spread: {n} elements exceed the kernel's u32 indices");
    if n == 0 {
        return;
    }
    let (gx, gy) = super::grid_2d(n.div_ceil(256));
    let u = |v: usize| v as u32;
    // SAFETY: one unit per output element (bounded by `n`); reads inside `dy` (checked `r < OH`, `q < OW`).
    unsafe {
        spread_kernel::launch_unchecked::<R>(
            &out.client,
            CubeCount::Static(gx, gy, 1),
            CubeDim::new_1d(256),
            dy.clone().into_tensor_arg(),
            out.clone().into_tensor_arg(),
            u(oh),
            u(ow),
            u(h2),
            u(w2),
            u(c),
            u(s[0]),
            u(s[1]),
            u(n),
            out.dtype.into(),
        )
    }
}
