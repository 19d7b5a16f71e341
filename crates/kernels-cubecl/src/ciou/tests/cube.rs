//! Runtime-generic checks of the CIoU kernels (instantiated by `wgpu` and `cuda`).
#![allow(dead_code)]

use burn::tensor::DType;
use burn_cubecl::{BoolElement, CubeRuntime};

use super::*;
use crate::ciou::cube::raw;

/// Launches the forward kernel, then the backward kernel with the forward's alpha, all into NaN-poisoned
/// outputs, for every box set; compares with the F64 references. Returns the largest measured error.
pub(crate) fn check_kernels<R: CubeRuntime, BT: BoolElement>(device: &R::Device, dtype: DType, seed: u64) -> f64 {
    let mut worst = 0.0f64;
    for b in box_sets(seed, dtype) {
        let m = b.m();
        let (want_loss, want_alpha) = forward_f64(&b);
        let (want_dp, want_dt) = grads_f64(&b);
        eprintln!("kernels {} (m = {m}) {dtype:?}", b.name);
        let pred = upload::<R, BT, 2>(&b.pred, [m, 4], dtype, device);
        let target = upload::<R, BT, 2>(&b.target, [m, 4], dtype, device);
        let w = upload::<R, BT, 1>(&b.w, [m], dtype, device);

        let loss = poisoned::<R, BT, 1>([m], dtype, device);
        let alpha = poisoned::<R, BT, 1>([m], DType::F32, device);
        raw::launch_ciou_forward(&pred, &target, &loss, &alpha);
        worst = worst.max(assert_close("loss", &download::<R, BT, 1>(loss), &want_loss, tolerance(dtype)));
        // alpha = v/(1 − iou + v + eps) amplifies the f32 rounding of `1 − iou` for nearly equal boxes.
        worst = worst.max(assert_close("alpha", &download::<R, BT, 1>(alpha.clone()), &want_alpha, 1e-4));

        let d_pred = poisoned::<R, BT, 2>([m, 4], dtype, device);
        let d_target = poisoned::<R, BT, 2>([m, 4], dtype, device);
        raw::launch_ciou_backward(&pred, &target, &alpha, &w, &d_pred, &d_target);
        let gt = grad_tolerance(dtype);
        worst = worst.max(assert_close("d pred", &download::<R, BT, 2>(d_pred), &want_dp, gt));
        worst = worst.max(assert_close("d target", &download::<R, BT, 2>(d_target), &want_dt, gt));
    }
    worst
}

/// Backend-level op with a non-contiguous `pred` (a transposed view) and `M = 0`.
pub(crate) fn check_strided_and_empty<R: CubeRuntime, BT: BoolElement>(device: &R::Device, seed: u64) {
    let b = &box_sets(seed, DType::F32)[0];
    let m = b.m();
    let (want, _) = forward_f64(b);
    let mut pt = vec![0.0f32; 4 * m];
    for i in 0..m {
        for k in 0..4 {
            pt[k * m + i] = b.pred[4 * i + k];
        }
    }
    let pred = tensor::<Cb<R, BT>, 2>(&pt, [4, m], DType::F32, device).swap_dims(0, 1);
    let pred = pred.into_primitive().tensor();
    assert!(!pred.is_contiguous());
    let target = upload::<R, BT, 2>(&b.target, [m, 4], DType::F32, device);
    let (loss, _) = Cb::<R, BT>::ciou_loss_forward(pred, target);
    assert_close("loss (strided pred)", &download::<R, BT, 1>(loss), &want, 1e-5);

    // `empty`, not `zeros`: burn's fill kernel launches a 0×0×0 grid, which CUDA rejects. The
    // transposed view makes `pred` non-contiguous, so the op's own empty-input path is exercised.
    let pred = Tensor::<Cb<R, BT>, 2>::empty([4, 0], device).swap_dims(0, 1);
    let target = Tensor::<Cb<R, BT>, 2>::empty([0, 4], device);
    let (loss, alpha) = Cb::<R, BT>::ciou_loss_forward(
        pred.clone().into_primitive().tensor(),
        target.clone().into_primitive().tensor(),
    );
    assert_eq!((loss.meta.shape()[0], alpha.meta.shape()[0]), (0, 0));
    let loss = ciou_loss(pred, target);
    assert_eq!(loss.dims(), [0]);
    // read back as bytes: CUDA hands back an empty buffer whose pointer is not f32-aligned, so a typed
    // `to_vec::<f32>` of zero elements fails in bytemuck there (burn behaviour for any empty tensor)
    let data = loss.into_data();
    assert_eq!((data.num_elements(), data.as_bytes().len()), (0, 0));
}
