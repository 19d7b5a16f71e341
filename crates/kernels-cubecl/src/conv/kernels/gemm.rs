//! Implicit-GEMM convolution on plain units (no tensor cores): exact f32 products and f32 accumulation whatever
//! the storage dtype. One kernel, three passes (comptime `pass`), all tensors NHWC and tight:
//!
//! | pass | GEMM `C[m, n] = Σ_k A[m, k] · B[k, n]` | `M` | `N` | `K` (reduced) |
//! |---|---|---|---|---|
//! | [`FWD`] | `y[b,oh,ow, g·Cog+n] = act(Σ x[b, oh·s+kh·d−p, ow·s+kw·d−p, g·Cig+ci] · w[g·Cog+n, kh, kw, ci] + bias)` | `B·OH·OW` | `Cog` | `KH·KW·Cig` |
//! | [`DGRAD`] | `dx[b,ih,iw, g·Cig+n] = Σ dy[b, (ih+p−kh·d)/s, …, g·Cog+co] · w[g·Cog+co, kh, kw, n]` (terms whose division is inexact or out of range are 0) | `B·H·W` | `Cig` | `KH·KW·Cog` |
//! | [`WGRAD`] | `dw[g·Cog+m, kh, kw, n] = Σ_pixels dy[pix, g·Cog+m] · x[b, oh·s+kh·d−p, …, g·Cig+ci]`, split over the pixels | `Cog` | `KH·KW·Cig` | `B·OH·OW` |
//!
//! `x: [B, H, W, Ci]`, `w: [Co, KH, KW, Cig]` (`Cig = Ci/groups`, `Cog = Co/groups`), `dy`/`y: [B, OH, OW, Co]`.
//!
//! # Work split
//!
//! A cube of `UM·UN` units computes a `BM × BN` tile (`BM = UM·TM`, `BN = UN·TN`) of one group's GEMM; unit
//! `(tx, ty)` owns rows `ty + i·UM` and columns `tx + j·UN` (strided, so neighbouring units read neighbouring
//! shared-memory words: no bank conflicts, and the output writes are coalesced along `n`, the NHWC channel). The
//! reduction runs `BK` at a time: the cube stages `A[BM, BK]` and `B[BK, BN]` in shared memory (each element
//! gathered by its own index arithmetic — the implicit im2col; out-of-image taps read 0), then each unit does
//! `BK·TM·TN` FMAs from registers. Tiles are numbered `m`-fastest over `(CUBE_POS_X, CUBE_POS_Y)` (a grid
//! dimension holds at most 65535 cubes); a surplus cube of the last row repeats the last tile (same values).
//! `CUBE_POS_Z = split · groups + g`. [`WGRAD`] splits the pixels into `CUBE_COUNT_Z / groups` chunks of
//! `k_chunk` and writes f32 partial sums `[splits, Co, KH·KW·Cig]` that the caller sums (split-K: its `M×N`
//! is tiny and its `K` huge, e.g. the stem: 16 × 27 outputs, 6.5 M pixels at batch 64).
use cubecl::prelude::*;

/// Forward pass (`y`).
pub const FWD: u32 = 0;
/// Input gradient (`dx`).
pub const DGRAD: u32 = 1;
/// Weight gradient (`dw` partial sums).
pub const WGRAD: u32 = 2;

/// No activation.
pub const ACT_NONE: u32 = 0;
/// SiLU `v·σ(v)` after the bias.
pub const ACT_SILU: u32 = 1;

/// The geometry of one convolution, as kernel scalars (all `u32`).
#[derive(CubeType, CubeLaunch, Clone, Copy, Debug)]
pub struct Geo {
    /// Batch.
    pub b: u32,
    /// Input height and width.
    pub h: u32,
    /// Input width.
    pub w: u32,
    /// Input channels (all groups).
    pub ci: u32,
    /// Output height.
    pub oh: u32,
    /// Output width.
    pub ow: u32,
    /// Output channels (all groups).
    pub co: u32,
    /// Kernel height.
    pub kh: u32,
    /// Kernel width.
    pub kw: u32,
    /// Stride (rows).
    pub sh: u32,
    /// Stride (columns).
    pub sw: u32,
    /// Padding (rows).
    pub ph: u32,
    /// Padding (columns).
    pub pw: u32,
    /// Dilation (rows).
    pub dh: u32,
    /// Dilation (columns).
    pub dw: u32,
    /// Groups.
    pub groups: u32,
}

/// `B[k, n]` of the pass.
#[cube]
fn fetch_b<F: Float>(b: &Tensor<F>, geo: &Geo, g: u32, k: u32, n: u32, #[comptime] pass: u32) -> f32 {
    let cig = geo.ci / geo.groups;
    let cog = geo.co / geo.groups;
    let mut v = f32::new(0.0);
    if pass == FWD {
        // w[g·Cog + n, k]
        let kk = geo.kh * geo.kw * cig;
        v = f32::cast_from(b[((g * cog + n) * kk + k) as usize]);
    } else if pass == DGRAD {
        // k = (kh, kw, co): w[g·Cog + co, kh, kw, n]
        let c = k % cog;
        let r = k / cog;
        v = f32::cast_from(b[(((g * cog + c) * geo.kh * geo.kw + r) * cig + n) as usize]);
    } else {
        // k = pixel (b, oh, ow), n = (kh, kw, ci): x
        let ow = k % geo.ow;
        let t = k / geo.ow;
        let oh = t % geo.oh;
        let bb = t / geo.oh;
        let c = n % cig;
        let r = n / cig;
        let kw = r % geo.kw;
        let kh = r / geo.kw;
        let ih = (oh * geo.sh + kh * geo.dh) as i32 - geo.ph as i32;
        let iw = (ow * geo.sw + kw * geo.dw) as i32 - geo.pw as i32;
        if ih >= 0 && iw >= 0 && ih < geo.h as i32 && iw < geo.w as i32 {
            let idx = ((bb * geo.h + ih as u32) * geo.w + iw as u32) * geo.ci + g * cig + c;
            v = f32::cast_from(b[idx as usize]);
        }
    }
    v
}

/// The implicit-GEMM convolution (see the module docs). `a`, `b`: the pass's operands (`x, w` / `dy, w` /
/// `dy, x`); `bias [Co]` (read when `has_bias`, forward only); `out`: `y` / `dx` / f32 partials.
/// `m_tiles`, `n_tiles`: tiles of one group's GEMM; `k_chunk`: pixels per split ([`WGRAD`]).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn conv_gemm_kernel<F: Float, O: Float>(
    a: &Tensor<F>,
    b: &Tensor<F>,
    bias: &Tensor<F>,
    out: &mut Tensor<O>,
    geo: Geo,
    m_tiles: u32,
    n_tiles: u32,
    k_chunk: u32,
    #[comptime] pass: u32,
    #[comptime] um: u32,
    #[comptime] un: u32,
    #[comptime] tm: u32,
    #[comptime] tn: u32,
    #[comptime] bk: u32,
    #[comptime] has_bias: bool,
    #[comptime] act: u32,
    #[define(F, O)] _dtypes: [StorageType; 2],
) {
    let units = comptime!(um * un);
    let bm = comptime!(um * tm);
    let bn = comptime!(un * tn);
    // A is staged k-major ([BK][BM + 1]: the +1 keeps the k-fastest stores free of bank conflicts).
    let a_stride = comptime!(bm + 1);
    let tid = UNIT_POS_X;
    let tx = tid % un;
    let ty = tid / un;

    let cig = geo.ci / geo.groups;
    let cog = geo.co / geo.groups;
    let kk = geo.kh * geo.kw;
    let mut m_len = geo.co / geo.groups;
    let mut n_len = kk * cig;
    let mut k_len = geo.b * geo.oh * geo.ow;
    if pass == FWD {
        m_len = geo.b * geo.oh * geo.ow;
        n_len = cog;
        k_len = kk * cig;
    } else if pass == DGRAD {
        m_len = geo.b * geo.h * geo.w;
        n_len = cig;
        k_len = kk * cog;
    }

    let tile = min(CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X, m_tiles * n_tiles - 1);
    let m0 = (tile % m_tiles) * bm;
    let n0 = (tile / m_tiles) * bn;
    let g = CUBE_POS_Z % geo.groups;
    let split = CUBE_POS_Z / geo.groups;
    let mut k_begin = 0u32;
    let mut k_end = k_len;
    if pass == WGRAD {
        k_begin = split * k_chunk;
        k_end = min(k_len, k_begin + k_chunk);
    }

    let mut acc = Array::<f32>::new(comptime!((tm * tn) as usize));
    #[unroll]
    for i in 0..tm * tn {
        acc[i as usize] = f32::new(0.0);
    }
    let mut a_frag = Array::<f32>::new(comptime!(tm as usize));
    let mut b_frag = Array::<f32>::new(comptime!(tn as usize));
    let mut a_s = SharedMemory::<f32>::new(comptime!((bk * a_stride) as usize));
    let mut b_s = SharedMemory::<f32>::new(comptime!((bk * bn) as usize));

    // The unit's A slots (forward and input gradient: k fastest across units, so every slot of the unit has the
    // same k column `tid % BK` and rows `l·(units/BK) + tid/BK`): each row's pixel is decomposed once per tile
    // (`pix`: image offset, `r0`, `c0`: the tap-(0, 0) coordinates), not at every k step.
    let slots_a = comptime!((bm * bk) / units);
    let rows_per_slot = comptime!(units / bk);
    let kq_a = tid % bk;
    let mut pix = Array::<u32>::new(comptime!(slots_a as usize));
    let mut r0 = Array::<i32>::new(comptime!(slots_a as usize));
    let mut c0 = Array::<i32>::new(comptime!(slots_a as usize));
    if pass != WGRAD {
        #[unroll]
        for l in 0..slots_a {
            let m = m0 + l * rows_per_slot + tid / bk;
            let mut p = u32::MAX.runtime();
            let mut rr = 0i32;
            let mut cc = 0i32;
            if m < m_len {
                if pass == FWD {
                    let ow = m % geo.ow;
                    let t = m / geo.ow;
                    let oh = t % geo.oh;
                    p = (t / geo.oh) * geo.h * geo.w;
                    rr = (oh * geo.sh) as i32 - geo.ph as i32;
                    cc = (ow * geo.sw) as i32 - geo.pw as i32;
                } else {
                    let iw = m % geo.w;
                    let t = m / geo.w;
                    let ih = t % geo.h;
                    p = (t / geo.h) * geo.oh * geo.ow;
                    rr = (ih + geo.ph) as i32;
                    cc = (iw + geo.pw) as i32;
                }
            }
            pix[l as usize] = p;
            r0[l as usize] = rr;
            c0[l as usize] = cc;
        }
    }

    let mut k0 = k_begin;
    while k0 < k_end {
        // ---- stage A[BM, BK] ----
        if pass == WGRAD {
            // A = dy, contiguous along m: m fastest across units
            #[unroll]
            for l in 0..slots_a {
                let e = l * units + tid;
                let mm = e % bm;
                let kq = e / bm;
                let m = m0 + mm;
                let k = k0 + kq;
                let mut v = f32::new(0.0);
                if m < m_len && k < k_end {
                    v = f32::cast_from(a[(k * geo.co + g * cog + m) as usize]);
                }
                a_s[(kq * a_stride + mm) as usize] = v;
            }
        } else {
            // the k column's tap and channel, once per step
            let k = k0 + kq_a;
            let mut c = k % cig;
            let mut r = k / cig;
            if pass == DGRAD {
                c = k % cog;
                r = k / cog;
            }
            let kw = r % geo.kw;
            let kh = r / geo.kw;
            #[unroll]
            for l in 0..slots_a {
                let mm = l * rows_per_slot + tid / bk;
                let p = pix[l as usize];
                let mut v = f32::new(0.0);
                if p != u32::MAX && k < k_end {
                    if pass == FWD {
                        let ih = r0[l as usize] + (kh * geo.dh) as i32;
                        let iw = c0[l as usize] + (kw * geo.dw) as i32;
                        if ih >= 0 && iw >= 0 && ih < geo.h as i32 && iw < geo.w as i32 {
                            let idx = (p + ih as u32 * geo.w + iw as u32) * geo.ci + g * cig + c;
                            v = f32::cast_from(a[idx as usize]);
                        }
                    } else {
                        let th = r0[l as usize] - (kh * geo.dh) as i32;
                        let tw = c0[l as usize] - (kw * geo.dw) as i32;
                        if th >= 0 && tw >= 0 {
                            let oh = th as u32 / geo.sh;
                            let ow = tw as u32 / geo.sw;
                            if oh * geo.sh == th as u32 && ow * geo.sw == tw as u32 && oh < geo.oh && ow < geo.ow {
                                let idx = (p + oh * geo.ow + ow) * geo.co + g * cog + c;
                                v = f32::cast_from(a[idx as usize]);
                            }
                        }
                    }
                }
                a_s[(kq_a * a_stride + mm) as usize] = v;
            }
        }
        // ---- stage B[BK, BN]: n fastest (dgrad: w's input channel; wgrad: x's channel), forward: k fastest ----
        #[unroll]
        for l in 0..comptime!((bn * bk).div_ceil(units)) {
            let e = l * units + tid;
            if e < bn * bk {
                let mut nn = e % bn;
                let mut kq = e / bn;
                if pass == FWD {
                    nn = e / bk;
                    kq = e % bk;
                }
                let n = n0 + nn;
                let k = k0 + kq;
                let mut v = f32::new(0.0);
                if n < n_len && k < k_end {
                    v = fetch_b::<F>(b, &geo, g, k, n, pass);
                }
                b_s[(kq * bn + nn) as usize] = v;
            }
        }
        sync_cube();

        // ---- BK rank-1 updates from registers ----
        #[unroll]
        for kq in 0..bk {
            #[unroll]
            for i in 0..tm {
                a_frag[i as usize] = a_s[(kq * a_stride + ty + i * um) as usize];
            }
            #[unroll]
            for j in 0..tn {
                b_frag[j as usize] = b_s[(kq * bn + tx + j * un) as usize];
            }
            #[unroll]
            for i in 0..tm {
                #[unroll]
                for j in 0..tn {
                    acc[(i * tn + j) as usize] += a_frag[i as usize] * b_frag[j as usize];
                }
            }
        }
        sync_cube();
        k0 += bk;
    }

    // ---- epilogue ----
    #[unroll]
    for i in 0..tm {
        let m = m0 + ty + i * um;
        if m < m_len {
            #[unroll]
            for j in 0..tn {
                let n = n0 + tx + j * un;
                if n < n_len {
                    let mut v = acc[(i * tn + j) as usize];
                    if pass == FWD {
                        if has_bias {
                            v += f32::cast_from(bias[(g * cog + n) as usize]);
                        }
                        if act == ACT_SILU {
                            v = v / (f32::new(1.0) + (-v).exp());
                        }
                        out[(m * geo.co + g * cog + n) as usize] = O::cast_from(v);
                    } else if pass == DGRAD {
                        out[(m * geo.ci + g * cig + n) as usize] = O::cast_from(v);
                    } else {
                        out[((split * geo.co + g * cog + m) * n_len + n) as usize] = O::cast_from(v);
                    }
                }
            }
        }
    }
}
