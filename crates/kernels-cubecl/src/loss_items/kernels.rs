//! The two kernels of [`crate::loss_items`] (math and layouts in the module doc).
//!
//! Forward: one cube of [`UNITS`] units; unit `u` sums the partials `u, u + UNITS, …` of both inputs, a
//! shared-memory tree reduces the four sums, unit 0 writes `items`. Backward: one unit.
use cubecl::prelude::*;

use burn::tensor::DType;
use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use super::UNITS;

/// `box_partial [3n]`, `cls_partial [m]` (f32) → `items [3]`, `w_sum [1]` (float `F`).
#[cube(launch_unchecked)]
#[allow(clippy::assign_op_pattern)]
pub fn loss_items_fwd_kernel<F: Float>(
    box_partial: &Tensor<f32>,
    cls_partial: &Tensor<f32>,
    items: &mut Tensor<F>,
    w_sum: &mut Tensor<F>,
    num_box: u32,
    num_cls: u32,
    g_box: f32,
    g_cls: f32,
    g_l1: f32,
    #[comptime] units: usize,
    #[define(F)] _dtype: StorageType,
) {
    let tid = UNIT_POS_X as usize;
    let mut s_box = f32::new(0.0);
    let mut s_l1 = f32::new(0.0);
    let mut s_w = f32::new(0.0);
    let mut s_cls = f32::new(0.0);
    let mut i = tid;
    while i < num_box as usize {
        s_box = s_box + box_partial[3 * i];
        s_l1 = s_l1 + box_partial[3 * i + 1];
        s_w = s_w + box_partial[3 * i + 2];
        i += units;
    }
    let mut j = tid;
    while j < num_cls as usize {
        s_cls = s_cls + cls_partial[j];
        j += units;
    }
    let mut sh = SharedMemory::<f32>::new(units * 4);
    sh[tid] = s_box;
    sh[units + tid] = s_l1;
    sh[2 * units + tid] = s_w;
    sh[3 * units + tid] = s_cls;
    sync_cube();
    let mut half = (units / 2).runtime();
    while half > 0 {
        if tid < half {
            #[unroll]
            for r in 0..4usize {
                sh[r * units + tid] = sh[r * units + tid] + sh[r * units + tid + half];
            }
        }
        sync_cube();
        half /= 2;
    }
    if tid == 0 {
        let w = sh[2 * units];
        let k = f32::new(1.0) / max(w, f32::new(1.0));
        items[0] = F::cast_from(g_box * sh[0] * k);
        items[1] = F::cast_from(g_cls * sh[3 * units] * k);
        items[2] = F::cast_from(g_l1 * sh[units] * k);
        w_sum[0] = F::cast_from(w);
    }
}

/// `d_items [3]`, `w_sum [1]` (float `F`) → `d_box [3]` (f32), `d_cls [1]` (float `F`).
#[cube(launch_unchecked)]
pub fn loss_items_bwd_kernel<F: Float>(
    d_items: &Tensor<F>,
    w_sum: &Tensor<F>,
    d_box: &mut Tensor<f32>,
    d_cls: &mut Tensor<F>,
    g_box: f32,
    g_cls: f32,
    g_l1: f32,
    #[define(F)] _dtype: StorageType,
) {
    if UNIT_POS_X == 0 {
        let k = f32::new(1.0) / max(f32::cast_from(w_sum[0]), f32::new(1.0));
        d_box[0] = g_box * k * f32::cast_from(d_items[0]);
        d_box[1] = g_l1 * k * f32::cast_from(d_items[2]);
        d_box[2] = f32::new(0.0);
        d_cls[0] = F::cast_from(g_cls * k * f32::cast_from(d_items[1]));
    }
}

/// Launches [`loss_items_fwd_kernel`]: `box_partial` f32 `[.., 3]` (any rank, contiguous, element count a
/// multiple of 3), `cls_partial` f32 (contiguous), `items [3]` and `w_sum [1]` (one float dtype, contiguous;
/// all written). `gains = (g_box, g_cls, g_l1)`, batch size included.
pub fn launch_loss_items_forward<R: CubeRuntime>(
    box_partial: &CubeTensor<R>,
    cls_partial: &CubeTensor<R>,
    items: &CubeTensor<R>,
    w_sum: &CubeTensor<R>,
    gains: [f32; 3],
) {
    crate::attention::kernels::assert_tight("launch_loss_items_forward", &[box_partial, cls_partial, items, w_sum]);
    let nb = box_partial.meta.shape().num_elements();
    assert!(
        nb.is_multiple_of(3),
        "launch_loss_items_forward: box_partial must hold (box, l1, w) triplets, got {nb} values"
    );
    for (t, name) in [(box_partial, "box_partial"), (cls_partial, "cls_partial")] {
        assert_eq!(t.dtype, DType::F32, "launch_loss_items_forward: {name} must be F32");
    }
    assert_eq!(items.meta.shape().num_elements(), 3, "launch_loss_items_forward: items must be [3]");
    assert_eq!(w_sum.meta.shape().num_elements(), 1, "launch_loss_items_forward: w_sum must be [1]");
    assert_eq!(w_sum.dtype, items.dtype, "launch_loss_items_forward: items and w_sum share a dtype");
    // SAFETY: unit reads stay below `3·(nb/3)` and `cls` elements; `items` has 3 elements, `w_sum` 1.
    unsafe {
        loss_items_fwd_kernel::launch_unchecked::<R>(
            &items.client,
            CubeCount::Static(1, 1, 1),
            CubeDim::new_1d(UNITS as u32),
            box_partial.clone().into_tensor_arg(),
            cls_partial.clone().into_tensor_arg(),
            items.clone().into_tensor_arg(),
            w_sum.clone().into_tensor_arg(),
            (nb / 3) as u32,
            cls_partial.meta.shape().num_elements() as u32,
            gains[0],
            gains[1],
            gains[2],
            UNITS,
            items.dtype.into(),
        )
    }
}

/// Launches [`loss_items_bwd_kernel`]: `d_items [3]`, `w_sum [1]` (the forward's output, float), `d_box [3]`
/// f32 and `d_cls [1]` (the dtype of `w_sum`), all contiguous and written.
pub fn launch_loss_items_backward<R: CubeRuntime>(
    d_items: &CubeTensor<R>,
    w_sum: &CubeTensor<R>,
    d_box: &CubeTensor<R>,
    d_cls: &CubeTensor<R>,
    gains: [f32; 3],
) {
    crate::attention::kernels::assert_tight("launch_loss_items_backward", &[d_items, w_sum, d_box, d_cls]);
    assert_eq!(d_items.meta.shape().num_elements(), 3, "launch_loss_items_backward: d_items must be [3]");
    assert_eq!(w_sum.meta.shape().num_elements(), 1, "launch_loss_items_backward: w_sum must be [1]");
    assert_eq!(d_box.meta.shape().num_elements(), 3, "launch_loss_items_backward: d_box must be [3]");
    assert_eq!(d_cls.meta.shape().num_elements(), 1, "launch_loss_items_backward: d_cls must be [1]");
    assert_eq!(d_box.dtype, DType::F32, "launch_loss_items_backward: d_box must be F32");
    assert!(
        d_items.dtype == w_sum.dtype && d_cls.dtype == w_sum.dtype,
        "launch_loss_items_backward: d_items, w_sum and d_cls share a dtype"
    );
    // SAFETY: one unit; fixed indices below the asserted sizes.
    unsafe {
        loss_items_bwd_kernel::launch_unchecked::<R>(
            &w_sum.client,
            CubeCount::Static(1, 1, 1),
            CubeDim::new_1d(1),
            d_items.clone().into_tensor_arg(),
            w_sum.clone().into_tensor_arg(),
            d_box.clone().into_tensor_arg(),
            d_cls.clone().into_tensor_arg(),
            gains[0],
            gains[1],
            gains[2],
            w_sum.dtype.into(),
        )
    }
}
