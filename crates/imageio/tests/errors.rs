//! Bad input is a clear `Err`, never a panic or an abort.

use std::path::PathBuf;

use yolo26_imageio::{decode, decode_report, probe, read, DecodeError, Format, MAX_PIXELS};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// CRC-32 (ISO-HDLC) as PNG chunks use it.
fn crc32(data: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
        }
    }
    !c
}

fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend(width.to_be_bytes());
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]); // 8-bit RGB
    v.extend(13u32.to_be_bytes());
    v.extend(&ihdr);
    v.extend(crc32(&ihdr).to_be_bytes());
    // an empty IDAT and IEND so the header is complete
    for chunk in [&b"IDAT"[..], &b"IEND"[..]] {
        v.extend(0u32.to_be_bytes());
        v.extend(chunk);
        v.extend(crc32(chunk).to_be_bytes());
    }
    v
}

/// A real JPEG with its SOF0 width and height patched.
fn jpeg_with_size(width: u16, height: u16) -> Vec<u8> {
    let mut v = std::fs::read(fixture("j420_101x67.jpg")).expect("fixture");
    let sof = v.windows(2).position(|w| w == [0xFF, 0xC0]).expect("SOF0");
    v[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
    v[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
    v
}

#[test]
fn empty_input() {
    assert!(matches!(decode(&[]), Err(DecodeError::Empty)));
    assert!(matches!(probe(&[]), Err(DecodeError::Empty)));
}

#[test]
fn random_bytes_are_unknown_format() {
    // xorshift noise that does not start with any signature
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let bytes: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    assert_ne!(&bytes[..2], b"BM");
    let e = decode(&bytes).expect_err("noise");
    assert!(matches!(e, DecodeError::UnknownFormat { .. }), "{e}");
    assert!(e.to_string().contains("unrecognised image data"), "{e}");
    let tiff = decode(b"II*\0\x08\0\0\0").expect_err("tiff");
    assert!(tiff.to_string().contains("TIFF"), "{tiff}");
}

#[test]
fn random_bytes_after_a_jpeg_signature_are_corrupt() {
    let bytes = std::fs::read(fixture("not_a_jpeg_after_soi.jpg")).expect("fixture");
    let e = decode(&bytes).expect_err("garbage");
    assert!(matches!(e, DecodeError::Corrupt { format: Format::Jpeg, .. } | DecodeError::Truncated { .. }), "{e}");
    // Every prefix of a valid JPEG is an error or an image, never a crash.
    let full = std::fs::read(fixture("j420_progressive_101x67.jpg")).expect("fixture");
    for cut in (0..full.len()).step_by(97) {
        let _ = decode_report(&full[..cut]);
        let _ = probe(&full[..cut]);
    }
}

#[test]
fn truncated_png_is_an_error() {
    let bytes = std::fs::read(fixture("png_truncated_41x27.png")).expect("fixture");
    let e = decode(&bytes).expect_err("truncated png");
    assert!(matches!(e, DecodeError::Truncated { format: Format::Png, .. } | DecodeError::Corrupt { .. }), "{e}");
}

#[test]
fn huge_headers_are_refused_before_allocating() {
    let e = decode(&png_header(100_000, 100_000)).expect_err("huge png");
    assert!(matches!(e, DecodeError::TooLarge { width: 100_000, height: 100_000, limit: MAX_PIXELS }), "{e}");
    assert!(matches!(probe(&png_header(100_000, 100_000)), Err(DecodeError::TooLarge { .. })));
    let e = decode(&jpeg_with_size(65_000, 65_000)).expect_err("huge jpeg");
    assert!(matches!(e, DecodeError::TooLarge { width: 65_000, height: 65_000, .. }), "{e}");
    assert!(e.to_string().contains("65000x65000"), "{e}");
    // One pixel row/column over 2^28 pixels is refused; OpenCV's own limit (2^30) would accept it.
    let e = decode(&jpeg_with_size(16_385, 16_385)).expect_err("over the limit");
    assert!(matches!(e, DecodeError::TooLarge { .. }), "{e}");
    // A header that lies about a moderate size decodes like OpenCV: the entropy data runs into the EOI marker and
    // libjpeg fills the rest with empty blocks (checked against cv2.imdecode: identical pixels).
    let d = decode_report(&jpeg_with_size(300, 200)).expect("lenient");
    assert_eq!((d.image.width(), d.image.height()), (300, 200));
    assert!(d.warnings.iter().any(|w| w.contains("premature end of data segment")), "{:?}", d.warnings);
}

#[test]
fn read_refuses_non_regular_files_naming_them() {
    let dir = fixture("");
    let e = read(&dir).expect_err("directory");
    assert!(matches!(e, DecodeError::NotAFile { kind: "directory", .. }), "{e}");
    assert!(e.to_string().contains("tests/fixtures"), "{e}");
    #[cfg(unix)]
    {
        let e = read("/dev/null").expect_err("device");
        assert!(matches!(e, DecodeError::NotAFile { kind: "character device", .. }), "{e}");
    }
    let missing = fixture("does_not_exist.jpg");
    let e = read(&missing).expect_err("missing");
    assert!(matches!(e, DecodeError::Io { .. }) && e.to_string().contains("does_not_exist.jpg"), "{e}");
}

#[test]
fn read_decodes_regular_files_by_content_not_extension() {
    // A PNG named .jpg-less: the content decides.
    let a = read(fixture("png_rgb8_41x27.png")).expect("png");
    let b = decode(&std::fs::read(fixture("png_rgb8_41x27.png")).expect("bytes")).expect("png");
    assert_eq!(a, b);
    let info = probe(&std::fs::read(fixture("bmp24_41x27.bmp")).expect("bmp")).expect("probe");
    assert_eq!((info.format, info.width, info.height), (Format::Bmp, 41, 27));
}
