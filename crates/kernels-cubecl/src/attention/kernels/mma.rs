//! Register-level tensor-core building blocks shared by the `*_mma` FA2 kernels (CUDA `mma.sync
//! m16n8k16` with f16/bf16 operands and f32 accumulators, `ldmatrix` loads from shared memory).
//!
//! # Register layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"; `g = lane / 4`, `t = lane % 4`)
//!
//! Every fragment is an `Array` of 32-bit registers: [`R2`] (two 16-bit values) for the A/B operands,
//! [`A2`] (two f32) for the accumulator.
//!
//! ```text
//! A (16×16, m×k):  a[0] = (g,   2t..2t+1)   a[1] = (g+8, 2t..)   a[2] = (g, 8+2t..)   a[3] = (g+8, 8+2t..)
//! B (16×8,  k×n):  b[0] = (2t..2t+1, g)     b[1] = (8+2t.., g)
//! C (16×8,  m×n):  c[0] = (g, 2t..2t+1)     c[1] = (g+8, 2t..2t+1)
//! ```
//!
//! An accumulator covering 16 rows × `8·n` columns is an `Array<A2>` of `2n` registers, n-tile `j` at
//! `[2j, 2j+1]`. Two consecutive n-tiles of such an accumulator (`[4c .. 4c+4]`) are, register for
//! register, the A fragment of the 16×16 block of columns `16c .. 16c+16` — the FA2 trick that feeds
//! `P = softmax(S)` straight from the `S` accumulator into `P·V` without shared memory.
//!
//! The kernels are compiled with `fast_math = ReducedPrecision | NotNaN | NotInf`: f32 `exp`/`ln` become
//! the hardware approximations (`__expf`, `__logf`; a few ulp, and exactly 0 for the −10³⁰ of masked
//! scores). Every value is finite by construction (finite running-max start, finite mask value).
//!
//! # Shared memory
//!
//! Tiles are staged row-major in 16-byte chunks ([`V8`]), each row padded by one chunk (`stride = D/8 + 1`
//! chunks): the eight row addresses of one `ldmatrix` phase then fall into eight different bank groups.
//! `ldmatrix.x4` ([`ldsm_x4`]) loads a 16×16 block as four 8×8 matrices; lane `l` gives the address of row
//! `l % 8` of matrix `l / 8`.
use cubecl::cmma::MmaDefinition;
use cubecl::ir::MatrixIdent;
use cubecl::prelude::*;

use burn_cubecl::{tensor::CubeTensor, CubeRuntime};

/// 16 bytes: eight 16-bit values, the unit of global loads and of `ldmatrix` row addresses.
pub type V8<F> = Vector<F, Const<8>>;
/// One 32-bit operand register: two 16-bit values.
pub type R2<F> = Vector<F, Const<2>>;
/// Two f32 accumulator values (one row, two adjacent columns).
pub type A2 = Vector<f32, Const<2>>;

/// Units per plane the kernels are written for (CUDA warps).
pub const PLANE: usize = 32;

/// Loads the 16×16 block at `(row0, chunk0)` (chunk = 8 columns) of a padded row-major tile with
/// `stride` chunks per row as four 8×8 matrices.
///
/// * `a_order = true`: matrix `m` is rows `8·(m%2)`, columns `8·(m/2)`. Without `trans` this is the A
///   fragment of the block; with `trans` (a `[k][n]` tile) it is the B fragments of n-tiles 0 and 1
///   (`[b0, b1]` of columns 0–7, then of 8–15).
/// * `a_order = false`: matrix `m` is rows `8·(m/2)`, columns `8·(m%2)`; without `trans`, on an `[n][k]`
///   tile, the B fragments of n-tiles 0 and 1 (rows 0–7, then 8–15).
#[cube]
pub fn ldsm_x4<F: Float>(
    tile: &SharedMemory<V8<F>>,
    row0: usize,
    chunk0: usize,
    #[comptime] stride: usize,
    #[comptime] a_order: bool,
    #[comptime] trans: bool,
) -> Array<R2<F>> {
    let lane = UNIT_POS_PLANE as usize;
    let m = lane / 8usize;
    let r = lane % 8usize;
    let mut dr = 8usize * (m / 2usize);
    let mut dc = m % 2usize;
    if a_order {
        dr = 8usize * (m % 2usize);
        dc = m / 2usize;
    }
    let at = (row0 + r + dr) * stride + chunk0 + dc;
    let def = MmaDefinition::<F, F, f32>::new(16usize, 8usize, 16usize);
    def.load_matrix::<V8<F>, Const<2>>(&tile.slice(at, at + 1usize), MatrixIdent::A, 4usize, trans)
}

/// The four registers `src[at .. at + 4]` as an A fragment.
#[cube]
pub fn take4<F: Float>(src: &Array<R2<F>>, #[comptime] at: usize) -> Array<R2<F>> {
    let mut out = Array::<R2<F>>::new(4usize);
    #[unroll]
    for i in 0..4usize {
        out[i] = src[at + i];
    }
    out
}

/// `acc[4c .. 4c+4]` (two n-tiles of an f32 accumulator) rounded to the operand dtype: the A fragment of
/// that 16×16 block (see the module doc).
#[cube]
pub fn acc_as_a<F: Float>(acc: &Array<A2>, #[comptime] c: usize) -> Array<R2<F>> {
    let mut out = Array::<R2<F>>::new(4usize);
    #[unroll]
    for i in 0..4usize {
        out[i] = R2::<F>::cast_from(acc[4 * c + i]);
    }
    out
}

/// `acc[c_at], acc[c_at+1] += A · B` with B = `b4[b_at], b4[b_at+1]` (one `mma.m16n8k16`).
#[cube]
pub fn mma_into<F: Float>(
    a: &Array<R2<F>>,
    b4: &Array<R2<F>>,
    #[comptime] b_at: usize,
    acc: &mut Array<A2>,
    #[comptime] c_at: usize,
) {
    let b_hi = comptime!(b_at + 1);
    let c_hi = comptime!(c_at + 1);
    let mut b = Array::<R2<F>>::new(2usize);
    b[0] = b4[b_at];
    b[1] = b4[b_hi];
    let mut c = Array::<A2>::new(2usize);
    c[0usize] = acc[c_at];
    c[1usize] = acc[c_hi];
    let def = MmaDefinition::<F, F, f32>::new(16usize, 8usize, 16usize);
    def.execute_inplace(a, &b, &mut c);
    acc[c_at] = c[0usize];
    acc[c_hi] = c[1usize];
}

/// An f32 accumulator of `len` registers, zeroed.
#[cube]
pub fn zero_acc(#[comptime] len: usize) -> Array<A2> {
    let mut acc = Array::<A2>::new(len);
    #[unroll]
    for i in 0..len {
        acc[i] = A2::new(0.0);
    }
    acc
}

/// Copies `rows` rows of `chunks` 16-byte chunks from `src[base ..]` (tight rows) into the padded tile
/// `dst` (`chunks + 1` per row); rows at or past `valid` are zero-filled.
#[cube]
pub fn load_tile<F: Float>(
    src: &Tensor<V8<F>>,
    dst: &mut SharedMemory<V8<F>>,
    base: usize,
    valid: usize,
    #[comptime] rows: usize,
    #[comptime] chunks: usize,
    #[comptime] units: usize,
) {
    let mut idx = UNIT_POS as usize;
    while idx < rows * chunks {
        let r = idx / chunks;
        let mut x = V8::<F>::new(F::new(0.0));
        if r < valid {
            x = src[base + idx];
        }
        dst[idx + r] = x;
        idx += units;
    }
}

/// Global half of a tile copy: the calling unit's chunks of a `rows × chunks` tile at `src[base ..]`
/// (unit `u` takes chunks `u, u + units, …`) into registers; with [`store_tile`] this lets a kernel fetch
/// the next tile while it computes on the current one. No zero fill: rows past `valid` (≥ 1) re-read row
/// `valid − 1`, so every load is an unconditional 16-byte load (a zero-filled select of 8-lane vectors
/// compiles to per-lane byte permutes; [`load_tile`] zero-fills, for tiles that need it). For tiles whose rows past `valid` are masked out downstream (the forward's
/// keys past `Nk`: their scores are masked, so `P = 0` multiplies the repeated V rows).
#[allow(clippy::if_same_then_else)] // the first test is comptime: no runtime bound check when units divide the tile
#[cube]
pub fn fetch_tile_clamped<F: Float>(
    src: &Tensor<V8<F>>,
    base: usize,
    valid: usize,
    #[comptime] rows: usize,
    #[comptime] chunks: usize,
    #[comptime] units: usize,
) -> Array<V8<F>> {
    let per = comptime!((rows * chunks).div_ceil(units));
    let total = comptime!(rows * chunks);
    let mut regs = Array::<V8<F>>::new(per);
    let u = UNIT_POS as usize;
    let last = valid - 1;
    #[unroll]
    for i in 0..per {
        let idx = u + i * units;
        let row = min(idx / chunks, last);
        let at = base + row * chunks + idx % chunks;
        if comptime!(total % units == 0) {
            regs[i] = src[at];
        } else if idx < total {
            regs[i] = src[at];
        }
    }
    regs
}

/// Shared half of a tile copy: stores [`fetch_tile_clamped`]'s registers at rows `row0 ..` of the padded tile
/// `dst` (`chunks + 1` per row).
#[cube]
pub fn store_tile<F: Float>(
    regs: &Array<V8<F>>,
    dst: &mut SharedMemory<V8<F>>,
    row0: usize,
    #[comptime] rows: usize,
    #[comptime] chunks: usize,
    #[comptime] units: usize,
) {
    let per = comptime!((rows * chunks).div_ceil(units));
    let total = comptime!(rows * chunks);
    let stride = comptime!(chunks + 1);
    let u = UNIT_POS as usize;
    #[unroll]
    for i in 0..per {
        let idx = u + i * units;
        if idx < total {
            dst[row0 * stride + idx + idx / chunks] = regs[i];
        }
    }
}

/// The A fragments of a plane's 16 rows (`16·plane ..`) of a padded tile with `d` columns, every 16-column
/// block: `d/4` registers, block `kf` at `[4kf .. 4kf+4]` (see [`take4`]).
#[cube]
pub fn plane_a_frags<F: Float>(tile: &SharedMemory<V8<F>>, plane: usize, #[comptime] d: usize) -> Array<R2<F>> {
    let stride = comptime!(d / 8 + 1);
    let mut out = Array::<R2<F>>::new(d / 4);
    #[unroll]
    for kf in 0..d / 16 {
        let f = ldsm_x4::<F>(tile, plane * 16usize, 2usize * kf, stride, true, false);
        #[unroll]
        for i in 0..4usize {
            out[4 * kf + i] = f[i];
        }
    }
    out
}

/// Writes a plane's 16 × `d` accumulator to rows `r0` (its row `g`) and `r1` (row `g + 8`) of the
/// `[.., n, d]` tensor `out` at batch-head `bh`, multiplied by `s0` / `s1` when `scaled`; rows ≥ `n` are
/// skipped. Lane `(g, t)` writes columns `8·j + 2t, +1` of each n-tile `j`.
#[allow(clippy::too_many_arguments, clippy::assign_op_pattern)] // `x = x * s`: the form the snapshot was checked in
#[cube]
pub fn store_acc_rows<F: Float>(
    out: &mut Tensor<R2<F>>,
    acc: &Array<A2>,
    bh: usize,
    n: usize,
    r0: usize,
    r1: usize,
    t: usize,
    s0: A2,
    s1: A2,
    #[comptime] scaled: bool,
    #[comptime] d: usize,
) {
    #[unroll]
    for nd in 0..d / 8 {
        if r0 < n {
            let mut x = acc[2 * nd];
            if scaled {
                x = x * s0;
            }
            out[((bh * n + r0) * d) / 2 + nd * 4 + t] = R2::<F>::cast_from(x);
        }
        if r1 < n {
            let mut x = acc[2 * nd + 1];
            if scaled {
                x = x * s1;
            }
            out[((bh * n + r1) * d) / 2 + nd * 4 + t] = R2::<F>::cast_from(x);
        }
    }
}

/// Row max / sum over the four lanes of a quad (the lanes holding one accumulator row).
#[cube]
pub fn quad_max(x: f32) -> f32 {
    let x = max(x, plane_shuffle_xor(x, 1));
    max(x, plane_shuffle_xor(x, 2))
}

/// See [`quad_max`].
#[cube]
pub fn quad_sum(x: f32) -> f32 {
    let x = x + plane_shuffle_xor(x, 1);
    x + plane_shuffle_xor(x, 2)
}

/// Whether the `*_mma` kernels run for `q` (f16/bf16) with head dims `dk`, `dv` on its device: multiples
/// of 16 up to 128, 32-unit planes, `mma.m16n8k16` with f32 accumulation and `ldmatrix` for the dtype
/// (CUDA sm_80 and newer).
pub fn mma_supported<R: CubeRuntime>(q: &CubeTensor<R>, dk: usize, dv: usize) -> bool {
    use burn::tensor::DType;
    use cubecl::ir::{features::MmaConfig, ElemType, FloatKind, StorageType};
    let kind = match q.dtype {
        DType::F16 => FloatKind::F16,
        DType::BF16 => FloatKind::BF16,
        _ => return false,
    };
    let dim_ok = |d: usize| d > 0 && d <= 128 && d.is_multiple_of(16);
    if !dim_ok(dk) || !dim_ok(dv) {
        return false;
    }
    let props = q.client.properties();
    if props.hardware.plane_size_min != PLANE as u32 || props.hardware.plane_size_max != PLANE as u32 {
        return false;
    }
    let storage: StorageType = ElemType::Float(kind).into();
    let config = MmaConfig {
        a_type: storage,
        b_type: storage,
        cd_type: ElemType::Float(FloatKind::F32).into(),
        m: 16,
        n: 8,
        k: 16,
    };
    props.features.matmul.mma.contains(&config) && props.features.matmul.ldmatrix.contains(&storage)
}

/// Bytes of a padded tile of `rows` rows of `d` 16-bit values.
pub fn tile_bytes(rows: usize, d: usize) -> usize {
    rows * (d / 8 + 1) * 16
}
