//! PNG, BMP and WebP through the `image` crate (WebP via `image-webp`, bit-exact with OpenCV's libwebp for lossy
//! and lossless files in our fixtures), converted to 8-bit RGB the way OpenCV's decoders do for
//! `cv2.IMREAD_COLOR`: 16-bit samples keep their high byte (`png_set_strip_16`), alpha is dropped
//! (`png_set_strip_alpha`, no compositing), gray is replicated (`png_set_gray_to_rgb`), palettes and 1/2/4-bit gray
//! are expanded (`png_set_palette_to_rgb`, `png_set_expand_gray_1_2_4_to_8`).

use std::io::Cursor;

use image::{DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader, RgbImage};

use crate::exif::ExifState;
use crate::{DecodeError, Format};

fn image_format(format: Format) -> ImageFormat {
    match format {
        Format::Png => ImageFormat::Png,
        Format::Bmp => ImageFormat::Bmp,
        Format::Jpeg => ImageFormat::Jpeg,
        Format::WebP => ImageFormat::WebP,
    }
}

fn map_err(format: Format, e: ImageError) -> DecodeError {
    match e {
        ImageError::Limits(l) => DecodeError::Corrupt { format, message: format!("decoder memory limit: {l}") },
        ImageError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            DecodeError::Truncated { format, message: io.to_string(), rows_decoded: 0, height: 0, warnings: Vec::new() }
        }
        ImageError::Unsupported(u) => DecodeError::Unsupported { format, message: u.to_string() },
        other => {
            let message = other.to_string();
            // The png crate reports a cut-off stream as a format error, not as an I/O EOF.
            if message.contains("end of") || message.contains("EOF") || message.contains("truncat") {
                DecodeError::Truncated { format, message, rows_decoded: 0, height: 0, warnings: Vec::new() }
            } else {
                DecodeError::Corrupt { format, message }
            }
        }
    }
}

fn decoder(bytes: &[u8], format: Format) -> Result<impl ImageDecoder + '_, DecodeError> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), image_format(format));
    let mut limits = image::Limits::default();
    // Our own pixel limit is checked from the header before decoding; this only stops the decoder from refusing
    // legitimate large images (its default is 512 MiB) and bounds what a lying header could make it allocate.
    limits.max_alloc = Some(crate::MAX_PIXELS * 8 + (1 << 20));
    reader.limits(limits);
    reader.into_decoder().map_err(|e| map_err(format, e))
}

/// Width, height (as stored) and the EXIF orientation OpenCV would apply (PNG `eXIf` chunk before the image data,
/// WebP `EXIF` chunk).
pub(crate) fn probe(bytes: &[u8], format: Format) -> Result<(u32, u32, u16), DecodeError> {
    let mut dec = decoder(bytes, format)?;
    let (w, h) = dec.dimensions();
    let orientation = exif_orientation(&mut dec, format);
    Ok((w, h, orientation))
}

fn exif_orientation(dec: &mut impl ImageDecoder, format: Format) -> u16 {
    if !matches!(format, Format::Png | Format::WebP) {
        return 1;
    }
    let mut exif = ExifState::default();
    if let Ok(Some(data)) = dec.exif_metadata() {
        // PIL and most writers store the bare TIFF structure; a leading "Exif\0\0" (some tools write it) is
        // skipped. Only the bare form is verified against OpenCV.
        exif.parse(data.strip_prefix(b"Exif\0\0").unwrap_or(&data));
    }
    exif.orientation()
}

/// Decode to RGB (before the EXIF orientation); returns the image and the orientation to apply.
pub(crate) fn decode(bytes: &[u8], format: Format) -> Result<(RgbImage, u16), DecodeError> {
    let mut dec = decoder(bytes, format)?;
    let (w, h) = dec.dimensions();
    crate::check_size(w, h, format)?;
    let orientation = exif_orientation(&mut dec, format);
    let img = DynamicImage::from_decoder(dec).map_err(|e| map_err(format, e))?;
    Ok((to_rgb_like_opencv(img, format)?, orientation))
}

fn from_samples<T: Copy>(
    w: u32,
    h: u32,
    data: &[T],
    channels: usize,
    to8: impl Fn(T) -> u8,
    format: Format,
) -> Result<RgbImage, DecodeError> {
    let mut out = Vec::with_capacity(w as usize * h as usize * 3);
    for px in data.chunks_exact(channels) {
        if channels <= 2 {
            let g = to8(px[0]);
            out.extend_from_slice(&[g, g, g]);
        } else {
            out.extend_from_slice(&[to8(px[0]), to8(px[1]), to8(px[2])]);
        }
    }
    RgbImage::from_raw(w, h, out).ok_or_else(|| DecodeError::Corrupt { format, message: "short pixel data".into() })
}

/// OpenCV `IMREAD_COLOR` conversion of a decoded image (see the module docs).
fn to_rgb_like_opencv(img: DynamicImage, format: Format) -> Result<RgbImage, DecodeError> {
    let (w, h) = (img.width(), img.height());
    let hi = |v: u16| (v >> 8) as u8;
    let id = |v: u8| v;
    match img {
        DynamicImage::ImageRgb8(i) => Ok(i),
        DynamicImage::ImageLuma8(i) => from_samples(w, h, i.as_raw(), 1, id, format),
        DynamicImage::ImageLumaA8(i) => from_samples(w, h, i.as_raw(), 2, id, format),
        DynamicImage::ImageRgba8(i) => from_samples(w, h, i.as_raw(), 4, id, format),
        DynamicImage::ImageLuma16(i) => from_samples(w, h, i.as_raw(), 1, hi, format),
        DynamicImage::ImageLumaA16(i) => from_samples(w, h, i.as_raw(), 2, hi, format),
        DynamicImage::ImageRgb16(i) => from_samples(w, h, i.as_raw(), 3, hi, format),
        DynamicImage::ImageRgba16(i) => from_samples(w, h, i.as_raw(), 4, hi, format),
        other => Err(DecodeError::Unsupported { format, message: format!("sample layout {:?}", other.color()) }),
    }
}
