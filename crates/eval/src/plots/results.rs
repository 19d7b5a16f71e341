//! `results.png` of a training run, like ultralytics' `plot_results`: one small panel per `results.csv` column
//! (train losses, validation metrics), the value per epoch as a line with markers.

use std::path::Path;

use plotters::prelude::*;

use super::{ensure_font, plot_err, write_png_atomic, FONT, TAB10};
use crate::error::EvalError;

const PANEL_W: u32 = 400;
const PANEL_H: u32 = 300;

/// Draws `panels` (`(title, [(epoch, value)])`, five per row) into a PNG at `path`, written atomically. Panels
/// without points show their title only; non-finite values are left out.
pub fn plot_results(path: &Path, panels: &[(String, Vec<(f64, f64)>)]) -> Result<(), EvalError> {
    ensure_font()?;
    let cols = 5u32;
    let rows = (panels.len() as u32).div_ceil(cols).max(1);
    let (w, h) = (PANEL_W * cols, PANEL_H * rows);
    let mut buf = vec![255u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
        let e = |e| plot_err(path, e);
        root.fill(&WHITE).map_err(e)?;
        let areas = root.split_evenly((rows as usize, cols as usize));
        for ((title, pts), area) in panels.iter().zip(areas) {
            let pts: Vec<(f64, f64)> = pts.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
            let (x0, x1) = pts.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.0), b.max(p.0)));
            let (y0, y1) = pts.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.1), b.max(p.1)));
            let (x0, x1) = if pts.is_empty() { (0.0, 1.0) } else { (x0, if x1 > x0 { x1 } else { x0 + 1.0 }) };
            // a flat series gets a visible range around its value
            let spread = (y1 - y0).abs();
            let pad = if pts.is_empty() {
                0.5
            } else if spread < 1e-12 {
                (y0.abs() * 0.1).max(0.05)
            } else {
                spread * 0.05
            };
            let (y0, y1) = if pts.is_empty() { (0.0, 1.0) } else { (y0 - pad, y1 + pad) };
            let mut chart = ChartBuilder::on(&area)
                .caption(title, (FONT, 18))
                .margin(8)
                .x_label_area_size(28)
                .y_label_area_size(52)
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(e)?;
            chart.configure_mesh().disable_mesh().label_style((FONT, 12)).draw().map_err(e)?;
            let style = ShapeStyle { color: TAB10[0].to_rgba(), filled: true, stroke_width: 2 };
            chart.draw_series(LineSeries::new(pts.iter().copied(), style)).map_err(e)?;
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, style))).map_err(e)?;
        }
        root.present().map_err(e)?;
    }
    write_png_atomic(path, buf, w, h)
}
