//! CubeCL kernels of the PSA attention op: index-only rearrangements between ultralytics' NCHW layout and
//! the `[B·nh, N, D]` layout of the Flash Attention kernels. One unit per element written, 1-D grid,
//! every tensor contiguous (indexed linearly), any float dtype (`#[define(F)]`), no arithmetic except the
//! gradient sum in [`psa_unpack_qkv_kernel`].
//!
//! Notation: `B` batch, `nh` heads, `kd` key dim, `hd` head dim, `C3 = 2·kd + hd` channels per head in
//! the `qkv` conv output, `N = H·W`, `bh = b·nh + h`.
//!
//! | kernel | from | to | used in |
//! |---|---|---|---|
//! | [`psa_pack_qkv_kernel`] (`PsaPackQkv`) | `qkv [B, nh·C3, H, W]` | `q, k [bh, N, kd]`, `v [bh, N, hd]` | forward, backward |
//! | [`psa_extract_v_kernel`] (`PsaExtractV`) | `qkv` | `v_nchw [B, nh·hd, H, W]` (channel slice of `out`) | forward |
//! | [`psa_merge_attn_kernel`] (`PsaMergeAttn`) | `o [bh, N, hd]` | `attn [B, nh·hd, H, W]` (channel slice of `out`) | forward |
//! | [`psa_split_attn_kernel`] (inverse of merge) | channel slice of `out`/`d_out` | `[bh, N, hd]` | backward (`O`, `dO`) |
//! | [`psa_unpack_qkv_kernel`] (inverse of pack + extract) | `dq, dk, dv`, `d v_nchw` | `d qkv` | backward |
//!
//! The NCHW outputs are written into a channel slice `[c_off, c_off + nh·hd)` of a tensor with `c_total`
//! channels, so the op's two results live in one tensor `[B, 2·nh·hd, H, W]` (see `super`).
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

use crate::cube_util::assert_tight;

/// Units per cube.
pub(crate) const UNITS: usize = 256;

/// Geometry of one op: `(B, nh, kd, hd, N)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PsaDims {
    pub batch: usize,
    pub heads: usize,
    pub key_dim: usize,
    pub head_dim: usize,
    pub tokens: usize,
}

impl PsaDims {
    /// Channels per head of the `qkv` tensor: `2·kd + hd`.
    pub fn c3(&self) -> usize {
        2 * self.key_dim + self.head_dim
    }
    /// Channels of one NCHW result (`attn` or `v`): `nh·hd`.
    pub fn c(&self) -> usize {
        self.heads * self.head_dim
    }
}

/// `PsaPackQkv`: `q[bh, n, c] = qkv[bh·C3 + c, n]` (`c < kd`), `k[bh, n, c] = qkv[bh·C3 + kd + c, n]`,
/// `v[bh, n, d] = qkv[bh·C3 + 2kd + d, n]` — ultralytics'
/// `qkv.view(B, nh, C3, N).split([kd, kd, hd], dim=2)` followed by `.transpose(-2, -1)`, made contiguous.
/// One unit per `qkv` element (coalesced reads).
#[cube(launch_unchecked)]
pub fn psa_pack_qkv_kernel<F: Float>(
    qkv: &Tensor<F>,
    q: &mut Tensor<F>,
    k: &mut Tensor<F>,
    v: &mut Tensor<F>,
    total: u32,
    tokens: u32,
    key_dim: u32,
    head_dim: u32,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i < total as usize {
        let n_tok = tokens as usize;
        let kd = key_dim as usize;
        let hd = head_dim as usize;
        let c3 = 2 * kd + hd;
        let n = i % n_tok;
        let t = i / n_tok;
        let c = t % c3;
        let bh = t / c3;
        let row = bh * n_tok + n;
        if c < kd {
            q[row * kd + c] = qkv[i];
        } else if c < 2 * kd {
            k[row * kd + c - kd] = qkv[i];
        } else {
            v[row * hd + c - 2 * kd] = qkv[i];
        }
    }
}

/// `PsaExtractV`: `out[b, c_off + h·hd + d, n] = qkv[b, h·C3 + 2kd + d, n]` — ultralytics'
/// `v.reshape(B, C, H, W)` (the input of `pe`). One unit per written element.
#[cube(launch_unchecked)]
pub fn psa_extract_v_kernel<F: Float>(
    qkv: &Tensor<F>,
    out: &mut Tensor<F>,
    total: u32,
    tokens: u32,
    key_dim: u32,
    head_dim: u32,
    heads: u32,
    c_total: u32,
    c_off: u32,
    #[define(F)] _dtype: StorageType,
) {
    let j = ABSOLUTE_POS;
    if j < total as usize {
        let n_tok = tokens as usize;
        let kd = key_dim as usize;
        let hd = head_dim as usize;
        let nh = heads as usize;
        let n = j % n_tok;
        let t = j / n_tok;
        let d = t % hd;
        let bh = t / hd;
        let b = bh / nh;
        let h = bh % nh;
        let src = (bh * (2 * kd + hd) + 2 * kd + d) * n_tok + n;
        let dst = (b * c_total as usize + c_off as usize + h * hd + d) * n_tok + n;
        out[dst] = qkv[src];
    }
}

/// `PsaMergeAttn`: `out[b, c_off + h·hd + d, n] = o[bh, n, d]` — ultralytics'
/// `(v @ attn.transpose(-2, -1)).view(B, C, H, W)` given FA2's `o = attn · vᵀ` rows. One unit per written
/// element (coalesced writes).
#[cube(launch_unchecked)]
pub fn psa_merge_attn_kernel<F: Float>(
    o: &Tensor<F>,
    out: &mut Tensor<F>,
    total: u32,
    tokens: u32,
    head_dim: u32,
    heads: u32,
    c_total: u32,
    c_off: u32,
    #[define(F)] _dtype: StorageType,
) {
    let j = ABSOLUTE_POS;
    if j < total as usize {
        let n_tok = tokens as usize;
        let hd = head_dim as usize;
        let nh = heads as usize;
        let n = j % n_tok;
        let t = j / n_tok;
        let d = t % hd;
        let bh = t / hd;
        let b = bh / nh;
        let h = bh % nh;
        let dst = (b * c_total as usize + c_off as usize + h * hd + d) * n_tok + n;
        out[dst] = o[(bh * n_tok + n) * hd + d];
    }
}

/// Inverse of [`psa_merge_attn_kernel`]: `o[bh, n, d] = src[b, c_off + h·hd + d, n]`. One unit per `o`
/// element.
#[cube(launch_unchecked)]
pub fn psa_split_attn_kernel<F: Float>(
    src: &Tensor<F>,
    o: &mut Tensor<F>,
    total: u32,
    tokens: u32,
    head_dim: u32,
    heads: u32,
    c_total: u32,
    c_off: u32,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i < total as usize {
        let n_tok = tokens as usize;
        let hd = head_dim as usize;
        let nh = heads as usize;
        let d = i % hd;
        let t = i / hd;
        let n = t % n_tok;
        let bh = t / n_tok;
        let b = bh / nh;
        let h = bh % nh;
        o[i] = src[(b * c_total as usize + c_off as usize + h * hd + d) * n_tok + n];
    }
}

/// Inverse of [`psa_pack_qkv_kernel`] plus the backward of [`psa_extract_v_kernel`]:
/// `dqkv[bh·C3 + c, n] = dq[bh, n, c]` (`c < kd`), `dk[bh, n, c − kd]` (`c < 2kd`), else
/// `dv[bh, n, d] + dvn[b, c_off + h·hd + d, n]` with `d = c − 2kd` (summed in f32). One unit per `dqkv`
/// element (coalesced writes).
#[cube(launch_unchecked)]
pub fn psa_unpack_qkv_kernel<F: Float>(
    dq: &Tensor<F>,
    dk: &Tensor<F>,
    dv: &Tensor<F>,
    dvn: &Tensor<F>,
    dqkv: &mut Tensor<F>,
    total: u32,
    tokens: u32,
    key_dim: u32,
    head_dim: u32,
    heads: u32,
    c_total: u32,
    c_off: u32,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i < total as usize {
        let n_tok = tokens as usize;
        let kd = key_dim as usize;
        let hd = head_dim as usize;
        let nh = heads as usize;
        let c3 = 2 * kd + hd;
        let n = i % n_tok;
        let t = i / n_tok;
        let c = t % c3;
        let bh = t / c3;
        let row = bh * n_tok + n;
        if c < kd {
            dqkv[i] = dq[row * kd + c];
        } else if c < 2 * kd {
            dqkv[i] = dk[row * kd + c - kd];
        } else {
            let d = c - 2 * kd;
            let b = bh / nh;
            let h = bh % nh;
            let g = f32::cast_from(dv[row * hd + d])
                + f32::cast_from(dvn[(b * c_total as usize + c_off as usize + h * hd + d) * n_tok + n]);
            dqkv[i] = F::cast_from(g);
        }
    }
}

fn grid<R: CubeRuntime>(t: &CubeTensor<R>, units: usize) -> (CubeCount, CubeDim) {
    let cube_dim = CubeDim::new_1d(UNITS as u32);
    (cubecl::calculate_cube_count_elemwise(&t.client, units, cube_dim), cube_dim)
}

fn u(x: usize) -> u32 {
    u32::try_from(x).expect("psa attention: size exceeds u32 indexing")
}

/// Launches [`psa_pack_qkv_kernel`]: `qkv` contiguous `[B, nh·C3, H, W]`; `q`, `k` contiguous
/// `[B·nh, N, kd]`, `v` `[B·nh, N, hd]` (every element written).
pub fn launch_pack_qkv<R: CubeRuntime>(
    qkv: &CubeTensor<R>,
    q: &CubeTensor<R>,
    k: &CubeTensor<R>,
    v: &CubeTensor<R>,
    dims: PsaDims,
) {
    assert_tight("launch_pack_qkv", &[qkv, q, k, v]);
    let total = qkv.meta.num_elements();
    assert_eq!(total, dims.batch * dims.heads * dims.c3() * dims.tokens, "launch_pack_qkv: qkv size");
    let (count, dim) = grid(qkv, total);
    // SAFETY: `i < total` = qkv's element count; the q/k/v indices are < B·nh·N·{kd,hd} by construction.
    unsafe {
        psa_pack_qkv_kernel::launch_unchecked::<R>(
            &qkv.client,
            count,
            dim,
            qkv.clone().into_tensor_arg(),
            q.clone().into_tensor_arg(),
            k.clone().into_tensor_arg(),
            v.clone().into_tensor_arg(),
            u(total),
            u(dims.tokens),
            u(dims.key_dim),
            u(dims.head_dim),
            qkv.dtype.into(),
        )
    }
}

/// Channel slice `[c_off, c_off + nh·hd)` of an NCHW tensor with `c_total` channels.
fn slice_of<R: CubeRuntime>(out: &CubeTensor<R>, dims: PsaDims, c_off: usize) -> usize {
    let shape = out.meta.shape();
    let c_total = shape[1];
    assert!(
        shape.num_dims() == 4 && shape[0] == dims.batch && shape[2] * shape[3] == dims.tokens,
        "psa attention: NCHW tensor {shape:?} does not match {dims:?}"
    );
    assert!(c_off + dims.c() <= c_total, "psa attention: channel slice out of range");
    c_total
}

/// Launches [`psa_extract_v_kernel`] writing channels `[c_off, c_off + nh·hd)` of `out`
/// (contiguous `[B, c_total, H, W]`).
pub fn launch_extract_v<R: CubeRuntime>(qkv: &CubeTensor<R>, out: &CubeTensor<R>, dims: PsaDims, c_off: usize) {
    assert_tight("launch_extract_v", &[qkv, out]);
    let c_total = slice_of(out, dims, c_off);
    let total = dims.batch * dims.c() * dims.tokens;
    let (count, dim) = grid(qkv, total);
    // SAFETY: `j < total`; source and destination indices stay inside the checked shapes.
    unsafe {
        psa_extract_v_kernel::launch_unchecked::<R>(
            &qkv.client,
            count,
            dim,
            qkv.clone().into_tensor_arg(),
            out.clone().into_tensor_arg(),
            u(total),
            u(dims.tokens),
            u(dims.key_dim),
            u(dims.head_dim),
            u(dims.heads),
            u(c_total),
            u(c_off),
            qkv.dtype.into(),
        )
    }
}

/// Launches [`psa_merge_attn_kernel`]: `o` contiguous `[B·nh, N, hd]` into channels
/// `[c_off, c_off + nh·hd)` of `out` (contiguous `[B, c_total, H, W]`).
pub fn launch_merge_attn<R: CubeRuntime>(o: &CubeTensor<R>, out: &CubeTensor<R>, dims: PsaDims, c_off: usize) {
    assert_tight("launch_merge_attn", &[o, out]);
    let c_total = slice_of(out, dims, c_off);
    let total = dims.batch * dims.c() * dims.tokens;
    assert_eq!(o.meta.num_elements(), total, "launch_merge_attn: o size");
    let (count, dim) = grid(o, total);
    // SAFETY: `j < total` = o's element count; destination indices stay inside the checked slice.
    unsafe {
        psa_merge_attn_kernel::launch_unchecked::<R>(
            &o.client,
            count,
            dim,
            o.clone().into_tensor_arg(),
            out.clone().into_tensor_arg(),
            u(total),
            u(dims.tokens),
            u(dims.head_dim),
            u(dims.heads),
            u(c_total),
            u(c_off),
            o.dtype.into(),
        )
    }
}

/// Launches [`psa_split_attn_kernel`]: channels `[c_off, c_off + nh·hd)` of `src` (contiguous
/// `[B, c_total, H, W]`) into `o` (contiguous `[B·nh, N, hd]`, every element written).
pub fn launch_split_attn<R: CubeRuntime>(src: &CubeTensor<R>, o: &CubeTensor<R>, dims: PsaDims, c_off: usize) {
    assert_tight("launch_split_attn", &[src, o]);
    let c_total = slice_of(src, dims, c_off);
    let total = dims.batch * dims.c() * dims.tokens;
    assert_eq!(o.meta.num_elements(), total, "launch_split_attn: o size");
    let (count, dim) = grid(o, total);
    // SAFETY: `i < total` = o's element count; source indices stay inside the checked slice.
    unsafe {
        psa_split_attn_kernel::launch_unchecked::<R>(
            &o.client,
            count,
            dim,
            src.clone().into_tensor_arg(),
            o.clone().into_tensor_arg(),
            u(total),
            u(dims.tokens),
            u(dims.head_dim),
            u(dims.heads),
            u(c_total),
            u(c_off),
            o.dtype.into(),
        )
    }
}

/// Launches [`psa_unpack_qkv_kernel`]: `dq`, `dk` `[B·nh, N, kd]`, `dv` `[B·nh, N, hd]`, `dvn` = the
/// gradient of `v_nchw` as channels `[c_off, c_off + nh·hd)` of a `[B, c_total, H, W]` tensor, into `dqkv`
/// (contiguous `[B, nh·C3, H, W]`, every element written). All contiguous, one dtype.
#[allow(clippy::too_many_arguments)]
pub fn launch_unpack_qkv<R: CubeRuntime>(
    dq: &CubeTensor<R>,
    dk: &CubeTensor<R>,
    dv: &CubeTensor<R>,
    dvn: &CubeTensor<R>,
    dqkv: &CubeTensor<R>,
    dims: PsaDims,
    c_off: usize,
) {
    assert_tight("launch_unpack_qkv", &[dq, dk, dv, dvn, dqkv]);
    let c_total = slice_of(dvn, dims, c_off);
    let total = dqkv.meta.num_elements();
    assert_eq!(total, dims.batch * dims.heads * dims.c3() * dims.tokens, "launch_unpack_qkv: dqkv size");
    let (count, dim) = grid(dqkv, total);
    // SAFETY: `i < total` = dqkv's element count; the source indices are bounded by the checked shapes.
    unsafe {
        psa_unpack_qkv_kernel::launch_unchecked::<R>(
            &dqkv.client,
            count,
            dim,
            dq.clone().into_tensor_arg(),
            dk.clone().into_tensor_arg(),
            dv.clone().into_tensor_arg(),
            dvn.clone().into_tensor_arg(),
            dqkv.clone().into_tensor_arg(),
            u(total),
            u(dims.tokens),
            u(dims.key_dim),
            u(dims.head_dim),
            u(dims.heads),
            u(c_total),
            u(c_off),
            dqkv.dtype.into(),
        )
    }
}

/// One representative specialisation of each kernel (f32 storage) for the source snapshots of
/// [`crate::snapshot`] (defined, never launched).
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, R, S, T};
    vec![
        kernel_def!(
            "psa_pack_qkv_f32",
            psa_pack_qkv_kernel::PsaPackQkvKernel<R>,
            units = UNITS,
            [T, T, T, T, S, S, S, S, F32]
        ),
        kernel_def!(
            "psa_extract_v_f32",
            psa_extract_v_kernel::PsaExtractVKernel<R>,
            units = UNITS,
            [T, T, S, S, S, S, S, S, S, F32]
        ),
        kernel_def!(
            "psa_merge_attn_f32",
            psa_merge_attn_kernel::PsaMergeAttnKernel<R>,
            units = UNITS,
            [T, T, S, S, S, S, S, S, F32]
        ),
        kernel_def!(
            "psa_split_attn_f32",
            psa_split_attn_kernel::PsaSplitAttnKernel<R>,
            units = UNITS,
            [T, T, S, S, S, S, S, S, F32]
        ),
        kernel_def!(
            "psa_unpack_qkv_f32",
            psa_unpack_qkv_kernel::PsaUnpackQkvKernel<R>,
            units = UNITS,
            [T, T, T, T, T, S, S, S, S, S, S, S, F32]
        ),
    ]
}
