//! Property-based fuzzing of image decoding + letterbox (`cargo test --release ... fuzz_`): small PNG / JPEG / BMP /
//! WebP images encoded here with the `image` crate, plus a few OpenCV-specific fixtures (EXIF orientation, CMYK,
//! progressive, restart markers, palettes), mutated byte-wise, and arbitrary bytes. Fixed seed and bounded case
//! counts: a run reproduces exactly and takes seconds.
//!
//! Properties: no panic (nor crash in the C JPEG decoder); a decoded image is non-empty, within the size limits,
//! `w·h·3` bytes, with the size [`crate::probe`] reported; letterboxing it gives the documented `[3, h, w]` input
//! (at most `imgsz` per side for predict, exactly `new_shape` for a fixed letterbox) with values in `[0, 1]`.

use std::io::Cursor;
use std::sync::OnceLock;

use image::{DynamicImage, ImageFormat, RgbImage};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use yolo26_fuzzkit::{config, edit, mutate};

use crate::preprocess::Letterbox;
use crate::{decode_report, probe, MAX_PIXELS, MAX_SIDE};

/// JPEG marker bytes (SOI / EOI second bytes) among the values a `Set` edit draws.
const JPEG_BYTES: &[u8] = &[0xd8, 0xd9];

/// Headers may legitimately claim up to [`MAX_PIXELS`]; decoding such a claim costs time and memory, not
/// correctness, so the fuzz decodes only what probes at most this many pixels.
const FUZZ_MAX_PIXELS: u64 = 1 << 20;

fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let rgb = RgbImage::from_fn(13, 7, |x, y| image::Rgb([(x * 19) as u8, (y * 37) as u8, ((x + y) * 11) as u8]));
        let img = DynamicImage::ImageRgb8(rgb);
        let encode = |img: &DynamicImage, f: ImageFormat| {
            let mut out = Cursor::new(Vec::new());
            img.write_to(&mut out, f).unwrap();
            out.into_inner()
        };
        let mut s = vec![
            encode(&img, ImageFormat::Png),
            encode(&DynamicImage::ImageRgba8(img.to_rgba8()), ImageFormat::Png),
            encode(&DynamicImage::ImageLuma16(img.to_luma16()), ImageFormat::Png),
            encode(&img, ImageFormat::Jpeg),
            encode(&DynamicImage::ImageLuma8(img.to_luma8()), ImageFormat::Jpeg),
            encode(&img, ImageFormat::Bmp),
            encode(&img, ImageFormat::WebP),
        ];
        macro_rules! fixture {
            ($($name:literal),*) => { $(s.push(include_bytes!(concat!("../tests/fixtures/", $name)).to_vec());)* };
        }
        fixture!(
            "exif_orient6_37x23.jpg",
            "cmyk_progressive_45x29.jpg",
            "gray_progressive_53x31.jpg",
            "j420_restart_101x67.jpg",
            "png_exif_orient6_41x27.png",
            "png_palette4bit_41x27.png",
            "bmp8_palette_41x27.bmp",
            "webp_exif_orient6_41x27.webp",
            "webp_lossy_alpha_41x27.webp"
        );
        s
    })
}

/// Decodes `bytes` and letterboxes the result, checking the properties in the module doc.
fn check(bytes: &[u8]) {
    let probed = probe(bytes);
    if probed.as_ref().is_ok_and(|i| i.width as u64 * i.height as u64 > FUZZ_MAX_PIXELS) {
        return;
    }
    let Ok(d) = decode_report(bytes) else { return };
    let (w, h) = d.image.dimensions();
    assert!(w >= 1 && h >= 1 && w <= MAX_SIDE && h <= MAX_SIDE && w as u64 * h as u64 <= MAX_PIXELS);
    assert_eq!(d.image.as_raw().len(), w as usize * h as usize * 3);
    assert_eq!((d.info.width, d.info.height), (w, h));
    if let Ok(p) = probed {
        assert_eq!((p.width, p.height, p.format), (w, h, d.info.format), "probe and decode disagree");
    }
    let (data, info) = Letterbox::predict(64).apply(&d.image);
    let [lh, lw] = info.shape;
    assert!((1..=64).contains(&lh) && (1..=64).contains(&lw), "{info:?}");
    assert!(info.new_unpad[0] + info.pad[1] as usize <= lh && info.new_unpad[1] + info.pad[0] as usize <= lw);
    assert_eq!(data.len(), 3 * lh * lw);
    assert!(data.iter().all(|v| (0.0..=1.0).contains(v)));
    let (data, info) = Letterbox::fixed([40, 56]).apply(&d.image);
    assert_eq!((info.shape, data.len()), ([40, 56], 3 * 40 * 56));
}

proptest! {
    #![proptest_config(config(40_000))]

    /// Byte-level mutations of valid images of every supported format.
    #[test]
    fn fuzz_decode_letterbox_mutated(seed in any::<Index>(), edits in vec(edit(JPEG_BYTES), 1..6)) {
        let seeds = seeds();
        check(&mutate(seeds[seed.index(seeds.len())].as_slice(), &edits));
    }

    /// Arbitrary bytes, bare or behind each format's signature.
    #[test]
    fn fuzz_decode_letterbox_arbitrary(magic in 0usize..5, body in vec(any::<u8>(), 0..512)) {
        let magic: &[u8] = [&b""[..], b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"BM", b"RIFF\0\0\0\0WEBP"][magic];
        check(&[magic, &body].concat());
    }
}

#[test]
fn seeds_decode() {
    for (i, s) in seeds().iter().enumerate() {
        let d = decode_report(s).unwrap_or_else(|e| panic!("seed {i}: {e}"));
        assert!(d.image.width() > 1, "seed {i}");
        check(s);
    }
}
