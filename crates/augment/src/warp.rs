//! `cv2.warpAffine` / `cv2.warpPerspective` with `INTER_LINEAR` and a constant border on 8-bit 3-channel images.
//!
//! OpenCV 5.x (opencv-python 5.1.0, what ultralytics 8.4.190 runs on here) no longer uses the old fixed-point
//! `INTER_BITS=5` / `INTER_REMAP_COEF_BITS=15` remap for these calls but the float kernels of `warp_kernels.simd.hpp`
//! (`warpAffineLinearInvoker_8UC3`, `warpPerspectiveLinearInvoker_8UC3`). Matched empirically against cv2 (see the
//! tests): per destination pixel `(x, y)`
//!
//! * the matrix is inverted in f64 (`warpAffine`: OpenCV's closed 2x3 inverse; `warpPerspective`: `cv::invert` of the
//!   3x3, adjugate / determinant);
//! * the source point is computed in f64 and rounded to f32: `sx = (float)((M0 * x + M1 * y) + M2)` (perspective:
//!   `X * (1 / W)` in f64 first, with `X = M0 * x + (M1 * y + M2)`);
//! * `ix = floor(sx)`, `ax = sx - ix` in f32 (same for y);
//! * taps outside the source take the border value; a pixel whose four taps are all outside is the border value;
//! * `v0 = fma(ax, p01 - p00, p00)`, `v1 = fma(ax, p11 - p10, p10)`, `v = fma(ay, v1 - v0, v0)` in f32;
//! * `dst = saturate_cast<uchar>(v)`: round half to even, clamp to `[0, 255]`.
//!
//! Measured against cv2 on the committed fixtures: `warpPerspective` bit-exact; `warpAffine` bit-exact on 2 of 3
//! cases and 1 level off on 1 byte of 20736 in the third (about 5e-5 of the bytes on random matrices). The residual is
//! a last-ulp difference in OpenCV's float arithmetic that none of the tried evaluation orders reproduces.
//!
//! An affine inverse without off-diagonal terms (no rotation / shear: ultralytics' defaults `degrees=0, shear=0`)
//! takes a separable path with the same bytes: source x depends only on the destination x and source y only on the
//! destination y, so the taps and weights are computed once per column and per row (by the same expressions), `v0`
//! / `v1` once per (source row, destination column) and only `v` per pixel; rows and columns that map outside the
//! source are the border value without interpolation.

use image::RgbImage;

use crate::sample::check_image;
use crate::AugmentError;

/// `cv2.warpAffine(img, M, dsize=(out_w, out_h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
/// borderValue=(border,) * 3)` on an 8-bit RGB image (the channel order does not matter).
///
/// `m` is the forward 2x3 matrix (destination = `m · [x, y, 1]`), as ultralytics passes `M[:2]` (float32 there:
/// convert with `as f64`, which is what cv2 does). Matches opencv-python 5.1.0 up to 1 level on ~5e-5 of the bytes.
/// Errors on an empty image or output, a non-finite or singular matrix.
pub fn warp_affine(
    img: &RgbImage,
    m: [[f64; 3]; 2],
    out_w: u32,
    out_h: u32,
    border: u8,
) -> Result<RgbImage, AugmentError> {
    check_image("warp_affine input", img)?;
    let inv = checked_affine_inverse(m, out_w, out_h)?;
    Ok(run(img, &Inverse::Affine(inv), out_w, out_h, border))
}

/// [`warp_affine`]'s checks of the output size and the matrix, and the matrix's inverse.
fn checked_affine_inverse(m: [[f64; 3]; 2], out_w: u32, out_h: u32) -> Result<[f64; 6], AugmentError> {
    check_out(out_w, out_h)?;
    if m.iter().flatten().any(|v| !v.is_finite()) {
        return Err(AugmentError::InvalidArgument(format!("warp_affine: non-finite matrix {m:?}")));
    }
    affine_inverse(m).ok_or_else(|| AugmentError::InvalidArgument(format!("warp_affine: singular matrix {m:?}")))
}

/// OpenCV's inverse of a 2x3 affine matrix (imgwarp.cpp, `warpAffine` without WARP_INVERSE_MAP); `None` when
/// singular.
fn affine_inverse(m: [[f64; 3]; 2]) -> Option<[f64; 6]> {
    let [[a, b, c], [d, e, f]] = m;
    let det = a * e - b * d;
    if det == 0.0 {
        return None;
    }
    let dinv = 1.0 / det;
    let (i0, i1, i3, i4) = (e * dinv, -b * dinv, -d * dinv, a * dinv);
    let i2 = -i0 * c - i1 * f;
    let i5 = -i3 * c - i4 * f;
    Some([i0, i1, i2, i3, i4, i5])
}

/// `cv2.warpPerspective(img, M, dsize=(out_w, out_h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
/// borderValue=(border,) * 3)` on an 8-bit RGB image; `m` is the forward 3x3 homography.
///
/// Same interpolation as [`warp_affine`]; the inverse is `cv::invert`'s 3x3 closed form, the source point is
/// `(X / W, Y / W)` in f64 rounded to f32 (`W == 0` maps to 0, as OpenCV's kernels do).
pub fn warp_perspective(
    img: &RgbImage,
    m: [[f64; 3]; 3],
    out_w: u32,
    out_h: u32,
    border: u8,
) -> Result<RgbImage, AugmentError> {
    check_image("warp_perspective input", img)?;
    check_out(out_w, out_h)?;
    if m.iter().flatten().any(|v| !v.is_finite()) {
        return Err(AugmentError::InvalidArgument(format!("warp_perspective: non-finite matrix {m:?}")));
    }
    let s = |r: usize, c: usize| m[r][c];
    let det = s(0, 0) * (s(1, 1) * s(2, 2) - s(1, 2) * s(2, 1)) - s(0, 1) * (s(1, 0) * s(2, 2) - s(1, 2) * s(2, 0))
        + s(0, 2) * (s(1, 0) * s(2, 1) - s(1, 1) * s(2, 0));
    if det == 0.0 {
        return Err(AugmentError::InvalidArgument(format!("warp_perspective: singular matrix {m:?}")));
    }
    let d = 1.0 / det;
    let t = [
        (s(1, 1) * s(2, 2) - s(1, 2) * s(2, 1)) * d,
        (s(0, 2) * s(2, 1) - s(0, 1) * s(2, 2)) * d,
        (s(0, 1) * s(1, 2) - s(0, 2) * s(1, 1)) * d,
        (s(1, 2) * s(2, 0) - s(1, 0) * s(2, 2)) * d,
        (s(0, 0) * s(2, 2) - s(0, 2) * s(2, 0)) * d,
        (s(0, 2) * s(1, 0) - s(0, 0) * s(1, 2)) * d,
        (s(1, 0) * s(2, 1) - s(1, 1) * s(2, 0)) * d,
        (s(0, 1) * s(2, 0) - s(0, 0) * s(2, 1)) * d,
        (s(0, 0) * s(1, 1) - s(0, 1) * s(1, 0)) * d,
    ];
    Ok(run(img, &Inverse::Perspective(t), out_w, out_h, border))
}

/// An 8-bit RGB source image read one row at a time by the separable warp ([`warp_affine_rows`]): a drawn
/// [`RgbImage`], or a picture assembled on demand (the mosaic canvas, `crate::mosaic::MosaicCanvas`, never drawn).
pub trait RowSource {
    /// `(width, height)` in pixels.
    fn dims(&self) -> (usize, usize);
    /// Pixels `x0 .. x0 + out.len() / 3` of row `y` as f32 (`out` interleaved RGB, inside the image).
    fn row_f32(&self, y: usize, x0: usize, out: &mut [f32]);
}

impl RowSource for RgbImage {
    fn dims(&self) -> (usize, usize) {
        (self.width() as usize, self.height() as usize)
    }

    #[inline(always)]
    fn row_f32(&self, y: usize, x0: usize, out: &mut [f32]) {
        let o = (y * self.width() as usize + x0) * 3;
        let n = out.len();
        for (p, &v) in out.iter_mut().zip(&self.as_raw()[o..o + n]) {
            *p = v as f32;
        }
    }
}

/// [`warp_affine`] of a [`RowSource`] when the inverse map has no off-diagonal terms (the separable path, same
/// bytes); `Ok(None)` otherwise (the caller draws the source and calls [`warp_affine`]). Same errors as
/// [`warp_affine`].
pub fn warp_affine_rows<R: RowSource>(
    src: &R,
    m: [[f64; 3]; 2],
    out_w: u32,
    out_h: u32,
    border: u8,
) -> Result<Option<RgbImage>, AugmentError> {
    let (w, h) = src.dims();
    if w == 0 || h == 0 {
        return Err(AugmentError::EmptyImage { what: "warp_affine input", width: w as u32, height: h as u32 });
    }
    let inv = checked_affine_inverse(m, out_w, out_h)?;
    Ok((inv[1] == 0.0 && inv[3] == 0.0).then(|| axis_aligned(src, &inv, out_w, out_h, border)))
}

fn check_out(out_w: u32, out_h: u32) -> Result<(), AugmentError> {
    if out_w == 0 || out_h == 0 {
        return Err(AugmentError::InvalidArgument(format!("warp: empty output size {out_w}x{out_h}")));
    }
    Ok(())
}

/// The destination → source map.
enum Inverse {
    Affine([f64; 6]),
    Perspective([f64; 9]),
}

fn run(img: &RgbImage, inv: &Inverse, out_w: u32, out_h: u32, border: u8) -> RgbImage {
    match inv {
        // No rotation / shear (ultralytics' defaults): the separable fast path, same bytes.
        Inverse::Affine(m) if m[1] == 0.0 && m[3] == 0.0 => axis_aligned(img, m, out_w, out_h, border),
        _ => run_general(img, inv, out_w, out_h, border),
    }
}

/// The per-pixel path (any matrix).
fn run_general(img: &RgbImage, inv: &Inverse, out_w: u32, out_h: u32, border: u8) -> RgbImage {
    let (dw, dh) = (out_w as usize, out_h as usize);
    let mut out = vec![0u8; dw * dh * 3];
    let mut coords = vec![(0f32, 0f32); dw];
    for (y, row) in out.chunks_exact_mut(dw * 3).enumerate() {
        let yf = y as f64;
        match inv {
            Inverse::Affine(m) => {
                let (by0, by1) = (m[1] * yf, m[4] * yf);
                for (x, c) in coords.iter_mut().enumerate() {
                    let xf = x as f64;
                    *c = ((m[0] * xf + by0 + m[2]) as f32, (m[3] * xf + by1 + m[5]) as f32);
                }
            }
            Inverse::Perspective(m) => {
                let (bx, by, bw) = (m[1] * yf + m[2], m[4] * yf + m[5], m[7] * yf + m[8]);
                for (x, c) in coords.iter_mut().enumerate() {
                    let xf = x as f64;
                    let w = m[6] * xf + bw;
                    let w = if w != 0.0 { 1.0 / w } else { 0.0 };
                    *c = (((m[0] * xf + bx) * w) as f32, ((m[3] * xf + by) * w) as f32);
                }
            }
        }
        interp_row(img, &coords, row, border);
    }
    RgbImage::from_raw(out_w, out_h, out).expect("warp output buffer has out_w * out_h * 3 bytes")
}

/// Bilinear row kernel; the FMA-enabled copy is picked at run time (same bits, see `crate::fma`).
fn interp_row(img: &RgbImage, coords: &[(f32, f32)], row: &mut [u8], border: u8) {
    #[cfg(target_arch = "x86_64")]
    if crate::fma::has_fma() {
        // SAFETY: the CPU supports FMA and SSE4.1 (checked at run time just above).
        unsafe { interp_row_fma(img, coords, row, border) };
        return;
    }
    interp_row_generic(img, coords, row, border)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma,sse4.1")]
unsafe fn interp_row_fma(img: &RgbImage, coords: &[(f32, f32)], row: &mut [u8], border: u8) {
    interp_row_generic(img, coords, row, border)
}

#[inline(always)]
fn interp_row_generic(img: &RgbImage, coords: &[(f32, f32)], row: &mut [u8], border: u8) {
    let (sw, sh) = (img.width() as i64, img.height() as i64);
    let src = img.as_raw().as_slice();
    let stride = sw as usize * 3;
    let bv = border as f32;
    for (&(sx, sy), px) in coords.iter().zip(row.chunks_exact_mut(3)) {
        let (fx, fy) = (sx.floor(), sy.floor());
        // Far outside (or NaN): border. Keeps the i64 conversions below in range.
        if !(fx >= -2.0 && fy >= -2.0 && fx <= sw as f32 + 1.0 && fy <= sh as f32 + 1.0) {
            px.fill(border);
            continue;
        }
        let (ix, iy) = (fx as i64, fy as i64);
        let (ax, ay) = (sx - fx, sy - fy);
        let mut p = [[0f32; 3]; 4];
        if ix >= 0 && iy >= 0 && ix + 1 < sw && iy + 1 < sh {
            let o = iy as usize * stride + ix as usize * 3;
            for k in 0..3 {
                p[0][k] = src[o + k] as f32;
                p[1][k] = src[o + 3 + k] as f32;
                p[2][k] = src[o + stride + k] as f32;
                p[3][k] = src[o + stride + 3 + k] as f32;
            }
        } else if ix + 1 < 0 || iy + 1 < 0 || ix >= sw || iy >= sh {
            px.fill(border);
            continue;
        } else {
            for (t, (dy, dx)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
                let (x, y) = (ix + dx, iy + dy);
                if x >= 0 && y >= 0 && x < sw && y < sh {
                    let o = y as usize * stride + x as usize * 3;
                    for k in 0..3 {
                        p[t][k] = src[o + k] as f32;
                    }
                } else {
                    p[t] = [bv; 3];
                }
            }
        }
        for k in 0..3 {
            let v0 = ax.mul_add(p[1][k] - p[0][k], p[0][k]);
            let v1 = ax.mul_add(p[3][k] - p[2][k], p[2][k]);
            let v = ay.mul_add(v1 - v0, v0);
            px[k] = v.round_ties_even().clamp(0.0, 255.0) as u8;
        }
    }
}

/// One destination column (row) of an axis-aligned warp: the two taps as pixel indices into a source row (column)
/// padded with one border pixel on each side (`0` and `len + 1` are the border, source pixel `j` is `j + 1`), and
/// the weight `a = s - floor(s)` of the second tap. `pad` when both taps are border pixels.
#[derive(Clone, Copy)]
struct Tap {
    t0: usize,
    t1: usize,
    a: f32,
    pad: bool,
}

/// [`Tap`] of the f32 source coordinate `s` on an axis of `len` source pixels, with exactly the general path's
/// rules: `far` (and NaN) when `floor(s)` is not in `[-2, len + 1]`, otherwise taps `floor(s)` and `floor(s) + 1`,
/// each a border pixel when outside `[0, len)`.
fn tap(s: f32, len: usize) -> Tap {
    let f = s.floor();
    if !(f >= -2.0 && f <= len as f32 + 1.0) {
        return Tap { t0: 0, t1: 0, a: 0.0, pad: true };
    }
    let i = f as i64;
    let p = |j: i64| {
        if j < 0 {
            0
        } else if j >= len as i64 {
            len + 1
        } else {
            j as usize + 1
        }
    };
    let (t0, t1) = (p(i), p(i + 1));
    let pad = (t0 == 0 || t0 == len + 1) && (t1 == 0 || t1 == len + 1);
    Tap { t0, t1, a: s - f, pad }
}

/// `warp_affine` for an inverse map without off-diagonal terms (`i1 == i3 == 0`, any sign): the source x depends
/// only on the destination x, the source y only on the destination y. The coordinates are computed with the very
/// expressions of [`run_general`] (the `± 0` off-diagonal products included), so the taps and weights are the same
/// bits; the bilinear formula is split into its horizontal part `v0 = fma(ax, p01 - p00, p00)` per (source row,
/// destination column), cached for two source rows, and its vertical part `fma(ay, v1 - v0, v0)` per destination
/// row. A tap outside the source is the border value as in the general path (an all-border 2x2 gives exactly the
/// border value, which is also what the general path writes for pixels that map outside), and rows / columns
/// whose coordinate is far outside (or NaN) are the border value.
fn axis_aligned<R: RowSource>(img: &R, m: &[f64; 6], out_w: u32, out_h: u32, border: u8) -> RgbImage {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::fma::has_avx2_fma() {
            // SAFETY: the CPU supports AVX2, FMA and SSE4.1 (checked at run time just above).
            return unsafe { axis_aligned_avx2(img, m, out_w, out_h, border) };
        }
        if crate::fma::has_fma() {
            // SAFETY: the CPU supports FMA and SSE4.1 (checked at run time just above).
            return unsafe { axis_aligned_fma(img, m, out_w, out_h, border) };
        }
    }
    axis_aligned_generic(img, m, out_w, out_h, border)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,sse4.1")]
unsafe fn axis_aligned_avx2<R: RowSource>(img: &R, m: &[f64; 6], out_w: u32, out_h: u32, border: u8) -> RgbImage {
    axis_aligned_generic(img, m, out_w, out_h, border)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma,sse4.1")]
unsafe fn axis_aligned_fma<R: RowSource>(img: &R, m: &[f64; 6], out_w: u32, out_h: u32, border: u8) -> RgbImage {
    axis_aligned_generic(img, m, out_w, out_h, border)
}

#[inline(always)]
fn axis_aligned_generic<R: RowSource>(img: &R, m: &[f64; 6], out_w: u32, out_h: u32, border: u8) -> RgbImage {
    let (dw, dh) = (out_w as usize, out_h as usize);
    let (sw, sh) = img.dims();
    let bv = border as f32;
    // run_general: sx = (m0 * x + m1 * y) + m2, sy = (m3 * x + m4 * y) + m5; with m1, m3 = ±0 the products
    // m1 * y, m3 * x are a zero of the sign of m1, m3 for every x, y >= 0.
    let (by0, bx1) = (m[1] * 0.0, m[3] * 0.0);
    let cols: Vec<Tap> = (0..dw).map(|x| tap((m[0] * x as f64 + by0 + m[2]) as f32, sw)).collect();
    let rows: Vec<Tap> = (0..dh).map(|y| tap((bx1 + m[4] * y as f64 + m[5]) as f32, sh)).collect();
    let mut out = vec![border; dw * dh * 3];
    // Columns outside [x_lo, x_hi) have two border taps in every row: the border value.
    let (Some(x_lo), Some(x_last)) = (cols.iter().position(|c| !c.pad), cols.iter().rposition(|c| !c.pad)) else {
        return RgbImage::from_raw(out_w, out_h, out).expect("warp output buffer has out_w * out_h * 3 bytes");
    };
    let cols = &cols[x_lo..=x_last];
    assert!(cols.iter().all(|c| c.t0 <= sw + 1 && c.t1 <= sw + 1), "taps lie in the padded row");
    let (c0, c1) = (x_lo * 3, (x_last + 1) * 3);
    // One source row padded with a border pixel on each side; only the source pixels that some tap reads are
    // converted (source pixels `span.0 .. span.1`, padded indices `span.0 + 1 ..= span.1`).
    let mut padded = vec![bv; (sw + 2) * 3];
    let p_lo = cols.iter().map(|c| c.t0.min(c.t1)).min().unwrap_or(0);
    let p_hi = cols.iter().map(|c| c.t0.max(c.t1)).max().unwrap_or(0);
    let span = (p_lo.max(1) - 1, p_hi.min(sw));
    let n = c1 - c0;
    let mut bufs = [vec![0f32; n], vec![0f32; n]];
    let mut keys = [usize::MAX; 2];
    for (row, r) in out.chunks_exact_mut(dw * 3).zip(&rows) {
        if r.pad {
            continue; // already the border value
        }
        if keys[0] != r.t0 {
            if keys[1] == r.t0 {
                bufs.swap(0, 1);
                keys.swap(0, 1);
            } else {
                hrow(img, sh, span, r.t0, cols, &mut padded, &mut bufs[0], bv);
                keys[0] = r.t0;
            }
        }
        if keys[1] != r.t1 {
            if keys[0] == r.t1 {
                let (a, b) = bufs.split_at_mut(1);
                b[0].copy_from_slice(&a[0]);
            } else {
                hrow(img, sh, span, r.t1, cols, &mut padded, &mut bufs[1], bv);
            }
            keys[1] = r.t1;
        }
        let ay = r.a;
        for ((o, &v0), &v1) in row[c0..c1].iter_mut().zip(&bufs[0]).zip(&bufs[1]) {
            // `round_ties_even(v).clamp(0, 255) as u8` of the general path: clamping first changes nothing, and
            // adding 2^23 to a value in [0, 255] rounds it to an integer, ties to even, in the low mantissa bits.
            let v = ay.mul_add(v1 - v0, v0);
            *o = (v.clamp(0.0, 255.0) + 8_388_608.0).to_bits() as u8;
        }
    }
    RgbImage::from_raw(out_w, out_h, out).expect("warp output buffer has out_w * out_h * 3 bytes")
}

/// Horizontal pass of one source row for [`axis_aligned`]: `h[x] = fma(ax, p01 - p00, p00)` per destination column
/// of `cols`; `r` is a padded row number (`0` and `sh + 1` are border rows, all `bv`); source pixels
/// `span.0 .. span.1` of the row are read (the taps' range; the rest of `padded` is never read). A plain function,
/// not a closure, so that it is inlined into (and compiled with the target features of) its caller.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn hrow<R: RowSource>(
    src: &R,
    sh: usize,
    span: (usize, usize),
    r: usize,
    cols: &[Tap],
    padded: &mut [f32],
    h: &mut [f32],
    bv: f32,
) {
    if r == 0 || r == sh + 1 {
        h.fill(bv);
        return;
    }
    if span.0 < span.1 {
        src.row_f32(r - 1, span.0, &mut padded[(span.0 + 1) * 3..(span.1 + 1) * 3]);
    }
    let sw = src.dims().0;
    assert_eq!(padded.len(), (sw + 2) * 3);
    for (c, hv) in cols.iter().zip(h.chunks_exact_mut(3)) {
        let (o0, o1) = (c.t0 * 3, c.t1 * 3);
        for (k, hv) in hv.iter_mut().enumerate() {
            // SAFETY: t0, t1 <= sw + 1 (`tap` guarantees it, `axis_aligned_generic` asserts it), so
            // o + k < (sw + 2) * 3 = padded.len() (asserted above).
            let (a, b) = unsafe { (*padded.get_unchecked(o0 + k), *padded.get_unchecked(o1 + k)) };
            *hv = c.a.mul_add(b - a, a);
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn noise(w: u32, h: u32, rng: &mut ChaCha8Rng) -> RgbImage {
        RgbImage::from_fn(w, h, |_, _| image::Rgb(rng.random()))
    }

    /// The axis-aligned fast path gives the general path's bytes on random diagonal matrices: up/down-scaling,
    /// flips (negative scales), signed zeros off the diagonal, maps partly, fully and far outside the source.
    #[test]
    fn axis_aligned_equals_general() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for case in 0..400 {
            let (sw, sh) = (rng.random_range(1..90), rng.random_range(1..90));
            let img = noise(sw, sh, &mut rng);
            let (dw, dh) = (rng.random_range(1..80), rng.random_range(1..80));
            let mut scale = || {
                let s: f64 = rng.random_range(0.2..3.0);
                if rng.random_bool(0.15) {
                    -s
                } else {
                    s
                }
            };
            let (a, e) = (scale(), scale());
            let spread = if case % 10 == 0 { 400.0 } else { 60.0 };
            let (c, f) = (rng.random_range(-spread..spread), rng.random_range(-spread..spread));
            let (b, d) = ([0.0, -0.0][case % 2], [0.0, -0.0][(case / 2) % 2]);
            // also float32-rounded matrices, as ultralytics passes them
            let m = if case % 3 == 0 {
                [[a, b, c], [d, e, f]].map(|r| r.map(|v| v as f32 as f64))
            } else {
                [[a, b, c], [d, e, f]]
            };
            let border = rng.random();
            let inv = affine_inverse(m).unwrap();
            let fast = warp_affine(&img, m, dw, dh, border).unwrap();
            let general = run_general(&img, &Inverse::Affine(inv), dw, dh, border);
            assert_eq!(fast, general, "case {case}: {sw}x{sh} -> {dw}x{dh}, m {m:?}");
            if case % 8 == 0 {
                // the copy without target features (what non-x86 CPUs run)
                let plain = axis_aligned_generic(&img, &inv, dw, dh, border);
                assert_eq!(plain, general, "generic, case {case}");
            }
        }
    }

    /// The same on the default pipeline's shapes: a 2s x 2s mosaic canvas down to s x s at scales 0.5..1.5.
    #[test]
    fn axis_aligned_equals_general_mosaic_shapes() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let img = noise(256, 256, &mut rng);
        for _ in 0..20 {
            let s: f64 = rng.random_range(0.5..1.5);
            let (tx, ty) = (rng.random_range(0.4..0.6) * 128.0, rng.random_range(0.4..0.6) * 128.0);
            let m = [[s, 0.0, tx - 128.0 * s], [0.0, s, ty - 128.0 * s]].map(|r| r.map(|v| v as f32 as f64));
            let inv = affine_inverse(m).unwrap();
            let fast = warp_affine(&img, m, 128, 128, 114).unwrap();
            assert_eq!(fast, run_general(&img, &Inverse::Affine(inv), 128, 128, 114), "m {m:?}");
        }
    }
}
