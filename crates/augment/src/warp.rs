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
    check_out(out_w, out_h)?;
    let [[a, b, c], [d, e, f]] = m;
    if m.iter().flatten().any(|v| !v.is_finite()) {
        return Err(AugmentError::InvalidArgument(format!("warp_affine: non-finite matrix {m:?}")));
    }
    // OpenCV's inverse (imgwarp.cpp, `warpAffine` without WARP_INVERSE_MAP).
    let det = a * e - b * d;
    if det == 0.0 {
        return Err(AugmentError::InvalidArgument(format!("warp_affine: singular matrix {m:?}")));
    }
    let dinv = 1.0 / det;
    let (i0, i1, i3, i4) = (e * dinv, -b * dinv, -d * dinv, a * dinv);
    let i2 = -i0 * c - i1 * f;
    let i5 = -i3 * c - i4 * f;
    let inv = Inverse::Affine([i0, i1, i2, i3, i4, i5]);
    Ok(run(img, &inv, out_w, out_h, border))
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
