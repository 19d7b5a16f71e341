//! Procedural rendering of one synthetic image with exact, tight boxes.
//!
//! Recipe of [`Recipe::Full`] (all draws from one `ChaCha8Rng` per image, see [`image_rng`]; [`Recipe::Easy`] draws
//! in the same order with the numbers of its table):
//! 1. size: width and height independently uniform in `256..=640`;
//! 2. background: a linear two-colour gradient, stripes of two colours (period 6–48 px, any angle) or smooth
//!    colour blotches (bilinear grid of random colours);
//! 3. distractors (0–5): thick line segments and irregular 7–12-vertex blobs in random colours (never labelled);
//! 4. objects (none for 5% of images, else 1–12 attempts): class uniform over [`CLASS_NAMES`], size (circumscribed
//!    diameter) log-uniform in `[8, 0.8 min(w, h)]` px, centre uniform in the image, rotation uniform, colour
//!    random but at least 100 (sum over RGB) away from the mean background under it; later objects occlude
//!    earlier ones;
//! 5. sensor noise: a per-image amplitude `0..=20`, uniform per pixel and channel.
//!
//! Rasterisation is aliased (pixel centres inside the shape, no anti-aliasing), so every pixel belongs to at most
//! one object or to the background: the label box of an object is the tight box `[x1, y1, x2, y2)` (pixel edges,
//! `x2 = max x + 1`) of the pixels it owns in the final image.
//!
//! Occlusion rule: a placement is accepted only if (a) at least 60% of the new object's pixels fall inside the
//! image and at least [`MIN_VISIBLE`] do, and (b) every object already drawn keeps at least [`KEEP_FRACTION`] of
//! the pixels it had when drawn and at least [`MIN_VISIBLE`] pixels. Otherwise size, centre and rotation are
//! re-drawn (up to 6 times) and then the object is left out. So no object ends up almost fully occluded and
//! every object pixel in the image belongs to a labelled object.

use image::RgbImage;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::raster::{clip, rect_points, spans, star_points, Shape, Span};

/// Class names of the synthetic dataset, in class-index order.
pub const CLASS_NAMES: [&str; 8] = ["circle", "square", "triangle", "star", "cross", "ring", "hexagon", "ellipse"];
/// Classes of the [`Recipe::Easy`] dataset: the first three of [`CLASS_NAMES`].
pub const EASY_CLASSES: usize = 3;

/// Which synthetic dataset: the full one (`synthetic`) or the easy one (`synthetic-easy`) that a model learns from
/// scratch within minutes on a CPU (the README's first command trains on it).
///
/// | | `Full` | `Easy` |
/// |---|---|---|
/// | image size (w, h independently) | 256..=640 | 160..=320 |
/// | background | gradient, stripes or blotches | gradient |
/// | distractors | 0–5 | none |
/// | objects (attempts) | 1–12, none in 5 % of images | 1–4 |
/// | classes | 8 ([`CLASS_NAMES`]) | 3 ([`EASY_CLASSES`]) |
/// | diameter, log-uniform | 8 px .. 0.8·min(w, h) | 0.2·min(w, h) .. 0.5·min(w, h) |
/// | noise amplitude | 0..=20 | 0..=8 |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Recipe {
    /// `synthetic[:N][@SEED]`.
    #[default]
    Full,
    /// `synthetic-easy[:N][@SEED]`.
    Easy,
}

impl Recipe {
    /// The `--data` name: `synthetic` or `synthetic-easy`.
    pub fn name(self) -> &'static str {
        match self {
            Recipe::Full => "synthetic",
            Recipe::Easy => "synthetic-easy",
        }
    }

    /// Class names, in class-index order.
    pub fn names(self) -> &'static [&'static str] {
        match self {
            Recipe::Full => &CLASS_NAMES,
            Recipe::Easy => &CLASS_NAMES[..EASY_CLASSES],
        }
    }

    fn params(self) -> Params {
        match self {
            Recipe::Full => Params {
                size: (256, 640),
                backgrounds: 3,
                distractors: 5,
                objects: 12,
                empty_p: 0.05,
                diam_frac: (0.0, 0.8),
                noise: 20,
                key: 0,
            },
            Recipe::Easy => Params {
                size: (160, 320),
                backgrounds: 1,
                distractors: 0,
                objects: 4,
                empty_p: 0.0,
                diam_frac: (0.2, 0.5),
                noise: 8,
                key: 0x00EA_0000_0000_0000,
            },
        }
    }
}

/// The numbers of a [`Recipe`] (see its table).
struct Params {
    size: (u32, u32),
    backgrounds: u32,
    distractors: u32,
    objects: u32,
    empty_p: f64,
    /// Diameter range as fractions of min(w, h); the lower end is at least 8 px.
    diam_frac: (f32, f32),
    noise: i32,
    /// XORed into the dataset seed (bits 48..56, below the split's) so the recipes draw different images.
    key: u64,
}

/// An object must keep at least this fraction of its pixels when later objects are drawn over it.
pub const KEEP_FRACTION: f32 = 0.5;
/// Minimum number of visible pixels of any object.
pub const MIN_VISIBLE: usize = 12;

/// One rendered synthetic image.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The image, RGB, `w × h`.
    pub img: RgbImage,
    /// Tight boxes `[x1, y1, x2, y2]` in pixel edges (`x2`, `y2` exclusive), drawing order.
    pub boxes: Vec<[u32; 4]>,
    /// Class of each box.
    pub cls: Vec<u32>,
    /// Visible pixel count of each box's object.
    pub visible: Vec<usize>,
    /// Per-pixel owner (`0` background, `k` = box `k - 1`), row-major `h × w`; only from [`render_with_mask`].
    pub owner: Option<Vec<u16>>,
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The generator of image `index` of split `split` (0 train, 1 val) for dataset seed `seed`: a `ChaCha8Rng`
/// keyed by SplitMix64 of `(seed, split, index)`, so every image is independent of every other.
pub fn image_rng(seed: u64, split: u32, index: u64) -> ChaCha8Rng {
    let mut s = seed ^ (u64::from(split) << 56) ^ 0x5943_4C4F_3236_0000;
    s = splitmix64(&mut s) ^ index;
    let mut key = [0u8; 32];
    for c in key.chunks_exact_mut(8) {
        c.copy_from_slice(&splitmix64(&mut s).to_le_bytes());
    }
    ChaCha8Rng::from_seed(key)
}

fn rand_color(rng: &mut ChaCha8Rng) -> [u8; 3] {
    let v = rng.next_u32().to_le_bytes();
    [v[0], v[1], v[2]]
}

fn paint(buf: &mut [u8], w: u32, h: u32, sp: &[Span], c: [u8; 3]) {
    for &s in sp {
        if let Some((y, x0, x1)) = clip(s, w, h) {
            let row = &mut buf[(y * w as usize + x0) * 3..(y * w as usize + x1) * 3];
            for px in row.chunks_exact_mut(3) {
                px.copy_from_slice(&c);
            }
        }
    }
}

fn background(rng: &mut ChaCha8Rng, w: u32, h: u32, kinds: u32) -> Vec<u8> {
    let (wu, hu) = (w as usize, h as usize);
    let mut buf = vec![0u8; wu * hu * 3];
    let (c0, c1) = (rand_color(rng), rand_color(rng));
    let angle: f32 = rng.random_range(0.0..std::f32::consts::TAU);
    let (s, co) = angle.sin_cos();
    match rng.random_range(0..kinds) {
        0 => {
            let corners = [0.0f32, w as f32 * co, h as f32 * s, w as f32 * co + h as f32 * s];
            let lo = corners.iter().copied().fold(f32::INFINITY, f32::min);
            let span = corners.iter().copied().fold(f32::NEG_INFINITY, f32::max) - lo;
            for y in 0..hu {
                for x in 0..wu {
                    let t = ((x as f32 * co + y as f32 * s) - lo) / span.max(1.0);
                    let px = &mut buf[(y * wu + x) * 3..][..3];
                    for k in 0..3 {
                        px[k] = (c0[k] as f32 + (c1[k] as f32 - c0[k] as f32) * t) as u8;
                    }
                }
            }
        }
        1 => {
            let period: f32 = rng.random_range(6.0..48.0);
            for y in 0..hu {
                for x in 0..wu {
                    let band = ((x as f32 * co + y as f32 * s) / period).floor() as i64;
                    buf[(y * wu + x) * 3..][..3].copy_from_slice(if band % 2 == 0 { &c0 } else { &c1 });
                }
            }
        }
        _ => {
            let cell: usize = rng.random_range(64..=160);
            let (gw, gh) = (wu / cell + 2, hu / cell + 2);
            let grid: Vec<[u8; 3]> = (0..gw * gh).map(|_| rand_color(rng)).collect();
            for y in 0..hu {
                let (gy, fy) = (y / cell, (y % cell) as f32 / cell as f32);
                for x in 0..wu {
                    let (gx, fx) = (x / cell, (x % cell) as f32 / cell as f32);
                    let g = |i: usize, j: usize| grid[j * gw + i];
                    let (a, b, c, d) = (g(gx, gy), g(gx + 1, gy), g(gx, gy + 1), g(gx + 1, gy + 1));
                    let px = &mut buf[(y * wu + x) * 3..][..3];
                    for k in 0..3 {
                        let top = a[k] as f32 + (b[k] as f32 - a[k] as f32) * fx;
                        let bot = c[k] as f32 + (d[k] as f32 - c[k] as f32) * fx;
                        px[k] = (top + (bot - top) * fy) as u8;
                    }
                }
            }
        }
    }
    buf
}

fn distractor(rng: &mut ChaCha8Rng, w: u32, h: u32) -> Shape {
    let c = [rng.random_range(0.0..w as f32), rng.random_range(0.0..h as f32)];
    let diag = ((w * w + h * h) as f32).sqrt();
    if rng.random_bool(0.5) {
        let len = rng.random_range(0.15..0.8) * diag / 2.0;
        let thick = rng.random_range(0.5..3.0f32);
        Shape::Polygon(rect_points(c, len, thick, rng.random_range(0.0..std::f32::consts::PI)))
    } else {
        let r = rng.random_range(6.0..0.25 * w.min(h) as f32);
        let n = rng.random_range(7..=12usize);
        let a0: f32 = rng.random_range(0.0..std::f32::consts::TAU);
        let pts = (0..n)
            .map(|i| {
                let t = a0 + (i as f32 + rng.random_range(-0.3..0.3)) * std::f32::consts::TAU / n as f32;
                let rr = r * rng.random_range(0.3..1.0);
                [c[0] + rr * t.cos(), c[1] + rr * t.sin()]
            })
            .collect();
        Shape::Polygon(pts)
    }
}

/// The shape of an object of class `cls`, circumscribed radius `r`, centre `c`, rotation `angle`.
fn object_shape(rng: &mut ChaCha8Rng, cls: u32, c: [f32; 2], r: f32, angle: f32) -> Shape {
    match cls {
        0 => Shape::Ellipse { c, a: r, b: r, angle: 0.0 },
        1 => Shape::Polygon(rect_points(
            c,
            r * std::f32::consts::FRAC_1_SQRT_2,
            r * std::f32::consts::FRAC_1_SQRT_2,
            angle,
        )),
        2 => Shape::Polygon(star_points(c, 3, r, None, angle)),
        3 => Shape::Polygon(star_points(c, 5, r, Some(r * rng.random_range(0.38..0.5)), angle)),
        4 => {
            let t = r * rng.random_range(0.18..0.3);
            Shape::Union(vec![rect_points(c, r, t, angle), rect_points(c, t, r, angle)])
        }
        5 => Shape::Ring { c, r_out: r, r_in: r * rng.random_range(0.5..0.7) },
        6 => Shape::Polygon(star_points(c, 6, r, None, angle)),
        _ => Shape::Ellipse { c, a: r, b: r * rng.random_range(0.35..0.6), angle },
    }
}

/// Render image `index` of split `split` (0 train, 1 val) of the full synthetic dataset with seed `seed`.
pub fn render(seed: u64, split: u32, index: u64) -> Rendered {
    render_impl(Recipe::Full, seed, split, index, false)
}

/// [`render`] of either recipe.
pub fn render_recipe(recipe: Recipe, seed: u64, split: u32, index: u64) -> Rendered {
    render_impl(recipe, seed, split, index, false)
}

/// [`render_recipe`] that also returns the per-pixel owner mask (for tests and debugging).
pub fn render_with_mask(recipe: Recipe, seed: u64, split: u32, index: u64) -> Rendered {
    render_impl(recipe, seed, split, index, true)
}

fn render_impl(recipe: Recipe, seed: u64, split: u32, index: u64, keep_owner: bool) -> Rendered {
    let p = recipe.params();
    let mut rng = image_rng(seed ^ p.key, split, index);
    let w: u32 = rng.random_range(p.size.0..=p.size.1);
    let h: u32 = rng.random_range(p.size.0..=p.size.1);
    let (wu, hu) = (w as usize, h as usize);
    let mut buf = background(&mut rng, w, h, p.backgrounds);
    for _ in 0..rng.random_range(0..=p.distractors) {
        let s = distractor(&mut rng, w, h);
        let c = rand_color(&mut rng);
        paint(&mut buf, w, h, &spans(&s), c);
    }
    let mut owner = vec![0u16; wu * hu];
    let mut cls: Vec<u32> = Vec::new();
    let mut area: Vec<usize> = Vec::new(); // pixels when drawn
    let mut visible: Vec<usize> = Vec::new();
    let n_obj = if rng.random_bool(p.empty_p) { 0 } else { rng.random_range(1..=p.objects) };
    let m = w.min(h) as f32;
    let (lmin, lmax) = ((p.diam_frac.0 * m).max(8.0).ln(), (p.diam_frac.1 * m).ln());
    let mut covered = Vec::new();
    for _ in 0..n_obj {
        let c = rng.random_range(0..recipe.names().len() as u32);
        for _try in 0..6 {
            let r = rng.random_range(lmin..lmax).exp() / 2.0;
            let centre = [rng.random_range(0.0..w as f32), rng.random_range(0.0..h as f32)];
            let angle = rng.random_range(0.0..std::f32::consts::TAU);
            let sp = spans(&object_shape(&mut rng, c, centre, r, angle));
            let full: usize = sp.iter().map(|s| (s.x1 - s.x0) as usize).sum();
            covered.clear();
            covered.resize(cls.len() + 1, 0usize);
            let mut inside = 0usize;
            let mut mean = [0u64; 3];
            for &s in &sp {
                if let Some((y, x0, x1)) = clip(s, w, h) {
                    inside += x1 - x0;
                    for x in x0..x1 {
                        let i = y * wu + x;
                        covered[owner[i] as usize] += 1;
                        for k in 0..3 {
                            mean[k] += buf[i * 3 + k] as u64;
                        }
                    }
                }
            }
            let ok_self = inside >= MIN_VISIBLE && inside as f32 >= 0.6 * full as f32;
            let ok_others = (0..cls.len()).all(|j| {
                let left = visible[j] - covered[j + 1];
                left >= MIN_VISIBLE && left as f32 >= KEEP_FRACTION * area[j] as f32
            });
            if !(ok_self && ok_others) {
                continue;
            }
            let mean = mean.map(|m| (m / inside as u64) as i32);
            let mut colour = rand_color(&mut rng);
            for _ in 0..8 {
                let d: i32 = (0..3).map(|k| (colour[k] as i32 - mean[k]).abs()).sum();
                if d >= 100 {
                    break;
                }
                colour = rand_color(&mut rng);
            }
            let id = cls.len() as u16 + 1;
            for j in 0..cls.len() {
                visible[j] -= covered[j + 1];
            }
            paint(&mut buf, w, h, &sp, colour);
            for &s in &sp {
                if let Some((y, x0, x1)) = clip(s, w, h) {
                    owner[y * wu + x0..y * wu + x1].fill(id);
                }
            }
            cls.push(c);
            area.push(inside);
            visible.push(inside);
            break;
        }
    }
    let amp: i32 = rng.random_range(0..=p.noise);
    if amp > 0 {
        let m = (2 * amp + 1) as u32;
        // offset[x] = x % m - amp for the 10-bit fields of the draw (a table instead of 3 divisions per pixel)
        let offset: [i32; 1024] = std::array::from_fn(|x| (x as u32 % m) as i32 - amp);
        for px in buf.chunks_exact_mut(3) {
            let r = rng.next_u32();
            for (k, v) in px.iter_mut().enumerate() {
                let n = offset[((r >> (k * 10)) & 0x3FF) as usize];
                *v = (*v as i32 + n).clamp(0, 255) as u8;
            }
        }
    }
    let mut boxes = vec![[u32::MAX, u32::MAX, 0u32, 0u32]; cls.len()];
    let mut count = vec![0usize; cls.len()];
    for y in 0..hu {
        for x in 0..wu {
            let o = owner[y * wu + x] as usize;
            if o > 0 {
                let b = &mut boxes[o - 1];
                b[0] = b[0].min(x as u32);
                b[1] = b[1].min(y as u32);
                b[2] = b[2].max(x as u32 + 1);
                b[3] = b[3].max(y as u32 + 1);
                count[o - 1] += 1;
            }
        }
    }
    debug_assert_eq!(count, visible);
    let img = RgbImage::from_raw(w, h, buf).expect("buffer of w*h*3 bytes");
    Rendered { img, boxes, cls, visible: count, owner: keep_owner.then_some(owner) }
}
