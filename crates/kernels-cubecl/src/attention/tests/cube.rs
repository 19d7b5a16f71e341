//! Runtime-generic checks of the CubeCL kernels (instantiated by the `wgpu` and `cuda` test modules).
#![allow(dead_code)]

use burn::tensor::DType;
use burn_cubecl::{BoolElement, CubeRuntime};

use super::*;
use crate::attention::cube::raw;

pub(crate) use crate::test_util::{download, poisoned, upload, Cb};

/// Launches the four kernels directly into NaN-poisoned outputs and compares every output with the f64
/// reference. The backward kernels get the reference's `o` and `lse` (so they are tested on their own).
pub(crate) fn check_kernels<R: CubeRuntime, BT: BoolElement>(
    device: &R::Device,
    c: &Case,
    dtype: DType,
    seed: u64,
    scale: f32,
) {
    let Case { bh, nq, nk, dk, dv } = *c;
    let x = Inputs::random(c, seed, dtype);
    let want = reference_f64(c, &x, scale);
    let tol = tolerance(dtype);
    eprintln!("kernels {c:?} {dtype:?} scale {scale}");

    let q = upload::<R, BT, 3>(&x.q, [bh, nq, dk], dtype, device);
    let k = upload::<R, BT, 3>(&x.k, [bh, nk, dk], dtype, device);
    let v = upload::<R, BT, 3>(&x.v, [bh, nk, dv], dtype, device);
    let d_o = upload::<R, BT, 3>(&x.d_o, [bh, nq, dv], dtype, device);

    // Forward.
    let o = poisoned::<R, BT, 3>([bh, nq, dv], dtype, device);
    let lse = poisoned::<R, BT, 2>([bh, nq], DType::F32, device);
    assert!(download::<R, BT, 2>(lse.clone()).iter().all(|v| v.is_nan()), "poison did not stick");
    raw::launch_forward(&q, &k, &v, &o, &lse, scale);
    assert_eq!(o.dtype, dtype);
    assert_close("o", &download::<R, BT, 3>(o), &want.o, tol);
    // LSE is f32 whatever the storage dtype; its error follows from the rounded inputs only.
    assert_close("lse", &download::<R, BT, 2>(lse), &want.lse, 1e-4);

    // Tensor-core forward, where the device has it for this dtype and these head dims (CUDA f16/bf16).
    // Every (key-tile width, planes) configuration (forced; results may only differ by rounding order).
    if raw::cmma_supported(&q, dk, dv) {
        use crate::attention::kernels::forward_cmma::{set_config_override, CONFIGS};
        for cfg in CONFIGS {
            set_config_override(Some(cfg));
            let o = poisoned::<R, BT, 3>([bh, nq, dv], dtype, device);
            let lse = poisoned::<R, BT, 2>([bh, nq], DType::F32, device);
            raw::launch_forward_cmma(&q, &k, &v, &o, &lse, scale);
            assert_close(&format!("o (cmma {cfg:?})"), &download::<R, BT, 3>(o), &want.o, tol);
            assert_close(&format!("lse (cmma {cfg:?})"), &download::<R, BT, 2>(lse), &want.lse, 1e-4);
        }
        set_config_override(None);
        eprintln!("  tensor-core forward checked");
    }
    // Register-level tensor-core forward (`mma.sync`), where the device has it (CUDA sm_80+ f16/bf16).
    let mma = raw::mma_supported(&q, dk, dv);
    if mma {
        use crate::attention::kernels::forward_mma::{set_config_override, TEST_CONFIGS};
        for cfg in TEST_CONFIGS {
            set_config_override(Some(cfg));
            let o = poisoned::<R, BT, 3>([bh, nq, dv], dtype, device);
            let lse = poisoned::<R, BT, 2>([bh, nq], DType::F32, device);
            raw::launch_forward_mma(&q, &k, &v, &o, &lse, scale);
            assert_close(&format!("o (mma {cfg:?})"), &download::<R, BT, 3>(o), &want.o, tol);
            assert_close(&format!("lse (mma {cfg:?})"), &download::<R, BT, 2>(lse), &want.lse, 1e-4);
        }
        set_config_override(None);
        eprintln!("  mma forward checked");
    }

    // Backward with the reference's o (rounded to the storage dtype) and lse.
    let o_ref: Vec<f32> = round_to(want.o.iter().map(|&a| a as f32).collect(), dtype);
    let lse_ref: Vec<f32> = want.lse.iter().map(|&a| a as f32).collect();
    let o_in = upload::<R, BT, 3>(&o_ref, [bh, nq, dv], dtype, device);
    let lse_in = upload::<R, BT, 2>(&lse_ref, [bh, nq], DType::F32, device);

    let delta = poisoned::<R, BT, 2>([bh, nq], DType::F32, device);
    raw::launch_delta(&o_in, &d_o, &delta);
    let delta_want: Vec<f64> =
        (0..bh * nq).map(|r| (0..dv).map(|d| o_ref[r * dv + d] as f64 * x.d_o[r * dv + d] as f64).sum()).collect();
    assert_close("delta", &download::<R, BT, 2>(delta.clone()), &delta_want, 1e-5);

    let dq = poisoned::<R, BT, 3>([bh, nq, dk], dtype, device);
    let dkk = poisoned::<R, BT, 3>([bh, nk, dk], dtype, device);
    let dvv = poisoned::<R, BT, 3>([bh, nk, dv], dtype, device);
    raw::launch_dkdv(&q, &k, &v, &d_o, &lse_in, &delta, &dkk, &dvv, scale);
    raw::launch_dq(&q, &k, &v, &d_o, &lse_in, &delta, &dq, scale);
    // Δ comes from `o` rounded to the storage dtype (as in real use); observed f16 errors ~5e-4.
    let gtol = tol;
    assert_close("dq", &download::<R, BT, 3>(dq), &want.dq, gtol);
    assert_close("dk", &download::<R, BT, 3>(dkk), &want.dk, gtol);
    assert_close("dv", &download::<R, BT, 3>(dvv), &want.dv, gtol);

    if mma {
        let dq = poisoned::<R, BT, 3>([bh, nq, dk], dtype, device);
        let dkk = poisoned::<R, BT, 3>([bh, nk, dk], dtype, device);
        let dvv = poisoned::<R, BT, 3>([bh, nk, dv], dtype, device);
        raw::launch_dkdv_mma(&q, &k, &v, &d_o, &lse_in, &delta, &dkk, &dvv, scale);
        raw::launch_dq_mma(&q, &k, &v, &d_o, &lse_in, &delta, &dq, scale);
        assert_close("dq (mma)", &download::<R, BT, 3>(dq), &want.dq, gtol);
        assert_close("dk (mma)", &download::<R, BT, 3>(dkk), &want.dk, gtol);
        assert_close("dv (mma)", &download::<R, BT, 3>(dvv), &want.dv, gtol);
        eprintln!("  mma backward checked");
    }
}

/// Backend-level op (`CubeBackend::flash_attention_forward`/`_backward`) on non-contiguous inputs
/// (`q` given as a transposed view): the op must make them contiguous.
pub(crate) fn check_non_contiguous<R: CubeRuntime, BT: BoolElement>(device: &R::Device, seed: u64) {
    use crate::attention::FlashAttentionBackend;
    let c = Case::new(2, 20, 31, 16, 16);
    let x = Inputs::random(&c, seed, DType::F32);
    let want = reference_f64(&c, &x, c.scale());
    // Store q as [bh, dk, nq] and swap back: a strided view of the right shape.
    let mut qt = vec![0.0f32; x.q.len()];
    for h in 0..c.bh {
        for i in 0..c.nq {
            for d in 0..c.dk {
                qt[(h * c.dk + d) * c.nq + i] = x.q[(h * c.nq + i) * c.dk + d];
            }
        }
    }
    let q = tensor::<Cb<R, BT>, 3>(&qt, [c.bh, c.dk, c.nq], DType::F32, device).swap_dims(1, 2);
    let k = upload::<R, BT, 3>(&x.k, [c.bh, c.nk, c.dk], DType::F32, device);
    let v = upload::<R, BT, 3>(&x.v, [c.bh, c.nk, c.dv], DType::F32, device);
    let q = q.into_primitive().tensor();
    assert!(!q.is_contiguous());
    let (o, lse) = Cb::<R, BT>::flash_attention_forward(q.clone(), k.clone(), v.clone(), c.scale());
    assert_close("o (strided q)", &download::<R, BT, 3>(o.clone()), &want.o, 1e-4);
    let d_o = upload::<R, BT, 3>(&x.d_o, [c.bh, c.nq, c.dv], DType::F32, device);
    let (dq, dk, dv) = Cb::<R, BT>::flash_attention_backward(q, k, v, o, lse, d_o, c.scale());
    assert_close("dq (strided q)", &download::<R, BT, 3>(dq), &want.dq, 1e-4);
    assert_close("dk (strided q)", &download::<R, BT, 3>(dk), &want.dk, 1e-4);
    assert_close("dv (strided q)", &download::<R, BT, 3>(dv), &want.dv, 1e-4);
}
