//! Reference path: `Flex`, `Autodiff<Flex>`, and the hand-derived backward against autodiff.
use burn::tensor::TensorPrimitive;

use super::*;

#[test]
fn ciou_formula_f64_matches_host() {
    // The tensor formula (also the gradient reference) equals the host ultralytics transcription.
    let device = Default::default();
    for b in box_sets(6000, DType::F32) {
        let m = b.m();
        let (want, want_alpha) = forward_f64(&b);
        let p = Tensor::<Flex, 2>::from_data(
            TensorData::new(b.pred.iter().map(|&x| x as f64).collect(), [m, 4]),
            (&device, DType::F64),
        );
        let t = Tensor::<Flex, 2>::from_data(
            TensorData::new(b.target.iter().map(|&x| x as f64).collect(), [m, 4]),
            (&device, DType::F64),
        );
        let (loss, alpha) = ciou_formula(p, t);
        let e = rel_err_floor(b.name, &to_vec(loss.clone()), &want, 1e-2);
        let got: Vec<f64> = to_vec_f64(loss);
        let e64 = got.iter().zip(&want).fold(0.0f64, |a, (g, w)| a.max((g - w).abs()));
        let ea = to_vec_f64(alpha).iter().zip(&want_alpha).fold(0.0f64, |a, (g, w)| a.max((g - w).abs()));
        eprintln!("{}: |loss − host| {e64:.2e}, |alpha − host| {ea:.2e} (f32 view {e:.1e})", b.name);
        assert!(e64 < 1e-12 && ea < 1e-12, "{}: formula differs from host: {e64:e} {ea:e}", b.name);
    }
}

#[test]
fn ciou_reference_backward_f64_matches_autodiff() {
    // The trait's default backward (the kernel's math in tensor ops), run in F64 through `ciou_loss` on
    // `Autodiff<Flex>`, against Burn's autodiff of the plain formula.
    type A = Autodiff<Flex>;
    let device = Default::default();
    for b in box_sets(6100, DType::F32) {
        let m = b.m();
        let (want_dp, want_dt) = grads_f64(&b);
        let f64t =
            |v: &[f32], shape: Vec<usize>| TensorData::new(v.iter().map(|&x| x as f64).collect::<Vec<f64>>(), shape);
        let pred = Tensor::<A, 2>::from_data(f64t(&b.pred, vec![m, 4]), (&device, DType::F64)).require_grad();
        let target = Tensor::<A, 2>::from_data(f64t(&b.target, vec![m, 4]), (&device, DType::F64)).require_grad();
        let w = Tensor::<A, 1>::from_data(f64t(&b.w, vec![m]), (&device, DType::F64));
        let grads = (ciou_loss(pred.clone(), target.clone()) * w).sum().backward();
        let gp = to_vec_f64(pred.grad(&grads).unwrap());
        let gt = to_vec_f64(target.grad(&grads).unwrap());
        let err = |g: &[f64], w: &[f64]| {
            let s = w.iter().fold(1e-2f64, |a, v| a.max(v.abs()));
            g.iter().zip(w).fold(0.0f64, |a, (x, y)| a.max((x - y).abs())) / s
        };
        let (ep, et) = (err(&gp, &want_dp), err(&gt, &want_dt));
        eprintln!("{}: hand backward vs autodiff (f64): d pred {ep:.2e}, d target {et:.2e}", b.name);
        assert!(ep < 1e-10 && et < 1e-10, "{}: hand-derived backward differs: {ep:e} {et:e}", b.name);
    }
}

#[test]
fn ciou_reference_flex() {
    let device = Default::default();
    check_forward::<Flex>(&device, 6200);
    check_autodiff::<Autodiff<Flex>>(&device, DType::F32, 6300);
}

#[test]
fn ciou_alpha_output() {
    // The forward's second output is alpha (F32 for F32 boxes), equal to the host value.
    let device = Default::default();
    let b = &box_sets(6400, DType::F32)[0];
    let m = b.m();
    let (_, want_alpha) = forward_f64(b);
    let p = tensor::<Flex, 2>(&b.pred, [m, 4], DType::F32, &device).into_primitive().tensor();
    let t = tensor::<Flex, 2>(&b.target, [m, 4], DType::F32, &device).into_primitive().tensor();
    let (_, alpha) = Flex::ciou_loss_forward(p, t);
    let alpha = Tensor::<Flex, 1>::from_primitive(TensorPrimitive::Float(alpha));
    assert_eq!(alpha.dtype(), DType::F32);
    assert_close("alpha", &to_vec(alpha), &want_alpha, 1e-5);
}
