//! A labelled batch grid like ultralytics' `plot_images` (`train_batch0.jpg`).

use std::path::Path;

use font8x8::UnicodeFonts;
use image::{ImageFormat, Rgb, RgbImage};

use crate::{AugmentError, Sample};

/// Ultralytics' `Colors` palette (`ultralytics.utils.plotting.Colors.hexs`), RGB; class `c` uses `COLORS[c % 20]`
/// (the one `predict`'s annotations use).
pub use yolo26_imageio::annotate::PALETTE as COLORS;

/// Geometry of a rendered grid (for callers and tests).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridLayout {
    /// Tiles per side (`ns = ceil(sqrt(min(n, 16)))`).
    pub ns: usize,
    /// Tile `[h, w]` after the optional down-scale.
    pub tile: [usize; 2],
    /// Down-scale applied to images and boxes (1 when none).
    pub scale: f64,
    /// Box line width in pixels (`round(fs / 10)`).
    pub line_width: usize,
}

/// Render up to 16 samples (all of one size) as `plot_images` does: an `ns x ns` grid on white, filled
/// **column-major** (`x = w * (i // ns)`, `y = h * (i % ns)`), shrunk with `cv2.resize` (INTER_LINEAR) when larger
/// than `max_size = 1920`, a white 2-px frame per tile, each box drawn in its class colour with line width
/// `round(fs / 10)` (`fs = max(int((h + w) * ns * 0.01), 18)`) and its class name (`names[c]`, else the number) on a
/// filled label above it. Text uses the `font8x8` bitmap font scaled to about `fs / 2` pixels (ultralytics uses
/// Arial via PIL, so the glyphs differ).
pub fn render_batch(samples: &[Sample], names: &[String]) -> Result<(RgbImage, GridLayout), AugmentError> {
    let first = samples.first().ok_or_else(|| AugmentError::InvalidArgument("plot_batch: no images".into()))?;
    let (h0, w0) = (first.img.height() as usize, first.img.width() as usize);
    let bs = samples.len().min(16);
    for s in &samples[..bs] {
        s.validate()?;
        if s.img.dimensions() != first.img.dimensions() {
            return Err(AugmentError::InvalidArgument(format!(
                "plot_batch: images differ in size ({:?} vs {:?})",
                s.img.dimensions(),
                first.img.dimensions()
            )));
        }
    }
    let ns = (bs as f64).sqrt().ceil() as usize;
    let mut grid = RgbImage::from_pixel((ns * w0) as u32, (ns * h0) as u32, Rgb([255; 3]));
    for (i, s) in samples[..bs].iter().enumerate() {
        let (x, y) = (w0 * (i / ns), h0 * (i % ns));
        image::imageops::replace(&mut grid, &s.img, x as i64, y as i64);
    }
    let scale = 1920.0 / ns as f64 / h0.max(w0) as f64;
    let (mut h, mut w) = (h0, w0);
    if scale < 1.0 {
        h = (scale * h0 as f64).ceil() as usize;
        w = (scale * w0 as f64).ceil() as usize;
        grid = yolo26_imageio::preprocess::resize_linear(&grid, (w * ns) as u32, (h * ns) as u32);
    }
    let fs = (((h + w) * ns) as f64 * 0.01) as usize;
    let fs = fs.max(18);
    let line_width = ((fs as f64 / 10.0).round_ties_even() as usize).max(1);
    let glyph = (fs / 16).max(1);
    for (i, s) in samples[..bs].iter().enumerate() {
        let (x, y) = ((w * (i / ns)) as i64, (h * (i % ns)) as i64);
        draw_rect(&mut grid, [x, y, x + w as i64, y + h as i64], [255; 3], 2);
        let k = if scale < 1.0 { scale as f32 } else { 1.0 };
        for (b, &c) in s.boxes.iter().zip(&s.cls) {
            let bb =
                [b[0] * k + x as f32, b[1] * k + y as f32, b[2] * k + x as f32, b[3] * k + y as f32].map(|v| v as i64);
            let color = COLORS[c as usize % COLORS.len()];
            draw_rect(&mut grid, bb, color, line_width);
            let label = names.get(c as usize).cloned().unwrap_or_else(|| c.to_string());
            let th = 8 * glyph as i64 + 2;
            let ty = if bb[1] - th >= 0 { bb[1] - th } else { bb[1] };
            draw_label(&mut grid, bb[0], ty, &label, glyph, color);
        }
    }
    Ok((grid, GridLayout { ns, tile: [h, w], scale: scale.min(1.0), line_width }))
}

/// [`render_batch`] and write it to `path` (JPEG for `.jpg`/`.jpeg`, PNG for `.png`, by extension), atomically:
/// a temporary file in the same directory, then a rename.
pub fn plot_batch(samples: &[Sample], names: &[String], path: impl AsRef<Path>) -> Result<(), AugmentError> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let ext = path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase());
    let format = match ext.as_deref() {
        Some("jpg") | Some("jpeg") => ImageFormat::Jpeg,
        Some("png") => ImageFormat::Png,
        _ => {
            return Err(AugmentError::InvalidArgument(format!(
                "plot_batch: {shown}: extension must be jpg, jpeg or png"
            )))
        }
    };
    let (grid, _) = render_batch(samples, names)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("plot");
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let io = |source| AugmentError::Io { path: shown.clone(), source };
    if let Err(source) = grid.save_with_format(&tmp, format) {
        let _ = std::fs::remove_file(&tmp);
        return Err(AugmentError::Encode { path: shown, source });
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

/// Fill the pixels of `[x1, x1 + w) x [y1, y1 + h)` that lie inside the image.
fn fill(img: &mut RgbImage, x1: i64, y1: i64, w: i64, h: i64, c: [u8; 3]) {
    let (iw, ih) = (img.width() as i64, img.height() as i64);
    for y in y1.max(0)..(y1 + h).min(ih) {
        for x in x1.max(0)..(x1 + w).min(iw) {
            img.put_pixel(x as u32, y as u32, Rgb(c));
        }
    }
}

/// A rectangle outline `[x1, y1, x2, y2]` of thickness `t` drawn inwards (PIL's `rectangle(width=t)`).
fn draw_rect(img: &mut RgbImage, b: [i64; 4], c: [u8; 3], t: usize) {
    let t = t as i64;
    let [x1, y1, x2, y2] = b;
    let (w, h) = (x2 - x1 + 1, y2 - y1 + 1);
    if w <= 0 || h <= 0 {
        return;
    }
    fill(img, x1, y1, w, t.min(h), c);
    fill(img, x1, y2 - t + 1, w, t.min(h), c);
    fill(img, x1, y1, t.min(w), h, c);
    fill(img, x2 - t + 1, y1, t.min(w), h, c);
}

/// A label: filled background in `bg`, white `font8x8` text scaled by `k`, top-left corner at `(x, y)`.
fn draw_label(img: &mut RgbImage, x: i64, y: i64, text: &str, k: usize, bg: [u8; 3]) {
    let k = k as i64;
    let n = text.chars().count() as i64;
    fill(img, x, y, n * 8 * k + 2, 8 * k + 2, bg);
    for (i, ch) in text.chars().enumerate() {
        let g = font8x8::BASIC_FONTS.get(ch).or_else(|| font8x8::BASIC_FONTS.get('?')).unwrap_or([0; 8]);
        for (row, bits) in g.iter().enumerate() {
            for col in 0..8 {
                if bits >> col & 1 == 1 {
                    let px = x + 1 + (i as i64 * 8 + col) * k;
                    fill(img, px, y + 1 + row as i64 * k, k, k, [255; 3]);
                }
            }
        }
    }
}
