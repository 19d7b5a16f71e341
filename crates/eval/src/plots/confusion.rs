//! The confusion-matrix heat map (`ConfusionMatrix.plot`, ultralytics 8.4.190).

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{ensure_font, plot_err, write_png_atomic, FONT};
use crate::error::EvalError;
use crate::ultra::ConfusionMatrix;

const W: u32 = 1200;
const H: u32 = 900;

/// matplotlib's `Blues` colormap (ColorBrewer stops), `t` in `[0, 1]`.
fn blues(t: f64) -> RGBColor {
    const S: [(u8, u8, u8); 9] = [
        (0xf7, 0xfb, 0xff),
        (0xde, 0xeb, 0xf7),
        (0xc6, 0xdb, 0xef),
        (0x9e, 0xca, 0xe1),
        (0x6b, 0xae, 0xd6),
        (0x42, 0x92, 0xc6),
        (0x21, 0x71, 0xb5),
        (0x08, 0x51, 0x9c),
        (0x08, 0x30, 0x6b),
    ];
    let x = t.clamp(0.0, 1.0) * 8.0;
    let i = (x.floor() as usize).min(7);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    RGBColor(mix(S[i].0, S[i + 1].0), mix(S[i].1, S[i + 1].1), mix(S[i].2, S[i + 1].2))
}

/// `ConfusionMatrix.plot(normalize)`: the matrix as a `Blues` heat map (rows = predicted, columns = true, the last
/// being `background`), columns normalised when `normalize` (cells `< 0.005` left blank), the value printed in each
/// cell below 30 classes, class names on both axes below 99 ticks, and for 100+ classes every `max(2, nc // 60)`-th
/// class kept (plus background). `names` has one entry per class. Title `Confusion Matrix[ Normalized]`.
pub fn plot_confusion_matrix(
    path: &Path,
    cm: &ConfusionMatrix,
    names: &[String],
    normalize: bool,
) -> Result<(), EvalError> {
    ensure_font()?;
    let n_all = cm.nc + 1;
    let full: Vec<f64> = if normalize {
        cm.normalized()
    } else {
        cm.matrix.iter().map(|&v| if v < 0.005 { f64::NAN } else { v }).collect()
    };
    let mut keep: Vec<usize> = (0..cm.nc).collect();
    let mut kept_names: Vec<String> =
        (0..cm.nc).map(|i| names.get(i).cloned().unwrap_or_else(|| i.to_string())).collect();
    if cm.nc >= 100 {
        let k = (cm.nc / 60).max(2);
        keep = (0..cm.nc).step_by(k).collect();
        kept_names = keep.iter().map(|&i| kept_names[i].clone()).collect();
    }
    keep.push(cm.nc);
    let n = keep.len();
    let val = |r: usize, c: usize| full[keep[r] * n_all + keep[c]];
    let vmax = if normalize { 1.0 } else { full.iter().copied().filter(|v| !v.is_nan()).fold(0.0, f64::max).max(1.0) };
    let show_ticks = n < 99;
    let tick_px = ((15.0 - 0.1 * n as f64).max(6.0) * 1.4) as u32;
    let (left, top, right_pad, bottom) =
        (if show_ticks { 160 } else { 60 }, 70, 150, if show_ticks { 170 } else { 60 });
    let side = ((W - left - right_pad).min(H - top - bottom)) as f64;
    let cell = side / n as f64;
    let mut buf = vec![255u8; (W * H * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
        let e = |e| plot_err(path, e);
        root.fill(&WHITE).map_err(e)?;
        let px = |i: usize| (i as f64 * cell) as i32;
        for r in 0..n {
            for c in 0..n {
                let v = val(r, c);
                if v.is_nan() {
                    continue;
                }
                let (x0, y0) = (left as i32 + px(c), top as i32 + px(r));
                let (x1, y1) = (left as i32 + px(c + 1), top as i32 + px(r + 1));
                root.draw(&Rectangle::new([(x0, y0), (x1, y1)], blues(v / vmax).filled())).map_err(e)?;
                if n < 30 {
                    let txt = if normalize { format!("{v:.2}") } else { format!("{}", v as i64) };
                    let color = if v > 0.45 * vmax { WHITE } else { BLACK };
                    let style = (FONT, 16).into_font().color(&color).pos(Pos::new(HPos::Center, VPos::Center));
                    root.draw(&Text::new(txt, ((x0 + x1) / 2, (y0 + y1) / 2), style)).map_err(e)?;
                }
            }
        }
        let title = if normalize { "Confusion Matrix Normalized" } else { "Confusion Matrix" };
        let ts = (FONT, 24).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
        let mid_x = left as i32 + (side / 2.0) as i32;
        root.draw(&Text::new(title, (mid_x, top as i32 / 2), ts.clone())).map_err(e)?;
        let axis_y = top as i32 + side as i32 + bottom as i32 - 25;
        root.draw(&Text::new("True", (mid_x, axis_y), ts.clone())).map_err(e)?;
        let ys = (FONT, 24)
            .into_font()
            .transform(FontTransform::Rotate270)
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Center));
        root.draw(&Text::new("Predicted", (22, top as i32 + (side / 2.0) as i32), ys)).map_err(e)?;
        if show_ticks {
            let mut labels = kept_names;
            labels.push("background".into());
            let tf = (FONT, tick_px).into_font();
            for (i, l) in labels.iter().enumerate() {
                let centre = (px(i) + px(i + 1)) / 2;
                let xs =
                    tf.clone().transform(FontTransform::Rotate90).color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
                let yx = top as i32 + side as i32 + 8;
                root.draw(&Text::new(l.as_str(), (left as i32 + centre, yx), xs)).map_err(e)?;
                let ys = tf.clone().color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center));
                root.draw(&Text::new(l.as_str(), (left as i32 - 8, top as i32 + centre), ys)).map_err(e)?;
            }
        }
        // Colour bar.
        let (bx0, bx1) = (left as i32 + side as i32 + 40, left as i32 + side as i32 + 70);
        let steps = 200;
        for s in 0..steps {
            let t = 1.0 - s as f64 / steps as f64;
            let y0 = top as i32 + (s as f64 * side / steps as f64) as i32;
            let y1 = top as i32 + ((s + 1) as f64 * side / steps as f64) as i32;
            root.draw(&Rectangle::new([(bx0, y0), (bx1, y1)], blues(t).filled())).map_err(e)?;
        }
        let cs = (FONT, 16).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
        for q in 0..=4 {
            let v = vmax * q as f64 / 4.0;
            let y = top as i32 + ((1.0 - q as f64 / 4.0) * side) as i32;
            let label = if normalize { format!("{v:.1}") } else { format!("{v:.0}") };
            root.draw(&Text::new(label, (bx1 + 6, y), cs.clone())).map_err(e)?;
        }
        root.present().map_err(e)?;
    }
    write_png_atomic(path, buf, W, H)
}
