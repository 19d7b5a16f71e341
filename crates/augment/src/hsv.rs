//! Ultralytics `RandomHSV` on OpenCV's 8-bit HSV (`COLOR_BGR2HSV` / `COLOR_HSV2BGR`, hue in `0..180`).
//!
//! * [`bgr_to_hsv`] is `cv2.cvtColor(img, cv2.COLOR_BGR2HSV)` for one 8-bit pixel (OpenCV's `RGB2HSV_b`: integer
//!   arithmetic with the 12-bit tables `sdiv = round((255 << 12) / v)`, `hdiv = round((180 << 12) / (6 diff))`),
//!   bit-exact on all 2^24 colours against opencv-python 5.1.0.
//! * [`hsv_to_bgr`] is `cv2.cvtColor(img, cv2.COLOR_HSV2BGR)` for one pixel (OpenCV's `HSV2RGB_b` SIMD path: f32,
//!   `s, v / 255`, `h * (6 / 180)`, sector, `tab2 = v * fma(-s, h, 1)`, `tab3 = v * fma(-s, 1 - h, 1)`, output
//!   `trunc(c * 255)`), bit-exact on all 2^24 inputs (including hue >= 180) against opencv-python 5.1.0.
//! * [`random_hsv`] is `RandomHSV.apply_image` with the random gains given ([`hsv_gains`] draws them).

use std::sync::OnceLock;

use image::RgbImage;

const HSV_SHIFT: u32 = 12;

/// OpenCV's `sdiv_table` and `hdiv_table180` (`saturate_cast<int>` = round half to even of the f64 quotient).
fn tables() -> &'static ([i32; 256], [i32; 256]) {
    static T: OnceLock<([i32; 256], [i32; 256])> = OnceLock::new();
    T.get_or_init(|| {
        let (mut sdiv, mut hdiv) = ([0i32; 256], [0i32; 256]);
        for i in 1..256 {
            sdiv[i] = ((255 << HSV_SHIFT) as f64 / i as f64).round_ties_even() as i32;
            hdiv[i] = ((180 << HSV_SHIFT) as f64 / (6.0 * i as f64)).round_ties_even() as i32;
        }
        (sdiv, hdiv)
    })
}

/// `cv2.cvtColor(px, cv2.COLOR_BGR2HSV)` for one pixel given as `[b, g, r]`; returns `[h, s, v]` with `h < 180`.
pub fn bgr_to_hsv(bgr: [u8; 3]) -> [u8; 3] {
    let (sdiv, hdiv) = tables();
    bgr_to_hsv_with(bgr, sdiv, hdiv)
}

#[inline(always)]
fn bgr_to_hsv_with([b, g, r]: [u8; 3], sdiv: &[i32; 256], hdiv: &[i32; 256]) -> [u8; 3] {
    let (b, g, r) = (b as i32, g as i32, r as i32);
    let v = b.max(g).max(r);
    let vmin = b.min(g).min(r);
    let diff = v - vmin;
    let half = 1 << (HSV_SHIFT - 1);
    // (`& 255`: no-ops that let the compiler drop the bounds checks; v, diff are in 0..=255)
    let s = (diff * sdiv[(v & 255) as usize] + half) >> HSV_SHIFT;
    // if v == r { g - b } else if v == g { b - r + 2 diff } else { r - g + 4 diff }, with OpenCV's masks (no
    // branches: which channel is the largest is unpredictable on natural images)
    let vr = -((v == r) as i32);
    let vg = -((v == g) as i32) & !vr;
    let h = (vr & (g - b)) + (!vr & ((vg & (b - r + 2 * diff)) + (!vg & (r - g + 4 * diff))));
    let h = (h * hdiv[(diff & 255) as usize] + half) >> HSV_SHIFT;
    let h = h + ((h >> 31) & 180); // if h < 0 { h += 180 }
    [h.clamp(0, 255) as u8, s as u8, v as u8]
}

/// `cv2.cvtColor(px, cv2.COLOR_HSV2BGR)` for one pixel `[h, s, v]` (hue range 180); returns `[b, g, r]`.
pub fn hsv_to_bgr(hsv: [u8; 3]) -> [u8; 3] {
    hsv_to_bgr_inline(hsv)
}

/// OpenCV's hue handling for one 8-bit hue: `h * (6 / 180)`, wrapped below 6, split into sector and fraction.
#[inline(always)]
fn hue_sector(h: u8) -> (usize, f32) {
    let mut h = h as f32 * (6.0f32 / 180.0);
    while h >= 6.0 {
        h -= 6.0;
    }
    let sector = h.floor();
    ((sector as usize).min(5), h - sector)
}

/// [`hue_sector`] for all 256 hues.
fn hue_table() -> &'static [(usize, f32); 256] {
    static T: OnceLock<[(usize, f32); 256]> = OnceLock::new();
    T.get_or_init(|| std::array::from_fn(|i| hue_sector(i as u8)))
}

#[inline(always)]
fn hsv_to_bgr_inline([h, s, v]: [u8; 3]) -> [u8; 3] {
    hsv_to_bgr_sector(hue_sector(h), s, v)
}

#[inline(always)]
fn hsv_to_bgr_sector((sector, h): (usize, f32), s: u8, v: u8) -> [u8; 3] {
    let (s, v) = (s as f32 * (1.0 / 255.0), v as f32 * (1.0 / 255.0));
    let tab = [v, v * (1.0 - s), v * (-s).mul_add(h, 1.0), v * (-s).mul_add(1.0 - h, 1.0)];
    // OpenCV's sector_data: (b, g, r) tab indices per sector.
    const SECTOR: [[usize; 3]; 6] = [[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]];
    let idx = SECTOR[sector];
    // (explicit indexing, not `idx.map(..)`: the closure would not be inlined into FMA-enabled callers)
    [to_u8(tab[idx[0]]), to_u8(tab[idx[1]]), to_u8(tab[idx[2]])]
}

/// The three look-up tables of `RandomHSV.apply_image` for the drawn gains `r = [rh, rs, rv]`:
/// `hue[x] = uint8((x + rh * 180) % 180)`, `sat[x] = uint8(clip(x * (rs + 1), 0, 255))` with `sat[0] = 0`,
/// `val[x] = uint8(clip(x * (rv + 1), 0, 255))` (f64 arithmetic, truncating casts, as NumPy does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HsvLut {
    pub hue: [u8; 256],
    pub sat: [u8; 256],
    pub val: [u8; 256],
}

impl HsvLut {
    /// Build the tables for the gains `r` (already multiplied: `np.random.uniform(-1, 1, 3) * [hgain, sgain, vgain]`).
    pub fn new(r: [f64; 3]) -> Self {
        let mut lut = Self { hue: [0; 256], sat: [0; 256], val: [0; 256] };
        for i in 0..256 {
            let x = i as f64;
            // np.remainder with a positive divisor == rem_euclid; the `as u8` casts truncate like astype(uint8).
            lut.hue[i] = (x + r[0] * 180.0).rem_euclid(180.0) as u8;
            lut.sat[i] = (x * (r[1] + 1.0)).clamp(0.0, 255.0) as u8;
            lut.val[i] = (x * (r[2] + 1.0)).clamp(0.0, 255.0) as u8;
        }
        lut.sat[0] = 0;
        lut
    }
}

/// Draw `RandomHSV`'s gains: `np.random.uniform(-1, 1, 3) * [hgain, sgain, vgain]`.
pub fn hsv_gains(rng: &mut impl rand::Rng, hgain: f64, sgain: f64, vgain: f64) -> [f64; 3] {
    let mut u = || crate::sample::uniform(rng, -1.0, 1.0);
    [u() * hgain, u() * sgain, u() * vgain]
}

/// `RandomHSV.apply_image` with fixed drawn gains `r` (see [`hsv_gains`]) on an RGB image, in place:
/// `cvtColor(BGR2HSV)` → `cv2.LUT` with [`HsvLut::new`] → `cvtColor(HSV2BGR)`. The RGB↔BGR order is handled here.
pub fn random_hsv(img: &mut RgbImage, r: [f64; 3]) {
    let lut = HsvLut::new(r);
    apply_lut(img, &lut)
}

fn apply_lut(img: &mut RgbImage, lut: &HsvLut) {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::fma::has_avx2_fma() {
            // SAFETY: the CPU supports AVX2, FMA and SSE4.1 (checked at run time just above).
            unsafe { apply_lut_avx2(img, lut) };
            return;
        }
        if crate::fma::has_fma() {
            // SAFETY: the CPU supports FMA and SSE4.1 (checked at run time just above).
            unsafe { apply_lut_fma(img, lut) };
            return;
        }
    }
    apply_lut_generic(img, lut)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,sse4.1")]
unsafe fn apply_lut_avx2(img: &mut RgbImage, lut: &HsvLut) {
    // (an AVX2 integer pass with gathers for the table reads was slower than this scalar one: 1.49 vs 1.30 ms per
    // 640 x 640 image on the development machine's CPU, where gathers are microcoded)
    apply_lut_generic(img, lut)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma,sse4.1")]
unsafe fn apply_lut_fma(img: &mut RgbImage, lut: &HsvLut) {
    apply_lut_generic(img, lut)
}

/// The tables of one [`apply_lut_with`] call: OpenCV's divisors, and the drawn LUTs composed with `HSV2RGB_b`'s
/// hue sector split (`sector`, `frac`) and its `x / 255` (`sat`, `val`).
struct Tables {
    sdiv: [i32; 256],
    hdiv: [i32; 256],
    sector: [i32; 256],
    frac: [f32; 256],
    sat: [f32; 256],
    val: [f32; 256],
}

/// Per-pixel results of the integer pass: sector, hue fraction, `s / 255`, `v / 255`.
type Lanes = ([i32; BLOCK], [f32; BLOCK], [f32; BLOCK], [f32; BLOCK]);

/// The integer pass of [`apply_lut_with`] in plain Rust: `RGB2HSV_b` as [`bgr_to_hsv_with`] and the composed LUTs.
#[inline(always)]
fn int_pass(rgb: &[[i32; BLOCK]; 3], t: &Tables, out: &mut Lanes) {
    let half = 1 << (HSV_SHIFT - 1);
    // (indexed: eight arrays walked in step; the loop vectorises only its float parts)
    #[allow(clippy::needless_range_loop)]
    for i in 0..BLOCK {
        let (r, g, b) = (rgb[0][i], rgb[1][i], rgb[2][i]);
        let v = b.max(g).max(r);
        let diff = v - b.min(g).min(r);
        let s = (diff * t.sdiv[(v & 255) as usize] + half) >> HSV_SHIFT;
        let vr = -((v == r) as i32);
        let vg = -((v == g) as i32) & !vr;
        let h = (vr & (g - b)) + (!vr & ((vg & (b - r + 2 * diff)) + (!vg & (r - g + 4 * diff))));
        let h = (h * t.hdiv[(diff & 255) as usize] + half) >> HSV_SHIFT;
        let h = (h + ((h >> 31) & 180)) & 255; // in 0..180
        out.0[i] = t.sector[h as usize];
        out.1[i] = t.frac[h as usize];
        out.2[i] = t.sat[(s & 255) as usize];
        out.3[i] = t.val[(v & 255) as usize];
    }
}

/// Pixels per block of [`apply_lut_generic`].
const BLOCK: usize = 64;

/// [`apply_lut_with`] with the plain integer pass.
#[inline(always)]
fn apply_lut_generic(img: &mut RgbImage, lut: &HsvLut) {
    apply_lut_with(img, lut, int_pass)
}

/// `random_hsv`'s pixel loop in blocks of [`BLOCK`] pixels, each pass a branch-free loop over the block: the
/// pixels split into `r, g, b` lanes; `int_pass` (`RGB2HSV_b` in integers as [`bgr_to_hsv_with`], the three LUTs
/// composed with `HSV2RGB_b`'s sector split and `x / 255`); `HSV2RGB_b` in f32 exactly as [`hsv_to_bgr_sector`]
/// does (same operations in the same order, so the same bits; vectorised by the compiler); the bytes back.
#[inline(always)]
fn apply_lut_with(img: &mut RgbImage, lut: &HsvLut, int_pass: impl Fn(&[[i32; BLOCK]; 3], &Tables, &mut Lanes)) {
    let (sdiv, hdiv) = tables();
    let hues = hue_table();
    let t = Tables {
        sdiv: *sdiv,
        hdiv: *hdiv,
        sector: std::array::from_fn(|i| hues[lut.hue[i] as usize].0 as i32),
        frac: std::array::from_fn(|i| hues[lut.hue[i] as usize].1),
        sat: std::array::from_fn(|i| lut.sat[i] as f32 * (1.0 / 255.0)),
        val: std::array::from_fn(|i| lut.val[i] as f32 * (1.0 / 255.0)),
    };
    let mut rgb = [[0i32; BLOCK]; 3];
    let mut lanes: Lanes = ([0; BLOCK], [0.0; BLOCK], [0.0; BLOCK], [0.0; BLOCK]);
    let mut out = [[0u8; BLOCK]; 3];
    for block in img.chunks_mut(BLOCK * 3) {
        // a short last block leaves stale lanes behind: computed, never written back
        for (i, px) in block.chunks_exact(3).enumerate() {
            (rgb[0][i], rgb[1][i], rgb[2][i]) = (px[0] as i32, px[1] as i32, px[2] as i32);
        }
        int_pass(&rgb, &t, &mut lanes);
        let (hk, hf, sf, vf) = (&lanes.0, &lanes.1, &lanes.2, &lanes.3);
        for i in 0..BLOCK {
            let (k, h, s, v) = (hk[i], hf[i], sf[i], vf[i]);
            let tab = [v, v * (1.0 - s), v * (-s).mul_add(h, 1.0), v * (-s).mul_add(1.0 - h, 1.0)];
            // OpenCV's sector_data (b, g, r tab indices per sector) as selects:
            // [[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]]
            let b = if k < 2 {
                tab[1]
            } else if k == 2 {
                tab[3]
            } else if k < 5 {
                tab[0]
            } else {
                tab[2]
            };
            let g = if k == 0 {
                tab[3]
            } else if k < 3 {
                tab[0]
            } else if k == 3 {
                tab[2]
            } else {
                tab[1]
            };
            let r = if k == 0 || k == 5 {
                tab[0]
            } else if k == 1 {
                tab[2]
            } else if k < 4 {
                tab[1]
            } else {
                tab[3]
            };
            out[0][i] = to_u8(r);
            out[1][i] = to_u8(g);
            out[2][i] = to_u8(b);
        }
        for (i, px) in block.chunks_exact_mut(3).enumerate() {
            px.copy_from_slice(&[out[0][i], out[1][i], out[2][i]]);
        }
    }
}

/// `(x * 255).clamp(0, 255) as u8` (truncation) without the branches of a saturating conversion: the truncated
/// value in [0, 255] plus 2^23 is exact and has the integer in its low mantissa bits.
#[inline(always)]
fn to_u8(x: f32) -> u8 {
    ((x * 255.0).clamp(0.0, 255.0).trunc() + 8_388_608.0).to_bits() as u8
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// `random_hsv` (LUT composed with the hue split, runs of equal pixels reused) equals the plain per-pixel
    /// chain `hsv_to_bgr(lut(bgr_to_hsv(px)))` on random images with runs and on random gains.
    #[test]
    fn random_hsv_equals_per_pixel_chain() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for _ in 0..50 {
            let mut img = RgbImage::new(97, 41);
            let mut px: [u8; 3] = rng.random();
            for p in img.pixels_mut() {
                if rng.random_bool(0.6) {
                    px = rng.random();
                }
                p.0 = px;
            }
            let r = [rng.random_range(-0.5..0.5), rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0)];
            let lut = HsvLut::new(r);
            let mut got = img.clone();
            random_hsv(&mut got, r);
            let mut plain = img.clone();
            apply_lut_generic(&mut plain, &lut); // the copy without target features (non-x86 CPUs)
            assert_eq!(plain, got);
            #[cfg(target_arch = "x86_64")]
            if crate::fma::has_fma() {
                let mut fma = img.clone();
                // SAFETY: FMA and SSE4.1 are supported (checked just above).
                unsafe { apply_lut_fma(&mut fma, &lut) };
                assert_eq!(fma, got, "the FMA copy (the AVX2 one is `random_hsv` here where supported)");
            }
            for (a, b) in img.pixels().zip(got.pixels()) {
                let [h, s, v] = bgr_to_hsv([a[2], a[1], a[0]]);
                let [bb, g, rr] = hsv_to_bgr([lut.hue[h as usize], lut.sat[s as usize], lut.val[v as usize]]);
                assert_eq!(b.0, [rr, g, bb], "pixel {a:?}, gains {r:?}");
            }
        }
    }
}
