//! Runtime-generic checks of the BCE kernels (instantiated by `wgpu` and `cuda`).
#![allow(dead_code)]

use burn::tensor::DType;
use burn_cubecl::{BoolElement, CubeRuntime};

use super::*;
use crate::bce::cube::raw;

/// Launches both kernels into NaN-poisoned outputs (`n` elements) and compares with the f64 reference.
/// Also compares each element's loss relative to its own magnitude where `t ∈ {0, 1}` and `|x| ≤ 20`
/// (there `max(x, 0) − x·t` is exact, so the `ln(1 + e^{−|x|})` term is what is measured, down to
/// `~2e-9`). Returns the largest error.
pub(crate) fn check_kernels<R: CubeRuntime, BT: BoolElement>(
    device: &R::Device,
    n: usize,
    dtype: DType,
    seed: u64,
) -> f64 {
    let mut worst = 0.0f64;
    for x in input_sets(n, seed, dtype) {
        let (want_loss, want_grad) = reference_f64(&x);
        eprintln!("kernels {} n = {n} {dtype:?}", x.name);
        let logits = upload::<R, BT, 1>(&x.x, [n], dtype, device);
        let targets = upload::<R, BT, 1>(&x.t, [n], dtype, device);
        let w = upload::<R, BT, 1>(&x.w, [n], dtype, device);
        let loss = poisoned::<R, BT, 1>([n], dtype, device);
        raw::launch_bce_forward(&logits, &targets, &loss);
        let got = download::<R, BT, 1>(loss);
        worst = worst.max(assert_close("loss", &got, &want_loss, tolerance(dtype)));
        if dtype == DType::F32 {
            let mut e_el = 0.0f64;
            for i in 0..n {
                if x.x[i].abs() <= 20.0 && (x.t[i] == 0.0 || x.t[i] == 1.0) {
                    e_el = e_el.max((got[i] as f64 - want_loss[i]).abs() / want_loss[i]);
                }
            }
            eprintln!("  loss per element (t ∈ {{0, 1}}, |x| ≤ 20): rel err {e_el:.3e}");
            assert!(e_el < 1e-5, "per-element loss error {e_el:e}");
        }
        let d = poisoned::<R, BT, 1>([n], dtype, device);
        raw::launch_bce_backward(&logits, &targets, &w, &d);
        worst = worst.max(assert_close("d logits", &download::<R, BT, 1>(d), &want_grad, tolerance(dtype)));
    }
    worst
}

/// Backend-level op with a strided `logits` view, F16 targets (cast by the op) and `N = 0`.
pub(crate) fn check_strided_mixed_empty<R: CubeRuntime, BT: BoolElement>(device: &R::Device, seed: u64) {
    use burn::tensor::Tensor;
    let (r, c) = (7, 11);
    let x = &input_sets(r * c, seed, DType::F32)[0];
    let targets_h = round_to(x.t.clone(), DType::F16);
    let (want, _) = reference_f64(&Inputs { name: "", x: x.x.clone(), t: targets_h.clone(), w: x.w.clone() });
    // logits stored transposed [c, r], viewed as [r, c]; want is in [r, c] order.
    let mut xt = vec![0.0f32; r * c];
    for i in 0..r {
        for j in 0..c {
            xt[j * r + i] = x.x[i * c + j];
        }
    }
    let logits = tensor::<Cb<R, BT>, 2>(&xt, [c, r], DType::F32, device).swap_dims(0, 1);
    let targets = tensor::<Cb<R, BT>, 2>(&targets_h, [r, c], DType::F16, device);
    let loss = bce_with_logits(logits, targets);
    assert_eq!(loss.dtype(), DType::F32);
    assert_close("loss (strided logits, f16 targets)", &to_vec(loss), &want, 1e-5);

    // `empty`, not `zeros`: burn's fill kernel launches a 0×0×0 grid, which CUDA rejects. A
    // transposed view and f16 targets send the empty input through the op's copy and cast paths.
    let e = Tensor::<Cb<R, BT>, 2>::empty([3, 0], device).swap_dims(0, 1);
    let t = Tensor::<Cb<R, BT>, 2>::from_data(burn::tensor::TensorData::new(Vec::<half::f16>::new(), [0, 3]), device);
    let loss = bce_with_logits(e, t);
    assert_eq!(loss.dims(), [0, 3]);
    // read back as bytes: CUDA hands back an empty buffer whose pointer is not f32-aligned, so a typed
    // `to_vec::<f32>` of zero elements fails in bytemuck there (burn behaviour for any empty tensor)
    let data = loss.into_data();
    assert_eq!((data.num_elements(), data.as_bytes().len()), (0, 0));
}
