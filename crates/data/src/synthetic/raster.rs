//! Aliased rasterisation of the synthetic shapes into horizontal spans (pixel centres inside the shape, even-odd
//! rule), so every pixel is either fully the object's colour or not touched: no anti-aliasing, exact masks.

/// A horizontal run of pixels `[x0, x1)` on row `y` (may lie partly outside the image; clip when painting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Row.
    pub y: i32,
    /// First pixel.
    pub x0: i32,
    /// One past the last pixel.
    pub x1: i32,
}

/// A shape in image coordinates.
#[derive(Clone, Debug)]
pub enum Shape {
    /// Closed polygon (even-odd fill).
    Polygon(Vec<[f32; 2]>),
    /// Rotated ellipse: centre, semi-axes `a` (along `angle`) and `b`.
    Ellipse { c: [f32; 2], a: f32, b: f32, angle: f32 },
    /// Annulus: centre, outer and inner radius.
    Ring { c: [f32; 2], r_out: f32, r_in: f32 },
    /// Several polygons filled with the non-zero union (used for the cross and thick lines).
    Union(Vec<Vec<[f32; 2]>>),
}

fn polygon_bounds(pts: &[[f32; 2]]) -> (f32, f32) {
    pts.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), p| (a.min(p[1]), b.max(p[1])))
}

/// Pixel spans of an even-odd polygon: for each row centre `y + 0.5`, crossings with every edge, sorted, filled
/// pairwise; pixel `x` is inside when its centre `x + 0.5` lies in `[xa, xb)`.
fn polygon_spans(pts: &[[f32; 2]], out: &mut Vec<Span>) {
    let (ymin, ymax) = polygon_bounds(pts);
    if !ymin.is_finite() || pts.len() < 3 {
        return;
    }
    let mut xs: Vec<f32> = Vec::with_capacity(16);
    for y in (ymin - 0.5).floor() as i32..=(ymax - 0.5).ceil() as i32 {
        let yc = y as f32 + 0.5;
        xs.clear();
        for i in 0..pts.len() {
            let (p, q) = (pts[i], pts[(i + 1) % pts.len()]);
            if (p[1] <= yc) != (q[1] <= yc) {
                xs.push(p[0] + (yc - p[1]) / (q[1] - p[1]) * (q[0] - p[0]));
            }
        }
        xs.sort_by(f32::total_cmp);
        for pair in xs.chunks_exact(2) {
            let x0 = (pair[0] - 0.5).ceil() as i32;
            let x1 = (pair[1] - 0.5).ceil() as i32;
            if x1 > x0 {
                out.push(Span { y, x0, x1 });
            }
        }
    }
}

/// Merge overlapping spans of the same row (input sorted by row then x0).
fn merge(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_by_key(|s| (s.y, s.x0));
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans {
        match out.last_mut() {
            Some(l) if l.y == s.y && s.x0 <= l.x1 => l.x1 = l.x1.max(s.x1),
            _ => out.push(s),
        }
    }
    out
}

/// Spans of a conic row: `x` range where `A x² + B x + C <= 0` in pixel-centre coordinates, for ellipses.
fn ellipse_spans(c: [f32; 2], a: f32, b: f32, angle: f32, out: &mut Vec<Span>) {
    let (s, co) = angle.sin_cos();
    // point p inside iff ((dx co + dy s)/a)² + ((-dx s + dy co)/b)² <= 1
    let (ia2, ib2) = (1.0 / (a * a), 1.0 / (b * b));
    let qa = co * co * ia2 + s * s * ib2; // coefficient of dx²
    let ext = a.max(b);
    for y in (c[1] - ext - 0.5).floor() as i32..=(c[1] + ext - 0.5).ceil() as i32 {
        let dy = y as f32 + 0.5 - c[1];
        let qb = 2.0 * dy * co * s * (ia2 - ib2); // coefficient of dx
        let qc = dy * dy * (s * s * ia2 + co * co * ib2) - 1.0;
        let disc = qb * qb - 4.0 * qa * qc;
        if disc < 0.0 {
            continue;
        }
        let r = disc.sqrt();
        let (d0, d1) = ((-qb - r) / (2.0 * qa), (-qb + r) / (2.0 * qa));
        let x0 = (c[0] + d0 - 0.5).ceil() as i32;
        let x1 = (c[0] + d1 - 0.5).floor() as i32 + 1;
        if x1 > x0 {
            out.push(Span { y, x0, x1 });
        }
    }
}

/// Pixel spans of a shape (rows ascending, spans of a row disjoint and ascending).
pub fn spans(shape: &Shape) -> Vec<Span> {
    let mut out = Vec::new();
    match shape {
        Shape::Polygon(p) => polygon_spans(p, &mut out),
        Shape::Union(ps) => {
            for p in ps {
                polygon_spans(p, &mut out);
            }
            return merge(out);
        }
        Shape::Ellipse { c, a, b, angle } => ellipse_spans(*c, *a, *b, *angle, &mut out),
        Shape::Ring { c, r_out, r_in } => {
            let mut outer = Vec::new();
            let mut inner = Vec::new();
            ellipse_spans(*c, *r_out, *r_out, 0.0, &mut outer);
            ellipse_spans(*c, *r_in, *r_in, 0.0, &mut inner);
            let mut j = 0;
            for s in outer {
                while j < inner.len() && inner[j].y < s.y {
                    j += 1;
                }
                match inner.get(j).filter(|h| h.y == s.y && h.x1 > h.x0) {
                    Some(h) => {
                        if h.x0 > s.x0 {
                            out.push(Span { y: s.y, x0: s.x0, x1: h.x0.min(s.x1) });
                        }
                        if s.x1 > h.x1 {
                            out.push(Span { y: s.y, x0: h.x1.max(s.x0), x1: s.x1 });
                        }
                    }
                    None => out.push(s),
                }
            }
        }
    }
    out.sort_by_key(|s| (s.y, s.x0));
    out
}

/// Clip a span to an image `w` × `h`; `None` when nothing is left.
pub fn clip(s: Span, w: u32, h: u32) -> Option<(usize, usize, usize)> {
    if s.y < 0 || s.y >= h as i32 {
        return None;
    }
    let x0 = s.x0.max(0);
    let x1 = s.x1.min(w as i32);
    (x1 > x0).then_some((s.y as usize, x0 as usize, x1 as usize))
}

/// Regular polygon / star vertices: `n` points at radius `r` (alternating with `r_inner` when given), rotated.
pub fn star_points(c: [f32; 2], n: usize, r: f32, r_inner: Option<f32>, angle: f32) -> Vec<[f32; 2]> {
    let k = if r_inner.is_some() { 2 * n } else { n };
    (0..k)
        .map(|i| {
            let t = angle + i as f32 * std::f32::consts::TAU / k as f32;
            let rr = if i % 2 == 1 { r_inner.unwrap_or(r) } else { r };
            [c[0] + rr * t.cos(), c[1] + rr * t.sin()]
        })
        .collect()
}

/// A rotated rectangle of half-extents `hx` × `hy` around `c`.
pub fn rect_points(c: [f32; 2], hx: f32, hy: f32, angle: f32) -> Vec<[f32; 2]> {
    let (s, co) = angle.sin_cos();
    [[-hx, -hy], [hx, -hy], [hx, hy], [-hx, hy]]
        .iter()
        .map(|p| [c[0] + p[0] * co - p[1] * s, c[1] + p[0] * s + p[1] * co])
        .collect()
}
