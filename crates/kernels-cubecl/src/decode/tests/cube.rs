//! Runtime-generic checks of the detect-decode kernels (instantiated by `wgpu` and `cuda`).
#![allow(dead_code)]

use burn::tensor::DType;
use burn_cubecl::{BoolElement, CubeRuntime};

use super::*;
use crate::decode::cube::raw;

/// Launches both kernels into NaN-poisoned outputs and compares with the f64 reference.
pub(crate) fn check_kernels<R: CubeRuntime, BT: BoolElement>(
    device: &R::Device,
    c: &Case,
    format: BoxFormat,
    dtype: DType,
    seed: u64,
) {
    let x = Inputs::random(c, seed, dtype);
    let (want_boxes, want_grad) = reference_f64(c, &x, format);
    let shape = [c.batch, 4, c.anchors()];
    eprintln!("kernels {c:?} {format:?} {dtype:?}");
    let dist = upload::<R, BT, 3>(&x.dist, shape, dtype, device);
    let w = upload::<R, BT, 3>(&x.w, shape, dtype, device);
    let anchors = upload::<R, BT, 2>(&x.anchors, [3, c.anchors()], DType::F32, device);

    let boxes = poisoned::<R, BT, 3>(shape, dtype, device);
    raw::launch_decode_forward(&dist, &anchors, &boxes, format.is_xywh());
    assert_eq!(boxes.dtype, dtype);
    assert_close("boxes", &download::<R, BT, 3>(boxes), &want_boxes, tolerance(dtype));

    let d_dist = poisoned::<R, BT, 3>(shape, dtype, device);
    raw::launch_decode_backward(&anchors, &w, &d_dist, format.is_xywh());
    assert_close("d dist", &download::<R, BT, 3>(d_dist), &want_grad, tolerance(dtype));
}

/// Backend-level op on a non-contiguous `dist` (a transposed view) and F16 anchors (cast by the op).
pub(crate) fn check_strided<R: CubeRuntime, BT: BoolElement>(device: &R::Device, seed: u64) {
    use crate::decode::DetectDecodeBackend;
    let c = Case::new(2, &[(5, 6)], &[8.0]);
    let a_n = c.anchors();
    let x = Inputs::random(&c, seed, DType::F32);
    let (want, want_grad) = reference_f64(&c, &x, BoxFormat::Xywh);
    // dist stored as [B, A, 4] and viewed as [B, 4, A].
    let mut t = vec![0.0f32; x.dist.len()];
    for b in 0..c.batch {
        for ch in 0..4 {
            for a in 0..a_n {
                t[(b * a_n + a) * 4 + ch] = x.dist[(b * 4 + ch) * a_n + a];
            }
        }
    }
    let dist = tensor::<Cb<R, BT>, 3>(&t, [c.batch, a_n, 4], DType::F32, device).swap_dims(1, 2);
    let dist = dist.into_primitive().tensor();
    assert!(!dist.is_contiguous());
    let anchors = tensor::<Cb<R, BT>, 2>(&x.anchors, [3, a_n], DType::F16, device).into_primitive().tensor();
    let boxes = Cb::<R, BT>::detect_decode_forward(dist, anchors.clone(), BoxFormat::Xywh);
    assert_close("boxes (strided dist, f16 anchors)", &download::<R, BT, 3>(boxes), &want, 1e-5);
    let w = tensor::<Cb<R, BT>, 3>(&x.w, [c.batch, 4, a_n], DType::F32, device).into_primitive().tensor();
    let g = Cb::<R, BT>::detect_decode_backward(anchors, w, BoxFormat::Xywh);
    assert_close("d dist (f16 anchors)", &download::<R, BT, 3>(g), &want_grad, 1e-5);
}
