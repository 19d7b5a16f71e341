//! PNG plots like ultralytics 8.4.190's `plot_pr_curve`, `plot_mc_curve` and `ConfusionMatrix.plot`, drawn with
//! plotters' bitmap backend. Text uses DejaVu Sans, embedded at build time from the `dejavu` crate (font license:
//! Bitstream Vera / DejaVu, free to embed and redistribute), so no system font lookup happens at run time.

mod confusion;
mod curves;
mod results;

use std::path::Path;
use std::sync::OnceLock;

use plotters::style::RGBColor;

pub use confusion::plot_confusion_matrix;
pub use curves::{plot_mc_curve, plot_pr_curve};
pub use results::plot_results;

use crate::error::EvalError;

/// The font family name the plots use.
pub(crate) const FONT: &str = "sans-serif";

/// Registers the embedded DejaVu Sans with plotters (once per process).
pub(crate) fn ensure_font() -> Result<(), EvalError> {
    static OK: OnceLock<bool> = OnceLock::new();
    let ok = *OK.get_or_init(|| {
        plotters::style::register_font(FONT, plotters::style::FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(EvalError::Plot { path: Path::new("").to_path_buf(), msg: "embedded DejaVu Sans font is invalid".into() })
    }
}

/// matplotlib's default colour cycle (`tab10`), used for per-class lines.
pub(crate) const TAB10: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

pub(crate) fn plot_err(path: &Path, e: impl std::fmt::Display) -> EvalError {
    EvalError::Plot { path: path.to_path_buf(), msg: e.to_string() }
}

/// Encodes an RGB8 buffer as PNG and writes it atomically: a temporary file in the same directory, then a rename.
pub(crate) fn write_png_atomic(path: &Path, rgb: Vec<u8>, w: u32, h: u32) -> Result<(), EvalError> {
    let img = image::RgbImage::from_raw(w, h, rgb).ok_or_else(|| plot_err(path, "pixel buffer has the wrong size"))?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| plot_err(path, "path has no file name"))?;
    let tmp = dir.join(format!(".{}.tmp{}", name.to_string_lossy(), std::process::id()));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| EvalError::Io { path: p, source }
    };
    let file = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    let mut wr = std::io::BufWriter::new(file);
    let enc = image::codecs::png::PngEncoder::new(&mut wr);
    if let Err(e) = image::ImageEncoder::write_image(enc, img.as_raw(), w, h, image::ExtendedColorType::Rgb8) {
        let _ = std::fs::remove_file(&tmp);
        return Err(plot_err(path, e));
    }
    let flushed = std::io::Write::flush(&mut wr).map_err(io(&tmp));
    drop(wr);
    if let Err(e) = flushed {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        EvalError::Io { path: path.to_path_buf(), source: e }
    })
}
