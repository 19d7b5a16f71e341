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
    let s = (diff * sdiv[v as usize] + half) >> HSV_SHIFT;
    let h = if v == r {
        g - b
    } else if v == g {
        b - r + 2 * diff
    } else {
        r - g + 4 * diff
    };
    let mut h = (h * hdiv[diff as usize] + half) >> HSV_SHIFT;
    if h < 0 {
        h += 180;
    }
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
    idx.map(|i| (tab[i] * 255.0).clamp(0.0, 255.0) as u8)
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
    if crate::fma::has_fma() {
        // SAFETY: the CPU supports FMA and SSE4.1 (checked at run time just above).
        unsafe { apply_lut_fma(img, lut) };
        return;
    }
    apply_lut_generic(img, lut)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma,sse4.1")]
unsafe fn apply_lut_fma(img: &mut RgbImage, lut: &HsvLut) {
    apply_lut_generic(img, lut)
}

#[inline(always)]
fn apply_lut_generic(img: &mut RgbImage, lut: &HsvLut) {
    let (sdiv, hdiv) = tables();
    let hues = hue_table();
    // the hue LUT composed with OpenCV's sector split
    let hue: [(usize, f32); 256] = std::array::from_fn(|i| hues[lut.hue[i] as usize]);
    for px in img.chunks_exact_mut(3) {
        let [h, s, v] = bgr_to_hsv_with([px[2], px[1], px[0]], sdiv, hdiv);
        let [b, g, r] = hsv_to_bgr_sector(hue[h as usize], lut.sat[s as usize], lut.val[v as usize]);
        px[0] = r;
        px[1] = g;
        px[2] = b;
    }
}
