//! Image input for every part of the project (predict, val, training): one decoder with OpenCV's
//! `cv2.imdecode(buf, cv2.IMREAD_COLOR)` semantics — what ultralytics reads images with
//! (`ultralytics.utils.patches.imread` = `cv2.imdecode(np.fromfile(f, np.uint8), cv2.IMREAD_COLOR)`) — returned as
//! RGB (OpenCV's BGR with the channels reversed, i.e. `cv2.cvtColor(img, cv2.COLOR_BGR2RGB)`).
//!
//! Layout of every returned image: [`RgbImage`], row-major HWC, 8 bits per sample, `R, G, B` per pixel.
//!
//! * JPEG (content starts with `FF D8 FF`, OpenCV's `JpegDecoder` signature) is decoded by libjpeg-turbo (the
//!   decoder of mozjpeg, built from source by `mozjpeg-sys`) through a C mirror of OpenCV's `JpegDecoder`
//!   (`csrc/cvjpeg.c`): ISLOW IDCT, fancy upsampling, block smoothing (libjpeg defaults, which OpenCV keeps),
//!   grayscale → three equal channels, CMYK/YCCK → libjpeg CMYK → OpenCV's `icvCvt_CMYK2BGR_8u_C4C3R` formula
//!   (`c' = k - ((255 - c) * k >> 8)`), bit-exact with OpenCV's libjpeg-turbo build. One caveat: for *corrupt*
//!   entropy data whose coefficients leave the IDCT's valid range, libjpeg-turbo's C and SIMD IDCTs differ, and
//!   OpenCV's wheels use SIMD; build with the `simd` feature (needs `nasm`) to match those too.
//! * PNG, BMP and WebP go through the `image` crate with OpenCV's `IMREAD_COLOR` conversions (16-bit → high byte,
//!   alpha dropped, gray replicated, palette expanded); TIFF is refused with a clear error.
//! * The EXIF orientation (JPEG APP1 `Exif`, PNG `eXIf`, WebP `EXIF`) is applied exactly as `cv::imdecode` does
//!   (`ExifReader` + `ExifTransform`, see [`exif`]).
//! * The format is chosen from the content (magic bytes), never from a file name.
//! * Images with more than [`MAX_PIXELS`] pixels (or a side over [`MAX_SIDE`]) are refused from the header,
//!   before any pixel buffer is allocated ([`DecodeError::TooLarge`]).

use std::path::{Path, PathBuf};

pub mod annotate;
pub mod exif;
#[cfg(test)]
mod fuzz_tests;
mod jpeg;
mod other;
pub mod preprocess;

pub use image::RgbImage;

/// Largest accepted `width * height`: 2^28 pixels (805 MB as RGB). OpenCV's `CV_IO_MAX_IMAGE_PIXELS` default is
/// 2^30; we refuse earlier because nothing in this project needs such images and a lying header should not be able
/// to make us allocate gigabytes.
pub const MAX_PIXELS: u64 = 1 << 28;

/// Largest accepted width or height: OpenCV's `CV_IO_MAX_IMAGE_WIDTH` / `CV_IO_MAX_IMAGE_HEIGHT` (2^20).
pub const MAX_SIDE: u32 = 1 << 20;

/// An encoded image format, recognised from the first bytes of the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// `FF D8 FF` (OpenCV `JpegDecoder`).
    Jpeg,
    /// `89 'P' 'N' 'G' 0D 0A 1A 0A` (OpenCV `PngDecoder`).
    Png,
    /// `'B' 'M'` (OpenCV `BmpDecoder`).
    Bmp,
    /// `RIFF....WEBP` (OpenCV `WebPDecoder`).
    WebP,
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::Jpeg => "JPEG",
            Format::Png => "PNG",
            Format::Bmp => "BMP",
            Format::WebP => "WebP",
        })
    }
}

/// Why an image could not be read or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The file could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// `read` was given something that is not a regular file (a directory, FIFO, socket or device).
    #[error("{} is not a regular file but a {kind}", path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
    /// Zero bytes of input.
    #[error("empty input: no image data")]
    Empty,
    /// The content matches no supported format.
    #[error("unrecognised image data (first bytes {magic:02x?}); supported formats: JPEG, PNG, BMP, WebP{hint}")]
    UnknownFormat { magic: Vec<u8>, hint: &'static str },
    /// The data ends before the image does. `cv2.imdecode` returns `None` for such data (its JPEG source cannot
    /// supply more bytes, so libjpeg suspends and OpenCV gives up); we return this error.
    #[error("truncated {format} data: {message}{}", rows_note(*rows_decoded, *height))]
    Truncated { format: Format, message: String, rows_decoded: u32, height: u32, warnings: Vec<String> },
    /// The decoder rejected the data (`cv2.imdecode` returns `None`).
    #[error("corrupt {format} data: {message}")]
    Corrupt { format: Format, message: String },
    /// The header declares a valid but unsupported variant (e.g. a 12-bit JPEG, a BMP compression).
    #[error("unsupported {format} image: {message}")]
    Unsupported { format: Format, message: String },
    /// The header declares more pixels than [`MAX_PIXELS`] or a side longer than [`MAX_SIDE`].
    #[error("image of {width}x{height} pixels exceeds the limit of {limit} pixels ({MAX_SIDE} per side)")]
    TooLarge { width: u32, height: u32, limit: u64 },
}

fn rows_note(rows_decoded: u32, height: u32) -> String {
    if height == 0 {
        String::new()
    } else {
        format!(" ({rows_decoded} of {height} rows decoded)")
    }
}

/// Header facts of an encoded image, from [`probe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageInfo {
    /// Width of the image [`decode`] returns (after the EXIF orientation).
    pub width: u32,
    /// Height of the image [`decode`] returns (after the EXIF orientation).
    pub height: u32,
    /// The format recognised from the content.
    pub format: Format,
    /// EXIF orientation as OpenCV reads it (1–8; 1 without EXIF; other values are kept but not applied).
    pub orientation: u16,
}

/// A decoded image plus the decoder's warnings.
#[derive(Clone, Debug)]
pub struct Decoded {
    /// The image, exactly as [`decode`] returns it.
    pub image: RgbImage,
    /// Warnings from libjpeg (e.g. `"Corrupt JPEG data: 3 extraneous bytes before marker 0xda"`); OpenCV prints
    /// the first of them to stderr and still returns the image. Empty for the other formats.
    pub warnings: Vec<String>,
    /// Header facts; `width`/`height` equal the image's.
    pub info: ImageInfo,
}

/// The format of encoded data from its first bytes (OpenCV's `findDecoder` signature check).
pub fn sniff(bytes: &[u8]) -> Result<Format, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Ok(Format::Jpeg)
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Ok(Format::Png)
    } else if bytes.starts_with(b"BM") {
        Ok(Format::Bmp)
    } else if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Ok(Format::WebP)
    } else {
        let hint = if bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*") {
            " (this is TIFF, which is not supported)"
        } else {
            ""
        };
        Err(DecodeError::UnknownFormat { magic: bytes[..bytes.len().min(8)].to_vec(), hint })
    }
}

pub(crate) fn check_size(width: u32, height: u32, format: Format) -> Result<(), DecodeError> {
    if width > MAX_SIDE || height > MAX_SIDE || width as u64 * height as u64 > MAX_PIXELS {
        return Err(DecodeError::TooLarge { width, height, limit: MAX_PIXELS });
    }
    if width == 0 || height == 0 {
        return Err(DecodeError::Corrupt { format, message: format!("empty image {width}x{height}") });
    }
    Ok(())
}

fn oriented(width: u32, height: u32, format: Format, orientation: u16) -> ImageInfo {
    let (width, height) = if exif::swaps_axes(orientation) { (height, width) } else { (width, height) };
    ImageInfo { width, height, format, orientation }
}

/// Header-only probe: size after the EXIF orientation, format and orientation, without decoding pixels.
///
/// The size equals that of [`decode`]'s result (and of `cv2.imdecode(buf, cv2.IMREAD_COLOR).shape[1::-1]`). It is
/// the quantity ultralytics' `verify_image_label` takes from `exif_size(PIL.Image.open(f))`; the two agree except
/// for exotic EXIF (PIL and OpenCV parse EXIF differently, e.g. OpenCV takes the first `Exif` APP1 and stops at
/// the first malformed IFD0 entry). A successful probe does not guarantee that the image data decodes.
pub fn probe(bytes: &[u8]) -> Result<ImageInfo, DecodeError> {
    let format = sniff(bytes)?;
    let (w, h, o) = match format {
        Format::Jpeg => {
            let j = jpeg::Jpeg::open(bytes)?;
            let hd = j.header();
            (hd.width, hd.height, hd.orientation)
        }
        _ => other::probe(bytes, format)?,
    };
    check_size(w, h, format)?;
    Ok(oriented(w, h, format, o))
}

/// Decode an encoded image and report the decoder's warnings.
///
/// Same pixels and errors as [`decode`]. Warnings are libjpeg's recoverable problems (corrupt entropy data,
/// extraneous bytes, a bad marker after the image): OpenCV decodes through them and so do we; the list lets a
/// dataset checker flag such files.
pub fn decode_report(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    let format = sniff(bytes)?;
    let (img, orientation, warnings) = match format {
        Format::Jpeg => {
            let j = jpeg::Jpeg::open(bytes)?;
            let hd = j.header();
            check_size(hd.width, hd.height, format)?;
            let (img, warnings) = j.read()?;
            (img, hd.orientation, warnings)
        }
        _ => {
            let (img, o) = other::decode(bytes, format)?;
            (img, o, Vec::new())
        }
    };
    let info = oriented(img.width(), img.height(), format, orientation);
    let image = exif::apply_orientation(img, orientation);
    Ok(Decoded { image, warnings, info })
}

/// Decode an encoded image (format from its content) to 8-bit RGB: `cv2.imdecode(buf, cv2.IMREAD_COLOR)` followed
/// by `cv2.cvtColor(img, cv2.COLOR_BGR2RGB)`, bit-exact, EXIF orientation applied.
///
/// Where `cv2.imdecode` returns `None` this returns an error: empty or unrecognised data, corrupt data, and
/// truncated data — a JPEG cut short (even one missing only its final EOI marker) is [`DecodeError::Truncated`],
/// because OpenCV's in-memory JPEG source cannot supply more bytes and `imdecode` gives up. Data that libjpeg can
/// decode through with warnings (corrupt entropy-coded segments, garbage before a marker, an EOI marker in the
/// middle of the image, after which libjpeg fills the rest with its "no data" blocks) decodes as in OpenCV; use
/// [`decode_report`] to see the warnings.
pub fn decode(bytes: &[u8]) -> Result<RgbImage, DecodeError> {
    decode_report(bytes).map(|d| d.image)
}

fn regular_file(path: &Path) -> Result<(), DecodeError> {
    let meta = std::fs::metadata(path).map_err(|source| DecodeError::Io { path: path.to_path_buf(), source })?;
    if meta.is_file() {
        return Ok(());
    }
    let kind = if meta.is_dir() {
        "directory"
    } else {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            let t = meta.file_type();
            if t.is_fifo() {
                "FIFO"
            } else if t.is_socket() {
                "socket"
            } else if t.is_block_device() {
                "block device"
            } else if t.is_char_device() {
                "character device"
            } else {
                "special file"
            }
        }
        #[cfg(not(unix))]
        {
            "special file"
        }
    };
    Err(DecodeError::NotAFile { path: path.to_path_buf(), kind })
}

/// Read a whole regular file (symlinks are followed; directories, FIFOs, sockets and devices are refused with
/// [`DecodeError::NotAFile`] naming the path, so a read can never block on a pipe).
pub fn read_bytes(path: impl AsRef<Path>) -> Result<Vec<u8>, DecodeError> {
    let path = path.as_ref();
    regular_file(path)?;
    std::fs::read(path).map_err(|source| DecodeError::Io { path: path.to_path_buf(), source })
}

/// Read and decode an image file: ultralytics' `imread(path)` (`cv2.imdecode(np.fromfile(path, np.uint8),
/// cv2.IMREAD_COLOR)`), as RGB. Only regular files are read (see [`read_bytes`]); decoding is [`decode`].
pub fn read(path: impl AsRef<Path>) -> Result<RgbImage, DecodeError> {
    decode(&read_bytes(path)?)
}

/// [`read`] with the decoder's warnings ([`decode_report`]).
pub fn read_report(path: impl AsRef<Path>) -> Result<Decoded, DecodeError> {
    decode_report(&read_bytes(path)?)
}
