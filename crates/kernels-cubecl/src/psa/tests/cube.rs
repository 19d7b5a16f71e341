//! Runtime-generic checks of the PSA rearrangement kernels: each launched directly into NaN-poisoned
//! outputs and compared element by element with the host rearrangement (instantiated by `wgpu`, `cuda`).
#![allow(dead_code)]

use burn::tensor::DType;
use burn_cubecl::{BoolElement, CubeRuntime};

use super::*;
use crate::attention::tests::cube::{download, poisoned, upload};
use crate::psa::cube::raw;
use crate::psa::kernels::PsaDims;

fn dims(c: &PsaCase) -> PsaDims {
    PsaDims { batch: c.b, heads: c.nh, key_dim: c.kd, head_dim: c.hd, tokens: c.n() }
}

/// Host `PsaPackQkv`: `(q, k [BH, N, kd], v [BH, N, hd])`.
fn host_pack(c: &PsaCase, qkv: &[f32]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (n, kd, hd, c3) = (c.n(), c.kd, c.hd, c.c3());
    let bh = c.b * c.nh;
    let (mut q, mut k, mut v) = (vec![0.0; bh * n * kd], vec![0.0; bh * n * kd], vec![0.0; bh * n * hd]);
    for g in 0..bh {
        for ch in 0..c3 {
            for t in 0..n {
                let x = qkv[(g * c3 + ch) * n + t] as f64;
                if ch < kd {
                    q[(g * n + t) * kd + ch] = x;
                } else if ch < 2 * kd {
                    k[(g * n + t) * kd + ch - kd] = x;
                } else {
                    v[(g * n + t) * hd + ch - 2 * kd] = x;
                }
            }
        }
    }
    (q, k, v)
}

/// Index of `[b, c_off + h·hd + d, t]` in an NCHW tensor with `c_total` channels.
fn nchw(c: &PsaCase, c_total: usize, c_off: usize, g: usize, d: usize, t: usize) -> usize {
    let (b, h) = (g / c.nh, g % c.nh);
    (b * c_total + c_off + h * c.hd + d) * c.n() + t
}

/// Host `PsaMergeAttn` of `o [BH, N, hd]` into channels `[c_off, c_off + C)` of `dst`.
fn host_merge(c: &PsaCase, o: &[f64], dst: &mut [f64], c_total: usize, c_off: usize) {
    for g in 0..c.b * c.nh {
        for t in 0..c.n() {
            for d in 0..c.hd {
                dst[nchw(c, c_total, c_off, g, d, t)] = o[(g * c.n() + t) * c.hd + d];
            }
        }
    }
}

/// Launches every PSA kernel into NaN-poisoned outputs and checks every element.
pub(crate) fn check_kernels<R: CubeRuntime, BT: BoolElement>(
    device: &R::Device,
    c: &PsaCase,
    dtype: DType,
    seed: u64,
) -> f64 {
    let d = dims(c);
    let (n, bh, cc) = (c.n(), c.b * c.nh, c.c());
    let mut rng = Rng::new(seed);
    let mut gen = |len: usize| crate::attention::tests::round_to(rng.uniform(len, 1.0), dtype);
    let qkv_h = gen(c.qkv_shape().iter().product());
    let o_h = gen(bh * n * c.hd);
    let two_c = [c.b, 2 * cc, c.h, c.w];
    let src2_h = gen(two_c.iter().product());
    let dq_h = gen(bh * n * c.kd);
    let dk_h = gen(bh * n * c.kd);
    let dv_h = gen(bh * n * c.hd);
    let tol = if dtype == DType::F32 { 1e-6 } else { tolerance(dtype) };
    let f = |v: &[f32]| v.iter().map(|&a| a as f64).collect::<Vec<f64>>();
    eprintln!("psa kernels {c:?} {dtype:?}");
    let mut worst = 0.0f64;

    let qkv = upload::<R, BT, 4>(&qkv_h, c.qkv_shape(), dtype, device);
    let (want_q, want_k, want_v) = host_pack(c, &qkv_h);

    // PsaPackQkv.
    let q = poisoned::<R, BT, 3>([bh, n, c.kd], dtype, device);
    let k = poisoned::<R, BT, 3>([bh, n, c.kd], dtype, device);
    let v = poisoned::<R, BT, 3>([bh, n, c.hd], dtype, device);
    raw::launch_pack_qkv(&qkv, &q, &k, &v, d);
    worst = worst.max(assert_close("pack q", &download::<R, BT, 3>(q), &want_q, tol));
    worst = worst.max(assert_close("pack k", &download::<R, BT, 3>(k), &want_k, tol));
    worst = worst.max(assert_close("pack v", &download::<R, BT, 3>(v.clone()), &want_v, tol));

    // PsaExtractV and PsaMergeAttn, each alone into `[B, C, H, W]`.
    let mut want_vn = vec![0.0; c.b * cc * n];
    host_merge(c, &want_v, &mut want_vn, cc, 0);
    let vn = poisoned::<R, BT, 4>(c.out_shape(), dtype, device);
    raw::launch_extract_v(&qkv, &vn, d, 0);
    worst = worst.max(assert_close("extract v", &download::<R, BT, 4>(vn), &want_vn, tol));

    let o = upload::<R, BT, 3>(&o_h, [bh, n, c.hd], dtype, device);
    let mut want_attn = vec![0.0; c.b * cc * n];
    host_merge(c, &f(&o_h), &mut want_attn, cc, 0);
    let attn = poisoned::<R, BT, 4>(c.out_shape(), dtype, device);
    raw::launch_merge_attn(&o, &attn, d, 0);
    worst = worst.max(assert_close("merge attn", &download::<R, BT, 4>(attn), &want_attn, tol));

    // Both into the two channel halves of one `[B, 2C, H, W]` tensor (the op's `out`).
    let mut want_out = vec![0.0; c.b * 2 * cc * n];
    host_merge(c, &f(&o_h), &mut want_out, 2 * cc, 0);
    host_merge(c, &want_v, &mut want_out, 2 * cc, cc);
    let out = poisoned::<R, BT, 4>(two_c, dtype, device);
    raw::launch_merge_attn(&o, &out, d, 0);
    raw::launch_extract_v(&qkv, &out, d, cc);
    worst = worst.max(assert_close("merge + extract (out)", &download::<R, BT, 4>(out), &want_out, tol));

    // PsaSplitAttn (inverse of merge) from channels [0, C) and [C, 2C) of a `[B, 2C, H, W]` tensor.
    let src2 = upload::<R, BT, 4>(&src2_h, two_c, dtype, device);
    for c_off in [0, cc] {
        let mut want = vec![0.0; bh * n * c.hd];
        for g in 0..bh {
            for t in 0..n {
                for dd in 0..c.hd {
                    want[(g * n + t) * c.hd + dd] = src2_h[nchw(c, 2 * cc, c_off, g, dd, t)] as f64;
                }
            }
        }
        let got = poisoned::<R, BT, 3>([bh, n, c.hd], dtype, device);
        raw::launch_split_attn(&src2, &got, d, c_off);
        worst = worst.max(assert_close(&format!("split attn c_off {c_off}"), &download::<R, BT, 3>(got), &want, tol));
    }

    // PsaUnpackQkv (inverse of pack, plus the `v` output's gradient from channels [C, 2C) of `src2`).
    let dq = upload::<R, BT, 3>(&dq_h, [bh, n, c.kd], dtype, device);
    let dk = upload::<R, BT, 3>(&dk_h, [bh, n, c.kd], dtype, device);
    let dv = upload::<R, BT, 3>(&dv_h, [bh, n, c.hd], dtype, device);
    let mut want = vec![0.0; qkv_h.len()];
    let c3 = c.c3();
    for g in 0..bh {
        for t in 0..n {
            for ch in 0..c3 {
                want[(g * c3 + ch) * n + t] = if ch < c.kd {
                    dq_h[(g * n + t) * c.kd + ch] as f64
                } else if ch < 2 * c.kd {
                    dk_h[(g * n + t) * c.kd + ch - c.kd] as f64
                } else {
                    let dd = ch - 2 * c.kd;
                    dv_h[(g * n + t) * c.hd + dd] as f64 + src2_h[nchw(c, 2 * cc, cc, g, dd, t)] as f64
                };
            }
        }
    }
    let dqkv = poisoned::<R, BT, 4>(c.qkv_shape(), dtype, device);
    raw::launch_unpack_qkv(&dq, &dk, &dv, &src2, &dqkv, d, cc);
    // The sum is rounded once to the storage dtype.
    let tol_sum = if dtype == DType::F32 { 1e-6 } else { tolerance(dtype) };
    worst = worst.max(assert_close("unpack dqkv", &download::<R, BT, 4>(dqkv), &want, tol_sum));
    worst
}
