//! `RandomPerspective`: random affine / perspective warp of image and boxes.

use image::RgbImage;

use crate::mosaic::{LazyMosaic, MosaicCanvas};
use crate::sample::{clip_boxes, uniform};
use crate::warp::{warp_affine_rows, RowSource};
use crate::{warp_affine, warp_perspective, AugmentConfig, AugmentError, Sample, PAD_VALUE};

/// The random draws of `RandomPerspective._compute_affine_matrix`, in its draw order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerspectiveParams {
    /// `P[2, 0], P[2, 1] = random.uniform(-perspective, perspective)` (x then y).
    pub perspective: [f64; 2],
    /// Rotation angle in degrees, `random.uniform(-degrees, degrees)`.
    pub angle: f64,
    /// Scale, `random.uniform(1 - scale, 1 + scale)`.
    pub scale: f64,
    /// Shear angles in degrees, x then y, `random.uniform(-shear, shear)`.
    pub shear: [f64; 2],
    /// Translation fractions, x then y, `random.uniform(0.5 - translate, 0.5 + translate)`.
    pub translate: [f64; 2],
}

impl PerspectiveParams {
    /// The identity-like draw: no rotation/shear/perspective, scale 1, centred (`translate = 0.5`).
    pub fn centered() -> Self {
        Self { perspective: [0.0; 2], angle: 0.0, scale: 1.0, shear: [0.0; 2], translate: [0.5; 2] }
    }
}

/// Draw [`PerspectiveParams`] like `RandomPerspective._compute_affine_matrix` (8 uniform draws, always all of them,
/// in the order perspective x, perspective y, angle, scale, shear x, shear y, translate x, translate y).
pub fn perspective_params(rng: &mut impl rand::Rng, cfg: &AugmentConfig) -> PerspectiveParams {
    let px = uniform(rng, -cfg.perspective, cfg.perspective);
    let py = uniform(rng, -cfg.perspective, cfg.perspective);
    let angle = uniform(rng, -cfg.degrees, cfg.degrees);
    let scale = uniform(rng, 1.0 - cfg.scale, 1.0 + cfg.scale);
    let shx = uniform(rng, -cfg.shear, cfg.shear);
    let shy = uniform(rng, -cfg.shear, cfg.shear);
    let tx = uniform(rng, 0.5 - cfg.translate, 0.5 + cfg.translate);
    let ty = uniform(rng, 0.5 - cfg.translate, 0.5 + cfg.translate);
    PerspectiveParams { perspective: [px, py], angle, scale, shear: [shx, shy], translate: [tx, ty] }
}

type M3 = [[f32; 3]; 3];

fn matmul(a: &M3, b: &M3) -> M3 {
    let mut c = [[0f32; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            c[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
        }
    }
    c
}

/// `RandomPerspective._compute_affine_matrix` for given draws: `M = T @ S @ R @ P @ C` in float32 (as the NumPy
/// code), for an input image of `img_w x img_h` and an output `size = (w, h)`:
/// `C` moves the image centre to the origin (`-img_w / 2`, `-img_h / 2`), `P` has the perspective terms, `R` is
/// `cv2.getRotationMatrix2D(angle, center=(0, 0), scale)` (`alpha = cos(a·π/180)·s`, `beta = sin(a·π/180)·s`, f64
/// then stored as f32), `S` the shear `tan(deg·π/180)`, `T` the translation `t · size`.
pub fn perspective_matrix(p: &PerspectiveParams, img_w: usize, img_h: usize, size: [usize; 2]) -> M3 {
    let eye = || [[1f32, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    let mut c = eye();
    c[0][2] = (-(img_w as f64) / 2.0) as f32;
    c[1][2] = (-(img_h as f64) / 2.0) as f32;
    let mut pm = eye();
    pm[2][0] = p.perspective[0] as f32;
    pm[2][1] = p.perspective[1] as f32;
    let a = p.angle * (std::f64::consts::PI / 180.0);
    let (alpha, beta) = (a.cos() * p.scale, a.sin() * p.scale);
    let r = [[alpha as f32, beta as f32, 0.0], [-beta as f32, alpha as f32, 0.0], [0.0, 0.0, 1.0]];
    let mut s = eye();
    s[0][1] = (p.shear[0] * std::f64::consts::PI / 180.0).tan() as f32;
    s[1][0] = (p.shear[1] * std::f64::consts::PI / 180.0).tan() as f32;
    let mut t = eye();
    t[0][2] = (p.translate[0] * size[0] as f64) as f32;
    t[1][2] = (p.translate[1] * size[1] as f64) as f32;
    matmul(&matmul(&matmul(&matmul(&t, &s), &r), &pm), &c)
}

/// `RandomPerspective.apply_bboxes`: transform the four corners of each `xyxy` box by `M` (float32,
/// `[x, y, 1] @ M.T`, divided by the third coordinate when `perspective`), then take their min/max.
pub fn apply_bboxes(boxes: &[[f32; 4]], m: &M3, perspective: bool) -> Vec<[f32; 4]> {
    boxes
        .iter()
        .map(|b| {
            let corners = [[b[0], b[1]], [b[2], b[3]], [b[0], b[3]], [b[2], b[1]]];
            let mut out = [f32::INFINITY, f32::INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY];
            for [x, y] in corners {
                let mut tx = x * m[0][0] + y * m[0][1] + m[0][2];
                let mut ty = x * m[1][0] + y * m[1][1] + m[1][2];
                if perspective {
                    let tz = x * m[2][0] + y * m[2][1] + m[2][2];
                    tx /= tz;
                    ty /= tz;
                }
                out = [out[0].min(tx), out[1].min(ty), out[2].max(tx), out[3].max(ty)];
            }
            out
        })
        .collect()
}

/// `RandomPerspective.box_candidates(box1, box2, wh_thr, ar_thr, area_thr, eps=1e-16)` in float32, one flag per box
/// pair (`box1`: the boxes before the warp, scaled by the drawn scale; `box2`: after the warp and the clip):
/// `w2 > wh_thr & h2 > wh_thr & w2 * h2 / (w1 * h1 + eps) > area_thr & max(w2 / (h2 + eps), h2 / (w2 + eps)) < ar_thr`.
/// Ultralytics uses `wh_thr=2, ar_thr=100, area_thr=0.1` for boxes (0.01 with segments). Errors when the two slices
/// differ in length.
pub fn box_candidates(
    box1: &[[f32; 4]],
    box2: &[[f32; 4]],
    wh_thr: f32,
    ar_thr: f32,
    area_thr: f32,
) -> Result<Vec<bool>, AugmentError> {
    if box1.len() != box2.len() {
        return Err(AugmentError::InvalidArgument(format!(
            "box_candidates: {} boxes before, {} after",
            box1.len(),
            box2.len()
        )));
    }
    let eps = 1e-16f32;
    Ok(box1
        .iter()
        .zip(box2)
        .map(|(a, b)| {
            let (w1, h1) = (a[2] - a[0], a[3] - a[1]);
            let (w2, h2) = (b[2] - b[0], b[3] - b[1]);
            let ar = (w2 / (h2 + eps)).max(h2 / (w2 + eps));
            w2 > wh_thr && h2 > wh_thr && w2 * h2 / (w1 * h1 + eps) > area_thr && ar < ar_thr
        })
        .collect())
}

/// `RandomPerspective` with a given matrix: warp the image to `size = [w, h]` (`cv2.warpAffine(img, M[:2])`, or
/// `cv2.warpPerspective(img, M)` when `perspective`, border 114), transform the boxes ([`apply_bboxes`]), clip them
/// to `size`, and keep the [`box_candidates`] (wh 2, aspect 100, area 0.1) against the input boxes scaled by
/// `scale` (f32 multiply, `Instances.scale(scale, scale)`). Mirrors `apply_image` + `apply_instances`.
pub fn random_perspective_with(
    s: &Sample,
    m: &M3,
    scale: f64,
    size: [usize; 2],
    perspective: bool,
) -> Result<Sample, AugmentError> {
    s.validate()?;
    let img = warp(Source::Image(&s.img), m, size, perspective)?;
    finish(img, &s.boxes, &s.cls, m, scale, size, perspective)
}

/// What [`random_perspective_with`] warps: a drawn image, or a mosaic canvas read row by row.
enum Source<'a> {
    Image(&'a RgbImage),
    Mosaic(&'a MosaicCanvas<'a>),
}

/// The image part of [`random_perspective_with`]. A mosaic canvas is drawn only when the warp is not
/// axis-aligned (rotation, shear or perspective drawn), where every output pixel may read anywhere.
fn warp(src: Source, m: &M3, size: [usize; 2], perspective: bool) -> Result<RgbImage, AugmentError> {
    let (ow, oh) = (size[0] as u32, size[1] as u32);
    let md = [m[0].map(|v| v as f64), m[1].map(|v| v as f64)];
    let drawn;
    let img = match src {
        Source::Mosaic(c) if !perspective => match warp_affine_rows(c, md, ow, oh, PAD_VALUE)? {
            Some(out) => return Ok(out),
            None => {
                drawn = c.to_image();
                &drawn
            }
        },
        Source::Mosaic(c) => {
            drawn = c.to_image();
            &drawn
        }
        Source::Image(img) => img,
    };
    if perspective {
        warp_perspective(img, m.map(|r| r.map(|v| v as f64)), ow, oh, PAD_VALUE)
    } else {
        warp_affine(img, md, ow, oh, PAD_VALUE)
    }
}

/// The labels part of [`random_perspective_with`] for the warped `img`.
fn finish(
    img: RgbImage,
    boxes: &[[f32; 4]],
    cls: &[u32],
    m: &M3,
    scale: f64,
    size: [usize; 2],
    perspective: bool,
) -> Result<Sample, AugmentError> {
    let mut warped = apply_bboxes(boxes, m, perspective);
    clip_boxes(&mut warped, size[0] as f32, size[1] as f32);
    let sc = scale as f32;
    let scaled: Vec<[f32; 4]> = boxes.iter().map(|b| b.map(|v| v * sc)).collect();
    let keep = box_candidates(&scaled, &warped, 2.0, 100.0, 0.1)?;
    let mut out = Sample { img, boxes: warped, cls: cls.to_vec() };
    out.retain(&keep);
    Ok(out)
}

/// [`random_perspective`] of a mosaic whose canvas is not drawn ([`crate::mosaic4_lazy`]): the same draws, the same
/// sample as `random_perspective(&mosaic4(..), ..)`, without the canvas when the warp is axis-aligned (ultralytics'
/// defaults: `degrees = shear = perspective = 0`).
pub fn random_perspective_mosaic(
    mosaic: &LazyMosaic,
    cfg: &AugmentConfig,
    size: [usize; 2],
    rng: &mut impl rand::Rng,
) -> Result<Sample, AugmentError> {
    if mosaic.boxes.len() != mosaic.cls.len() {
        return Err(AugmentError::LabelCount { boxes: mosaic.boxes.len(), cls: mosaic.cls.len() });
    }
    let src = Source::Mosaic(&mosaic.canvas);
    draw_and_apply(src, mosaic.canvas.dims(), &mosaic.boxes, &mosaic.cls, cfg, size, rng)
}

/// `RandomPerspective(degrees, translate, scale, shear, perspective, size=(w, h))(labels)`: draw the parameters
/// ([`perspective_params`]), build `M` ([`perspective_matrix`], centre of the *input* image, translation relative to
/// `size`) and apply it ([`random_perspective_with`]). In `v8_transforms`, `size = (imgsz, imgsz)`; after a mosaic
/// (a `2 imgsz` canvas) this is the old `border = -imgsz / 2` crop.
pub fn random_perspective(
    s: &Sample,
    cfg: &AugmentConfig,
    size: [usize; 2],
    rng: &mut impl rand::Rng,
) -> Result<Sample, AugmentError> {
    s.validate()?;
    let dims = (s.img.width() as usize, s.img.height() as usize);
    draw_and_apply(Source::Image(&s.img), dims, &s.boxes, &s.cls, cfg, size, rng)
}

/// The draws, the matrix for a `dims` input, the warp and the labels: [`random_perspective`] of any [`Source`].
fn draw_and_apply(
    src: Source,
    dims: (usize, usize),
    boxes: &[[f32; 4]],
    cls: &[u32],
    cfg: &AugmentConfig,
    size: [usize; 2],
    rng: &mut impl rand::Rng,
) -> Result<Sample, AugmentError> {
    if size[0] == 0 || size[1] == 0 {
        return Err(AugmentError::InvalidArgument(format!("random_perspective: empty size {size:?}")));
    }
    let p = perspective_params(rng, cfg);
    let m = perspective_matrix(&p, dims.0, dims.1, size);
    let perspective = cfg.perspective != 0.0;
    let img = warp(src, &m, size, perspective)?;
    finish(img, boxes, cls, &m, p.scale, size, perspective)
}
