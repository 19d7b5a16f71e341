//! EXIF orientation exactly as OpenCV reads and applies it.
//!
//! * [`orientation_from_tiff`] is OpenCV's `cv::ExifReader::parseExif` (modules/imgcodecs/src/exif.cpp) reduced to
//!   what decides the orientation: IFD0 only, the byte order from the first two bytes (`II` little endian, anything
//!   else big endian), the tag mark 0x002A checked, entries inserted with `std::map::insert` (the first occurrence
//!   of a tag wins, also across several EXIF blocks), and parsing stopped by the first out-of-range read
//!   (`ExifParsingError`) while keeping the entries inserted before it. The orientation value is the `u16` at
//!   offset 8 of the entry, whatever the entry's type and count (`ExifReader::getOrientation`).
//! * [`apply_orientation`] is OpenCV's `ExifTransform(orientation, img)` (modules/imgcodecs/src/loadsave.cpp), which
//!   `cv::imdecode` / `cv::imread` call unless `IMREAD_IGNORE_ORIENTATION` is given.

use image::RgbImage;

const ORIENTATION: u16 = 0x0112;

/// What `ExifReader` has collected so far: only the orientation matters here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExifState {
    orientation: Option<u16>,
}

impl ExifState {
    /// Parse one TIFF-structured EXIF block (the APP1 payload after `"Exif\0\0"`, or a PNG `eXIf` chunk) into the
    /// state, like one call of OpenCV's `ExifReader::parseExif(data, size)`.
    pub(crate) fn parse(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let _ = self.parse_inner(data);
    }

    /// OpenCV's `ApplyExifOrientation`: the orientation tag's value, or 1 (`IMAGE_ORIENTATION_TL`) without one.
    pub(crate) fn orientation(&self) -> u16 {
        self.orientation.unwrap_or(1)
    }

    fn parse_inner(&mut self, data: &[u8]) -> Option<()> {
        let r = Reader { data, intel: data.len() > 1 && data[0] == data[1] && data[0] == b'I' };
        if r.u16(2)? != 0x002A {
            return Some(());
        }
        let mut offset = r.u32(4)? as usize;
        let entries = r.u16(offset)? as usize;
        offset += 2;
        for _ in 0..entries {
            let tag = r.u16(offset)?;
            // `parseExifEntry`: the reads each known tag makes; any of them may throw and end the parsing.
            match tag {
                // IMAGE_DESCRIPTION, MAKE, MODEL, SOFTWARE, DATE_TIME, COPYRIGHT: getString
                0x010E | 0x010F | 0x0110 | 0x0131 | 0x0132 | 0x8298 => {
                    let size = r.u32(offset + 4)? as usize;
                    let data_offset = if size > 4 { r.u32(offset + 8)? as usize } else { 8 };
                    if data_offset > data.len() || data_offset.checked_add(size)? > data.len() {
                        return None;
                    }
                }
                ORIENTATION => {
                    let v = r.u16(offset + 8)?;
                    self.orientation.get_or_insert(v);
                }
                // XRESOLUTION, YRESOLUTION (1 rational), WHITE_POINT (2), PRIMARY_CHROMATICIES (6),
                // Y_CB_CR_COEFFICIENTS (3), REFERENCE_BLACK_WHITE (6)
                0x011A | 0x011B | 0x013E | 0x013F | 0x0211 | 0x0214 => {
                    let n = match tag {
                        0x011A | 0x011B => 1,
                        0x013E => 2,
                        0x0211 => 3,
                        _ => 6,
                    };
                    let base = r.u32(offset + 8)? as usize;
                    for i in 0..n {
                        r.u32(base + 8 * i)?;
                        r.u32(base + 8 * i + 4)?;
                    }
                }
                // RESOLUTION_UNIT, Y_CB_CR_POSITIONING: getU16(offset + 8)
                0x0128 | 0x0213 => {
                    r.u16(offset + 8)?;
                }
                _ => {}
            }
            offset += 12;
        }
        Some(())
    }
}

struct Reader<'a> {
    data: &'a [u8],
    intel: bool,
}

impl Reader<'_> {
    /// `ExifReader::getU16`: throws when `offset + 1 >= size`.
    fn u16(&self, offset: usize) -> Option<u16> {
        let b = self.data.get(offset..offset.checked_add(2)?)?;
        Some(if self.intel { u16::from_le_bytes([b[0], b[1]]) } else { u16::from_be_bytes([b[0], b[1]]) })
    }

    /// `ExifReader::getU32`: throws when `offset + 3 >= size`.
    fn u32(&self, offset: usize) -> Option<u32> {
        let b = self.data.get(offset..offset.checked_add(4)?)?;
        let a = [b[0], b[1], b[2], b[3]];
        Some(if self.intel { u32::from_le_bytes(a) } else { u32::from_be_bytes(a) })
    }
}

/// The EXIF orientation OpenCV would apply for a TIFF-structured EXIF block (1 when there is none).
pub fn orientation_from_tiff(data: &[u8]) -> u16 {
    let mut s = ExifState::default();
    s.parse(data);
    s.orientation()
}

/// Whether OpenCV's `ExifTransform` swaps width and height for this orientation (5–8: it transposes).
pub fn swaps_axes(orientation: u16) -> bool {
    matches!(orientation, 5..=8)
}

/// OpenCV's `ExifTransform(orientation, img)`: 2 `flip(1)`, 3 `flip(-1)`, 4 `flip(0)`, 5 `transpose`,
/// 6 `transpose`+`flip(1)`, 7 `transpose`+`flip(-1)`, 8 `transpose`+`flip(0)`; 1 and any other value: unchanged.
pub fn apply_orientation(img: RgbImage, orientation: u16) -> RgbImage {
    if !(2..=8).contains(&orientation) {
        return img;
    }
    let (w, h) = (img.width() as usize, img.height() as usize);
    let (ow, oh) = if swaps_axes(orientation) { (h, w) } else { (w, h) };
    let src = img.as_raw();
    let mut out = vec![0u8; ow * oh * 3];
    for y in 0..oh {
        for x in 0..ow {
            // (source column, source row) of output pixel (x, y)
            let (sx, sy) = match orientation {
                2 => (w - 1 - x, y),
                3 => (w - 1 - x, h - 1 - y),
                4 => (x, h - 1 - y),
                5 => (y, x),
                6 => (y, h - 1 - x),
                7 => (w - 1 - y, h - 1 - x),
                _ => (w - 1 - y, x), // 8
            };
            let s = (sy * w + sx) * 3;
            let d = (y * ow + x) * 3;
            out[d..d + 3].copy_from_slice(&src[s..s + 3]);
        }
    }
    // `ow * oh * 3` bytes by construction, so this cannot fail.
    RgbImage::from_raw(ow as u32, oh as u32, out).unwrap_or_else(|| unreachable!("buffer sized for the image"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiff(intel: bool, entries: &[(u16, u16, u32, u32)]) -> Vec<u8> {
        let mut v = Vec::new();
        let p16 = |v: &mut Vec<u8>, x: u16| v.extend(if intel { x.to_le_bytes() } else { x.to_be_bytes() });
        let p32 = |v: &mut Vec<u8>, x: u32| v.extend(if intel { x.to_le_bytes() } else { x.to_be_bytes() });
        v.extend(if intel { b"II" } else { b"MM" });
        p16(&mut v, 42);
        p32(&mut v, 8);
        p16(&mut v, entries.len() as u16);
        for &(tag, ty, count, value) in entries {
            p16(&mut v, tag);
            p16(&mut v, ty);
            p32(&mut v, count);
            if ty == 3 {
                p16(&mut v, value as u16);
                p16(&mut v, 0);
            } else {
                p32(&mut v, value);
            }
        }
        p32(&mut v, 0);
        v
    }

    #[test]
    fn orientation_both_byte_orders() {
        for o in 1..=8 {
            assert_eq!(orientation_from_tiff(&tiff(true, &[(0x0112, 3, 1, o)])), o as u16);
            assert_eq!(orientation_from_tiff(&tiff(false, &[(0x0112, 3, 1, o)])), o as u16);
        }
        assert_eq!(orientation_from_tiff(b"II*\0"), 1);
        assert_eq!(orientation_from_tiff(&[]), 1);
    }

    #[test]
    fn bad_string_before_orientation_stops_parsing() {
        // MAKE with 100 bytes at offset 5000: out of range, OpenCV throws before reaching the orientation.
        let t = tiff(true, &[(0x010F, 2, 100, 5000), (0x0112, 3, 1, 6)]);
        assert_eq!(orientation_from_tiff(&t), 1);
        // Orientation first, then the bad string: the orientation is kept.
        let t = tiff(true, &[(0x0112, 3, 1, 6), (0x010F, 2, 100, 5000)]);
        assert_eq!(orientation_from_tiff(&t), 6);
    }

    #[test]
    fn first_block_wins() {
        let mut s = ExifState::default();
        s.parse(&tiff(true, &[(0x0112, 3, 1, 3)]));
        s.parse(&tiff(true, &[(0x0112, 3, 1, 6)]));
        assert_eq!(s.orientation(), 3);
    }

    #[test]
    fn transforms_match_definitions() {
        // 3x2 image, pixel value = 10 * row + column in every channel.
        let img = RgbImage::from_fn(3, 2, |x, y| image::Rgb([(10 * y + x) as u8; 3]));
        let px = |i: &RgbImage, x: u32, y: u32| i.get_pixel(x, y)[0];
        let r6 = apply_orientation(img.clone(), 6); // rotate 90° clockwise
        assert_eq!((r6.width(), r6.height()), (2, 3));
        assert_eq!([px(&r6, 0, 0), px(&r6, 1, 0), px(&r6, 0, 2)], [10, 0, 12]);
        let r8 = apply_orientation(img.clone(), 8); // rotate 90° counter-clockwise
        assert_eq!([px(&r8, 0, 0), px(&r8, 1, 0), px(&r8, 0, 2)], [2, 12, 0]);
        let r5 = apply_orientation(img.clone(), 5); // transpose
        assert_eq!([px(&r5, 0, 0), px(&r5, 1, 0), px(&r5, 0, 2)], [0, 10, 2]);
        let r7 = apply_orientation(img.clone(), 7); // transverse
        assert_eq!([px(&r7, 0, 0), px(&r7, 1, 0), px(&r7, 0, 2)], [12, 2, 10]);
        let r3 = apply_orientation(img.clone(), 3);
        assert_eq!([px(&r3, 0, 0), px(&r3, 2, 1)], [12, 0]);
        assert_eq!(apply_orientation(img.clone(), 0), img);
        assert_eq!(apply_orientation(img.clone(), 9), img);
    }
}
