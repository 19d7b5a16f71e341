//! Every fixture in `tests/fixtures/` decoded by `yolo26_imageio::decode` must give exactly OpenCV's pixels:
//! the SHA-256 of `cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1]` (RGB) and its size, written to `expected.json`
//! by `gen_decode_cases.py`; files for which cv2 returns `None` must be an error here.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn expected() -> serde_json::Map<String, serde_json::Value> {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).expect("expected.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    v["cases"].as_object().expect("cases object").clone()
}

/// Fixtures whose corrupt entropy data drives coefficients out of the IDCT's valid range, where libjpeg-turbo's
/// SIMD and C IDCTs differ: OpenCV (a SIMD build) is matched only with the `simd` feature. Without it they must
/// still decode (same size) with warnings.
const SIMD_ONLY: &[&str] = &["corrupt_entropy_101x67.jpg"];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn all_fixtures_match_opencv() {
    let cases = expected();
    assert!(cases.len() >= 40, "only {} cases in expected.json", cases.len());
    let mut failures = Vec::new();
    let mut matched = 0;
    for (name, exp) in &cases {
        let bytes = std::fs::read(fixtures().join(name)).expect(name);
        let ok = exp["ok"].as_bool().expect("ok flag");
        match (yolo26_imageio::decode(&bytes), ok) {
            (Ok(img), true) => {
                let (w, h) = (exp["width"].as_u64().unwrap_or(0) as u32, exp["height"].as_u64().unwrap_or(0) as u32);
                let sha = hex(&Sha256::digest(img.as_raw()));
                let c_path_exempt = !cfg!(feature = "simd") && SIMD_ONLY.contains(&name.as_str());
                if (img.width(), img.height()) != (w, h)
                    || (sha != exp["sha256"].as_str().unwrap_or("") && !c_path_exempt)
                {
                    failures.push(format!(
                        "{name}: got {}x{} sha {sha}, OpenCV {w}x{h} sha {}",
                        img.width(),
                        img.height(),
                        exp["sha256"]
                    ));
                } else {
                    matched += 1;
                }
                // The header probe agrees with the decoded size.
                match yolo26_imageio::probe(&bytes) {
                    Ok(info) if (info.width, info.height) == (w, h) => {}
                    other => failures.push(format!("{name}: probe gave {other:?}, decode {w}x{h}")),
                }
            }
            (Err(_), false) => matched += 1,
            (Ok(img), false) => {
                failures.push(format!("{name}: decoded {}x{} but cv2.imdecode returns None", img.width(), img.height()))
            }
            (Err(e), true) => failures.push(format!("{name}: error {e} but cv2.imdecode decodes it")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures differ from OpenCV:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert_eq!(matched, cases.len());
}

#[test]
fn exif_orientations_rotate_like_opencv() {
    // 37x23 stored; orientations 5-8 transpose.
    for o in 1..=8u16 {
        let bytes = std::fs::read(fixtures().join(format!("exif_orient{o}_37x23.jpg"))).expect("fixture");
        let info = yolo26_imageio::probe(&bytes).expect("probe");
        assert_eq!(info.orientation, o);
        let want = if o >= 5 { (23, 37) } else { (37, 23) };
        assert_eq!((info.width, info.height), want, "orientation {o}");
    }
    let plain =
        yolo26_imageio::decode(&std::fs::read(fixtures().join("exif_orient1_37x23.jpg")).expect("f")).expect("decode");
    let rot =
        yolo26_imageio::decode(&std::fs::read(fixtures().join("exif_orient6_37x23.jpg")).expect("f")).expect("decode");
    // Orientation 6 is a 90° clockwise rotation: output (x, y) = input (y, H-1-x).
    for (x, y) in [(0, 0), (5, 30), (22, 36)] {
        assert_eq!(rot.get_pixel(x, y), plain.get_pixel(y, 22 - x));
    }
}

#[test]
fn warnings_are_reported_and_lenient_decode_keeps_the_image() {
    let bytes = std::fs::read(fixtures().join("truncated_with_eoi_101x67.jpg")).expect("fixture");
    let d = yolo26_imageio::decode_report(&bytes).expect("decodes like OpenCV");
    assert_eq!((d.image.width(), d.image.height()), (101, 67));
    assert!(d.warnings.iter().any(|w| w.contains("premature end of data segment")), "{:?}", d.warnings);

    let bytes = std::fs::read(fixtures().join("extraneous_bytes_101x67.jpg")).expect("fixture");
    let d = yolo26_imageio::decode_report(&bytes).expect("decodes like OpenCV");
    assert!(d.warnings.iter().any(|w| w.contains("3 extraneous bytes before marker 0xda")), "{:?}", d.warnings);

    let clean =
        yolo26_imageio::decode_report(&std::fs::read(fixtures().join("j420_101x67.jpg")).expect("f")).expect("decode");
    assert!(clean.warnings.is_empty(), "{:?}", clean.warnings);
}

#[test]
fn truncated_jpeg_is_an_error_like_imdecode() {
    for name in ["truncated_half_101x67.jpg", "truncated_no_eoi_101x67.jpg"] {
        let bytes = std::fs::read(fixtures().join(name)).expect("fixture");
        match yolo26_imageio::decode(&bytes) {
            Err(e @ yolo26_imageio::DecodeError::Truncated { height: 67, rows_decoded, .. }) => {
                assert!(rows_decoded < 67, "{name}: {rows_decoded}");
                let text = e.to_string();
                assert!(
                    text.starts_with("truncated JPEG data: Premature end") && text.contains("of 67 rows"),
                    "{text}"
                );
            }
            other => panic!("{name}: expected Truncated, got {other:?}"),
        }
        // The header is intact, so the probe still works.
        assert_eq!(yolo26_imageio::probe(&bytes).expect("probe").width, 101);
    }
}
