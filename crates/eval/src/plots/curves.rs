//! Precision-recall and metric-confidence curves (`plot_pr_curve`, `plot_mc_curve`, ultralytics 8.4.190).

use std::path::Path;

use plotters::prelude::*;

use super::{ensure_font, plot_err, write_png_atomic, FONT, TAB10};
use crate::error::EvalError;
use crate::ultra::{smooth, NIOU};

const W: u32 = 1350;
const H: u32 = 900;

struct Series<'a> {
    y: &'a [f64],
    color: RGBColor,
    width: u32,
    label: Option<String>,
}

fn draw_curves(
    path: &Path,
    title: &str,
    xlabel: &str,
    ylabel: &str,
    px: &[f64],
    series: &[Series<'_>],
) -> Result<(), EvalError> {
    ensure_font()?;
    let mut buf = vec![255u8; (W * H * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
        let e = |e| plot_err(path, e);
        root.fill(&WHITE).map_err(e)?;
        let (plot_area, legend_area) = root.split_horizontally(W * 70 / 100);
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(title, (FONT, 30))
            .margin(20)
            .x_label_area_size(60)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..1f64, 0f64..1f64)
            .map_err(e)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(xlabel)
            .y_desc(ylabel)
            .label_style((FONT, 18))
            .axis_desc_style((FONT, 22))
            .draw()
            .map_err(e)?;
        for s in series {
            let style = ShapeStyle { color: s.color.to_rgba(), filled: false, stroke_width: s.width };
            let pts = px.iter().zip(s.y).map(|(&x, &y)| (x, y.clamp(0.0, 1.0)));
            chart.draw_series(LineSeries::new(pts, style)).map_err(e)?;
        }
        // Legend to the right of the axes, as `legend(bbox_to_anchor=(1.04, 1), loc="upper left")`.
        let font = (FONT, 18).into_font();
        let mut y = 70i32;
        for s in series.iter().filter(|s| s.label.is_some()) {
            let style = ShapeStyle { color: s.color.to_rgba(), filled: false, stroke_width: s.width };
            legend_area.draw(&PathElement::new(vec![(10, y), (45, y)], style)).map_err(e)?;
            let label = s.label.as_deref().unwrap_or("");
            legend_area.draw(&Text::new(label, (55, y - 9), font.clone())).map_err(e)?;
            y += 28;
        }
        root.present().map_err(e)?;
    }
    write_png_atomic(path, buf, W, H)
}

/// `plot_pr_curve(px, py, ap, save_dir, names)`: per-class precision-recall curves (`prec_values` rows, thin, with
/// `"{name} {ap50:.3f}"` legend entries when there are 1..=20 names, grey and unlabelled otherwise) and their mean
/// (thick blue, `"all classes {mAP50:.3f} mAP@0.5"`). `names[i]` names row `i`.
pub fn plot_pr_curve(
    path: &Path,
    px: &[f64],
    prec_values: &[Vec<f64>],
    ap: &[[f64; NIOU]],
    names: &[String],
) -> Result<(), EvalError> {
    let legend = !names.is_empty() && names.len() < 21;
    let mut series: Vec<Series<'_>> = prec_values
        .iter()
        .enumerate()
        .map(|(i, y)| Series {
            y,
            color: if legend { TAB10[i % 10] } else { RGBColor(128, 128, 128) },
            width: 1,
            label: if legend {
                Some(format!(
                    "{} {:.3}",
                    names.get(i).map(String::as_str).unwrap_or("?"),
                    ap.get(i).map_or(0.0, |a| a[0])
                ))
            } else {
                None
            },
        })
        .collect();
    let mean: Vec<f64> = (0..px.len())
        .map(|k| prec_values.iter().map(|r| r[k]).sum::<f64>() / prec_values.len().max(1) as f64)
        .collect();
    let map50 = if ap.is_empty() { f64::NAN } else { ap.iter().map(|a| a[0]).sum::<f64>() / ap.len() as f64 };
    series.push(Series { y: &mean, color: BLUE, width: 3, label: Some(format!("all classes {map50:.3} mAP@0.5")) });
    draw_curves(path, "Precision-Recall Curve", "Recall", "Precision", px, &series)
}

/// `plot_mc_curve(px, py, save_dir, names, xlabel, ylabel)`: per-class metric-confidence curves and the smoothed
/// mean (`smooth(py.mean(0), 0.1)`, thick blue, `"all classes {max:.2f} at {px[argmax]:.3f}"`). Title
/// `"{ylabel}-Confidence Curve"`.
pub fn plot_mc_curve(
    path: &Path,
    px: &[f64],
    py: &[Vec<f64>],
    names: &[String],
    xlabel: &str,
    ylabel: &str,
) -> Result<(), EvalError> {
    let legend = !names.is_empty() && names.len() < 21;
    let mut series: Vec<Series<'_>> = py
        .iter()
        .enumerate()
        .map(|(i, y)| Series {
            y,
            color: if legend { TAB10[i % 10] } else { RGBColor(128, 128, 128) },
            width: 1,
            label: legend.then(|| names.get(i).cloned().unwrap_or_default()),
        })
        .collect();
    let mean: Vec<f64> = (0..px.len()).map(|k| py.iter().map(|r| r[k]).sum::<f64>() / py.len().max(1) as f64).collect();
    let y = smooth(&mean, 0.1);
    let (mut im, mut best) = (0, f64::NEG_INFINITY);
    for (i, &v) in y.iter().enumerate() {
        if v > best {
            (im, best) = (i, v);
        }
    }
    let at = px.get(im).copied().unwrap_or(0.0);
    series.push(Series { y: &y, color: BLUE, width: 3, label: Some(format!("all classes {best:.2} at {at:.3}")) });
    draw_curves(path, &format!("{ylabel}-Confidence Curve"), xlabel, ylabel, px, &series)
}
