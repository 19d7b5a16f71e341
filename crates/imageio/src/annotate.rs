//! Draw detections on an RGB image: a box outline per detection and a filled label with `"name 0.87"`.
//!
//! Ultralytics equivalent: `Results.plot()` → `Annotator.box_label(box, f"{name} {conf:.2f}", color=colors(cls, True))`
//! (cv2 backend). Same colour palette (`ultralytics.utils.plotting.Colors`), same label text colour rule
//! (`Annotator.get_txt_color`), same line width (`Annotator.lw = max(round(sum(im.shape) / 2 * 0.003), 2)`, i.e.
//! 2 px for images up to ~1660 px of `w + h`) and the same label placement (above the box's top-left corner when it
//! fits, else inside the box). The text is drawn with the `font8x8` bitmap font (scale 1, or 2 for images of
//! 640 px and more) instead of OpenCV's Hershey font and without anti-aliasing, so the pixels are not identical.
//!
//! Everything is clipped at the image borders: boxes partly or fully outside the image, inverted, huge, infinite or
//! NaN coordinates never panic (a box with a NaN coordinate is skipped).

use font8x8::{UnicodeFonts, BASIC_FONTS, LATIN_FONTS};
use image::{Rgb, RgbImage};

/// Ultralytics `Colors().palette` (RGB), indexed by `class_id % 20`.
pub const PALETTE: [[u8; 3]; 20] = [
    [0x04, 0x2A, 0xFF],
    [0x0B, 0xDB, 0xEB],
    [0xF3, 0xF3, 0xF3],
    [0x00, 0xDF, 0xB7],
    [0x11, 0x1F, 0x68],
    [0xFF, 0x6F, 0xDD],
    [0xFF, 0x44, 0x4F],
    [0xCC, 0xED, 0x00],
    [0x00, 0xF3, 0x44],
    [0xBD, 0x00, 0xFF],
    [0x00, 0xB4, 0xFF],
    [0xDD, 0x00, 0xBA],
    [0x00, 0xFF, 0xFF],
    [0x26, 0xC0, 0x00],
    [0x01, 0xFF, 0xB3],
    [0x7D, 0x24, 0xFF],
    [0x7B, 0x00, 0x68],
    [0xFF, 0x1B, 0x6C],
    [0xFC, 0x6D, 0x2F],
    [0xA2, 0xFF, 0x0B],
];

/// Palette entries on which ultralytics writes dark text (`Annotator.dark_colors`, converted from BGR to indices).
const DARK_TEXT_ENTRIES: [usize; 9] = [1, 2, 3, 5, 7, 8, 12, 14, 19];
/// The dark text colour (`(104, 31, 17)` BGR in ultralytics), RGB.
const DARK_TEXT: [u8; 3] = [17, 31, 104];
const LIGHT_TEXT: [u8; 3] = [255, 255, 255];

/// Box / label colour of a class (ultralytics `colors(class_id)`, RGB).
pub fn class_color(class_id: usize) -> [u8; 3] {
    PALETTE[class_id % PALETTE.len()]
}

/// Label text colour on the background of `class_color(class_id)` (ultralytics `Annotator.get_txt_color`).
pub fn text_color(class_id: usize) -> [u8; 3] {
    if DARK_TEXT_ENTRIES.contains(&(class_id % PALETTE.len())) {
        DARK_TEXT
    } else {
        LIGHT_TEXT
    }
}

/// Outline width for a `w` x `h` image (ultralytics `Annotator.lw = max(round((h + w + 3) / 2 * 0.003), 2)` for a
/// 3-channel cv2 image; Python `round`, ties to even).
pub fn line_width(w: u32, h: u32) -> u32 {
    (((h as f64 + w as f64 + 3.0) / 2.0 * 0.003).round_ties_even() as u32).max(2)
}

/// `font8x8` scale for labels on a `w` x `h` image: 2 (16 px glyphs) from 640 px on, else 1 (8 px).
pub fn text_scale(w: u32, h: u32) -> u32 {
    if w.max(h) >= 640 {
        2
    } else {
        1
    }
}

/// Draw `(xyxy, score, class_id, label)` detections (original-image pixels) with the default style: a
/// [`line_width`] outline in [`class_color`] and a filled label `"label 0.87"` (`"0.87"` when `label` is empty).
pub fn draw_detections(img: &mut RgbImage, dets: &[([f32; 4], f32, usize, &str)]) {
    let (lw, scale) = (line_width(img.width(), img.height()), text_scale(img.width(), img.height()));
    for &(xyxy, score, class_id, label) in dets {
        let text = if label.is_empty() { format!("{score:.2}") } else { format!("{label} {score:.2}") };
        draw_box_label(img, xyxy, &text, class_color(class_id), text_color(class_id), lw, scale);
    }
}

/// Convert a coordinate like Python `int()` (truncation), saturating far outside any image; `None` for NaN.
fn to_px(v: f32) -> Option<i64> {
    if v.is_nan() {
        None
    } else {
        Some(v.clamp(-1.0e7, 1.0e7) as i64)
    }
}

/// One box outline of width `lw` (centred on the box edges, like `cv2.rectangle(..., thickness=lw)`) and, when
/// `text` is not empty, a filled label of colour `color` with `text` in `txt_color` (ultralytics
/// `Annotator.box_label`). Nothing is drawn for a box with a NaN coordinate or entirely outside the image.
pub fn draw_box_label(
    img: &mut RgbImage,
    xyxy: [f32; 4],
    text: &str,
    color: [u8; 3],
    txt_color: [u8; 3],
    lw: u32,
    scale: u32,
) {
    let (Some(ax), Some(ay), Some(bx), Some(by)) = (to_px(xyxy[0]), to_px(xyxy[1]), to_px(xyxy[2]), to_px(xyxy[3]))
    else {
        return;
    };
    let (x1, x2, y1, y2) = (ax.min(bx), ax.max(bx), ay.min(by), ay.max(by));
    let (iw, ih) = (img.width() as i64, img.height() as i64);
    let t = lw.max(1) as i64;
    let (ox0, oy0) = (x1 - t / 2, y1 - t / 2);
    let (ox1, oy1) = (x2 - t / 2 + t - 1, y2 - t / 2 + t - 1);
    if ox1 < 0 || oy1 < 0 || ox0 >= iw || oy0 >= ih {
        return; // entirely outside
    }
    fill_rect(img, ox0, oy0, ox1, oy0 + t - 1, color); // top
    fill_rect(img, ox0, oy1 - t + 1, ox1, oy1, color); // bottom
    fill_rect(img, ox0, oy0, ox0 + t - 1, oy1, color); // left
    fill_rect(img, ox1 - t + 1, oy0, ox1, oy1, color); // right
    if text.is_empty() {
        return;
    }
    // Label: background `text + margin` high, above the box when it fits (`outside = p1[1] >= h`), else inside;
    // shifted horizontally to stay in the image when possible.
    let s = scale.max(1) as i64;
    let n_chars = text.chars().count() as i64;
    let (bw, bh) = (n_chars * 8 * s + 2 * s, 8 * s + 2 * s);
    let mut lx = x1.max(0);
    if lx + bw > iw {
        lx = (iw - bw).max(0);
    }
    let ly = if y1 >= bh { y1 - bh } else { y1.max(0) };
    fill_rect(img, lx, ly, lx + bw - 1, ly + bh - 1, color);
    draw_text(img, lx + s, ly + s, text, txt_color, scale);
}

/// Fill the inclusive rectangle `[x0, x1] x [y0, y1]`, clipped to the image.
pub fn fill_rect(img: &mut RgbImage, x0: i64, y0: i64, x1: i64, y1: i64, color: [u8; 3]) {
    let (iw, ih) = (img.width() as i64, img.height() as i64);
    let (xa, xb) = (x0.max(0), x1.min(iw - 1));
    let (ya, yb) = (y0.max(0), y1.min(ih - 1));
    if xa > xb || ya > yb {
        return;
    }
    for y in ya..=yb {
        for x in xa..=xb {
            img.put_pixel(x as u32, y as u32, Rgb(color));
        }
    }
}

/// The 8x8 glyph of `c` (`font8x8` basic + Latin-1 sets), `'?'` when missing.
fn glyph(c: char) -> [u8; 8] {
    BASIC_FONTS.get(c).or_else(|| LATIN_FONTS.get(c)).or_else(|| BASIC_FONTS.get('?')).unwrap_or([0; 8])
}

/// Draw `text` with its top-left corner at `(x, y)` using the `font8x8` bitmap font enlarged `scale` times,
/// clipped to the image (only the set glyph pixels are written, the background is left as is).
pub fn draw_text(img: &mut RgbImage, x: i64, y: i64, text: &str, color: [u8; 3], scale: u32) {
    let s = scale.max(1) as i64;
    for (i, c) in text.chars().enumerate() {
        let gx = x + i as i64 * 8 * s;
        for (row, bits) in glyph(c).iter().enumerate() {
            for col in 0..8 {
                if (bits >> col) & 1 == 1 {
                    let (px, py) = (gx + col * s, y + row as i64 * s);
                    fill_rect(img, px, py, px + s - 1, py + s - 1, color);
                }
            }
        }
    }
}
