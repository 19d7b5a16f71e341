//! HSV against cv2 (`cvtColor` 8-bit) and ultralytics `RandomHSV`.
mod common;

use yolo26_augment::{bgr_to_hsv, hsv_to_bgr, random_hsv, HsvLut};

/// Same checksum as generate.py: sum(byte[i] * (i % 65521 + 1)) mod 2^64.
fn checksum(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.enumerate().fold(0u64, |acc, (i, b)| acc.wrapping_add(b as u64 * ((i % 65521) as u64 + 1)))
}

fn all_triplets() -> impl Iterator<Item = [u8; 3]> {
    (0u32..1 << 24).map(|i| [(i >> 16) as u8, (i >> 8) as u8, i as u8])
}

#[test]
fn bgr2hsv_all_colours_bit_exact() {
    let fx = common::fixtures();
    let want = fx["hsv_exhaustive"]["bgr2hsv_checksum"].as_u64().unwrap();
    assert_eq!(checksum(all_triplets().flat_map(bgr_to_hsv)), want, "COLOR_BGR2HSV over all 2^24 colours");
}

#[test]
fn hsv2bgr_all_inputs_bit_exact() {
    let fx = common::fixtures();
    let want = fx["hsv_exhaustive"]["hsv2bgr_checksum"].as_u64().unwrap();
    assert_eq!(checksum(all_triplets().flat_map(hsv_to_bgr)), want, "COLOR_HSV2BGR over all 2^24 inputs");
}

#[test]
fn random_pixels_against_cv2() {
    let fx = common::fixtures();
    let p = &fx["hsv_pixels"];
    let (src, h, b) = (common::image(&p["in"]), common::image(&p["bgr2hsv"]), common::image(&p["hsv2bgr"]));
    let mut bad = (0, 0);
    for ((s, hh), bb) in src.chunks_exact(3).zip(h.chunks_exact(3)).zip(b.chunks_exact(3)) {
        let s = [s[0], s[1], s[2]];
        bad.0 += (bgr_to_hsv(s) != [hh[0], hh[1], hh[2]]) as usize;
        bad.1 += (hsv_to_bgr(s) != [bb[0], bb[1], bb[2]]) as usize;
    }
    assert_eq!(bad, (0, 0), "mismatching pixels (bgr2hsv, hsv2bgr) of 4096");
}

#[test]
fn random_hsv_matches_ultralytics() {
    let fx = common::fixtures();
    let f = &fx["random_hsv"];
    let src = common::image(&f["src"]);
    for case in f["cases"].as_array().unwrap() {
        let r = common::f64s(&case["r"]);
        let mut img = src.clone();
        random_hsv(&mut img, [r[0], r[1], r[2]]);
        let want = common::image(&case["out"]);
        let (max, frac) = common::diff(&img, &want);
        assert_eq!((max, frac), (0, 0.0), "RandomHSV r={r:?}");
        assert_ne!(img, src, "the gains change the image");
    }
}

#[test]
fn lut_edges() {
    let lut = HsvLut::new([-0.015, 0.7, -0.4]);
    assert_eq!(lut.sat[0], 0, "sat[0] forced to 0 (8.3.79)");
    assert_eq!(lut.hue[0], 177, "(0 - 2.7) % 180 = 177.3 -> 177");
    assert_eq!(lut.sat[255], 255, "clipped");
    assert_eq!(lut.val[255], 153, "255 * 0.6 = 153");
}
