//! Tests of the task-aligned assigner: every path against a float64 host implementation written from
//! ultralytics' `TaskAlignedAssigner` (plain loops, ties broken by the smaller index):
//! the reference (tensor ops) on `Flex`, the raw kernel launches into poisoned outputs, and the
//! `Tensor`-level op through `Fusion`, `Autodiff<Fusion>` and `Autodiff<CubeBackend>` (wgpu on lavapipe in
//! CI; the same checks with `cuda` in their names on the GPU). The ultralytics parity of the assignment
//! itself is checked by the integration test `loss_parity` against fixtures from ultralytics.
#![allow(dead_code)]

use burn::backend::Flex;
use burn::tensor::{backend::Backend, Int, Tensor, TensorData};

use super::{task_aligned_assign, TalBackend, TalConfig};
use crate::ciou::tests::{forward_f64, Boxes};
use crate::test_util::*;

/// One batch: `b` images, `c` classes, anchors of a `w × h` image at strides 8/16/32, `g` GT slots.
pub(crate) struct Scene {
    pub b: usize,
    pub c: usize,
    pub a: usize,
    pub g: usize,
    pub logits: Vec<f32>,
    pub boxes: Vec<f32>,
    pub anchors: Vec<f32>,
    /// The same anchors as the grid `[3, A]`: x, y in grid units, stride.
    pub grid: Vec<f32>,
    pub gt: Vec<f32>,
    pub labels: Vec<i64>,
    pub mask: Vec<f32>,
}

/// Image 0: two overlapping GTs (conflicts), a 6×5-px GT (STAL) and a padding row; image 1: random GTs
/// and padding, its first GT with a label outside `[0, C)`; image 2: padding only (garbage coordinates, mask
/// 0); further images random.
pub(crate) fn scene(seed: u64, b: usize) -> Scene {
    let mut rng = Rng::new(seed);
    let (w, h, c, g) = (96usize, 64usize, 6usize, 4usize);
    let mut anchors_x = Vec::new();
    let mut anchors_y = Vec::new();
    let (mut grid_x, mut grid_y, mut strides) = (Vec::new(), Vec::new(), Vec::new());
    for s in [8usize, 16, 32] {
        for y in 0..h / s {
            for x in 0..w / s {
                anchors_x.push((x as f32 + 0.5) * s as f32);
                anchors_y.push((y as f32 + 0.5) * s as f32);
                grid_x.push(x as f32 + 0.5);
                grid_y.push(y as f32 + 0.5);
                strides.push(s as f32);
            }
        }
    }
    let a = anchors_x.len();
    let logits = rng.uniform(b * c * a, 3.0);
    // predicted boxes around the anchors, many of them overlapping the GTs
    let mut boxes = vec![0.0f32; b * 4 * a];
    for bi in 0..b {
        for ai in 0..a {
            let cx = anchors_x[ai] + rng.range(-6.0, 6.0);
            let cy = anchors_y[ai] + rng.range(-6.0, 6.0);
            let (hw, hh) = (rng.range(3.0, 30.0), rng.range(3.0, 30.0));
            for (k, v) in [cx - hw, cy - hh, cx + hw, cy + hh].into_iter().enumerate() {
                boxes[(bi * 4 + k) * a + ai] = v;
            }
        }
    }
    let mut gt = vec![0.0f32; b * g * 4];
    let mut labels = vec![0i64; b * g];
    let mut mask = vec![0.0f32; b * g];
    for bi in 0..b {
        for gi in 0..g {
            let r = bi * g + gi;
            let (bx, lab, valid) = match (bi, gi) {
                (0, 0) => ([10.0, 8.0, 50.0, 40.0], 2, true),
                (0, 1) => ([30.0, 20.0, 80.0, 60.0], 4, true),
                (0, 2) => ([70.0, 10.0, 76.0, 15.0], 1, true),
                (2, _) | (_, 3) => {
                    let x = rng.range(0.0, 60.0);
                    ([x, x, x + 20.0, x + 30.0], 5, false)
                }
                _ => {
                    let (x1, y1) = (rng.range(0.0, 70.0), rng.range(0.0, 40.0));
                    let (bw, bh) = (rng.range(4.0, 40.0), rng.range(4.0, 30.0));
                    ([x1, y1, (x1 + bw).min(w as f32), (y1 + bh).min(h as f32)], (rng.unit() * c as f32) as i64, true)
                }
            };
            gt[4 * r..4 * r + 4].copy_from_slice(&bx);
            labels[r] = if (bi, gi) == (1, 0) { c as i64 } else { lab };
            mask[r] = if valid { 1.0 } else { 0.0 };
        }
    }
    anchors_x.extend(anchors_y);
    let grid = [grid_x, grid_y, strides].concat();
    Scene { b, c, a, g, logits, boxes, anchors: anchors_x, grid, gt, labels, mask }
}

/// Float64 host assignment: `(gt_idx, fg, norm)`, each `[B·A]`.
pub(crate) fn host_assign(s: &Scene, cfg: &TalConfig) -> (Vec<i64>, Vec<f32>, Vec<f64>) {
    let (b, c, a, g) = (s.b, s.c, s.a, s.g);
    let eps = cfg.eps;
    // all (gt, pred) pairs through the f64 CIoU of the CIoU tests: CIoU = 1 − loss
    let (mut p, mut t) = (Vec::new(), Vec::new());
    for bi in 0..b {
        for gi in 0..g {
            for ai in 0..a {
                p.extend_from_slice(&s.gt[4 * (bi * g + gi)..4 * (bi * g + gi) + 4]);
                t.extend((0..4).map(|k| s.boxes[(bi * 4 + k) * a + ai]));
            }
        }
    }
    let n = b * g * a;
    let (loss, _) = forward_f64(&Boxes { name: "tal pairs", pred: p, target: t, w: vec![0.0; n] });
    let mut cand = vec![false; n];
    let mut ov = vec![0.0f64; n];
    let mut al = vec![0.0f64; n];
    for bi in 0..b {
        for gi in 0..g {
            let r = bi * g + gi;
            let valid = s.mask[r] > 0.0;
            let q = |k: usize| s.gt[4 * r + k] as f64;
            let (cx, cy) = ((q(0) + q(2)) / 2.0, (q(1) + q(3)) / 2.0);
            let stal = |side: f64| if valid && side < cfg.stride_val { cfg.stride_val } else { side };
            let (w, h) = (stal(q(2) - q(0)), stal(q(3) - q(1)));
            let label = s.labels[r].clamp(0, c as i64 - 1) as usize;
            for ai in 0..a {
                let (ax, ay) = (s.anchors[ai] as f64, s.anchors[a + ai] as f64);
                let inside = ax - (cx - w * 0.5) > eps
                    && ay - (cy - h * 0.5) > eps
                    && (cx + w * 0.5) - ax > eps
                    && (cy + h * 0.5) - ay > eps;
                let i = r * a + ai;
                if inside && valid {
                    cand[i] = true;
                    ov[i] = (1.0 - loss[i]).max(0.0);
                    let logit = s.logits[(bi * c + label) * a + ai] as f64;
                    let score = 1.0 / (1.0 + (-logit).exp());
                    al[i] = score.powf(cfg.alpha) * ov[i].powf(cfg.beta);
                }
            }
        }
    }
    // top-k per GT row (descending, smaller index first on ties), then positives
    let mut pos = vec![false; n];
    for r in 0..b * g {
        let mut order: Vec<usize> = (0..a).collect();
        order.sort_by(|&x, &y| al[r * a + y].partial_cmp(&al[r * a + x]).unwrap().then(x.cmp(&y)));
        for &ai in &order[..cfg.topk] {
            pos[r * a + ai] = cand[r * a + ai];
        }
    }
    // owners: conflicts keep the GT of highest overlap (first maximum over all slots)
    let mut owner = vec![usize::MAX; b * a];
    for bi in 0..b {
        for ai in 0..a {
            let claim: Vec<usize> = (0..g).filter(|&gi| pos[(bi * g + gi) * a + ai]).collect();
            owner[bi * a + ai] =
                match claim.len() {
                    0 => usize::MAX,
                    1 => claim[0],
                    _ => (0..g).fold(0, |best, gi| {
                        if ov[(bi * g + gi) * a + ai] > ov[(bi * g + best) * a + ai] {
                            gi
                        } else {
                            best
                        }
                    }),
                };
        }
    }
    if cfg.topk2 != cfg.topk {
        assert_eq!(cfg.topk2, 1, "host reference: topk2 must be 1 or off");
        for bi in 0..b {
            for gi in 0..g {
                let m = |ai: usize| if owner[bi * a + ai] == gi { al[(bi * g + gi) * a + ai] } else { 0.0 };
                let kept = (0..a).fold(0, |best, ai| if m(ai) > m(best) { ai } else { best });
                for ai in 0..a {
                    if owner[bi * a + ai] == gi && ai != kept {
                        owner[bi * a + ai] = usize::MAX;
                    }
                }
            }
        }
    }
    let (mut idx, mut fg, mut norm) = (vec![0i64; b * a], vec![0.0f32; b * a], vec![0.0f64; b * a]);
    for bi in 0..b {
        for gi in 0..g {
            let r = bi * g + gi;
            let mine: Vec<usize> = (0..a).filter(|&ai| owner[bi * a + ai] == gi).collect();
            let pa = mine.iter().fold(0.0f64, |m, &ai| m.max(al[r * a + ai]));
            let po = mine.iter().fold(0.0f64, |m, &ai| m.max(ov[r * a + ai]));
            for &ai in &mine {
                idx[bi * a + ai] = gi as i64;
                fg[bi * a + ai] = 1.0;
                norm[bi * a + ai] = al[r * a + ai] * po / (pa + eps);
            }
        }
    }
    (idx, fg, norm)
}

/// The two YOLO26 configurations: one2many (top-10) and one2one (top-7, then top-1).
pub(crate) fn configs() -> [TalConfig; 2] {
    [TalConfig::new(10, None), TalConfig::new(7, Some(1))]
}

/// Compares an assignment with the host result (labels `gt_labels[b, gt_idx]`, norm 0 where the label is
/// outside `[0, C)`); checks the scene is not degenerate.
pub(crate) fn check_result(
    what: &str,
    s: &Scene,
    cfg: &TalConfig,
    idx: Vec<i64>,
    fg: Vec<f32>,
    norm: Vec<f32>,
    labels: Vec<i64>,
) {
    let (want_idx, want_fg, mut want_norm) = host_assign(s, cfg);
    let want_labels: Vec<i64> =
        want_idx.iter().enumerate().map(|(i, &gi)| s.labels[(i / s.a) * s.g + gi as usize]).collect();
    let mut masked = 0;
    for (n, &l) in want_norm.iter_mut().zip(&want_labels) {
        if !(0..s.c as i64).contains(&l) {
            masked += usize::from(*n > 0.0);
            *n = 0.0;
        }
    }
    assert!(masked > 0, "{what}: the out-of-range label claims no anchor (scene degenerate)");
    assert_eq!(labels, want_labels, "{what}: target labels");
    let fg_count = want_fg.iter().filter(|&&v| v > 0.0).count();
    // non-degenerate: image 0 has foreground for each of its 3 GTs, image 2 (padding only) none
    let a = s.a;
    for gi in 0..3i64 {
        assert!((0..a).any(|ai| want_fg[ai] > 0.0 && want_idx[ai] == gi), "{what}: scene has no positive for GT {gi}");
    }
    assert!(want_fg[2 * a..3 * a].iter().all(|&v| v == 0.0), "{what}: padding-only image got positives");
    assert_eq!(fg, want_fg, "{what}: fg mask ({fg_count} foreground expected)");
    assert_eq!(idx, want_idx, "{what}: assigned GT slots");
    let e = assert_close(&format!("{what}: norm"), &norm, &want_norm, 1e-5);
    eprintln!("{what}: {fg_count} fg anchors, norm rel err {e:.2e}");
}

/// `(logits, boxes, anchors, gt_boxes, gt_labels, gt_mask)` of a scene on a device.
type SceneTensors<B> = (Tensor<B, 3>, Tensor<B, 3>, Tensor<B, 2>, Tensor<B, 3>, Tensor<B, 2, Int>, Tensor<B, 2>);

fn upload_scene<B: Backend>(s: &Scene, device: &B::Device) -> SceneTensors<B> {
    let f3 = |v: &[f32], shape: [usize; 3]| Tensor::<B, 3>::from_data(TensorData::new(v.to_vec(), shape), device);
    let f2 = |v: &[f32], shape: [usize; 2]| Tensor::<B, 2>::from_data(TensorData::new(v.to_vec(), shape), device);
    (
        f3(&s.logits, [s.b, s.c, s.a]),
        f3(&s.boxes, [s.b, 4, s.a]),
        f2(&s.anchors, [2, s.a]),
        f3(&s.gt, [s.b, s.g, 4]),
        Tensor::<B, 2, Int>::from_data(TensorData::new(s.labels.clone(), [s.b, s.g]), device),
        f2(&s.mask, [s.b, s.g]),
    )
}

/// The scene's logits as a strided `[B, C, A]` view of a `[B, A, C]` tensor.
fn strided_logits<B: Backend>(s: &Scene, device: &B::Device) -> Tensor<B, 3> {
    crate::test_util::transposed_view::<B>(&s.logits, [s.b, s.c, s.a], device)
}

/// The `Tensor`-level op on backend `B` against the host result, both configurations (the second one with
/// strided logits).
pub(crate) fn check_op<B: TalBackend>(device: &B::Device, seed: u64, b: usize) {
    let s = scene(seed, b);
    for (i, cfg) in configs().into_iter().enumerate() {
        let (logits, boxes, anchors, gt, labels, mask) = upload_scene::<B>(&s, device);
        let logits = if i == 1 { strided_logits::<B>(&s, device) } else { logits };
        // the second configuration takes the anchor grid [3, A] instead of pixel centres
        let anchors =
            if i == 1 { Tensor::<B, 2>::from_data(TensorData::new(s.grid.clone(), [3, s.a]), device) } else { anchors };
        let out = task_aligned_assign(logits, boxes, anchors, gt, labels, mask, cfg);
        let idx = out.gt_idx.into_data().convert::<i64>().to_vec::<i64>().unwrap();
        let labels = out.labels.into_data().convert::<i64>().to_vec::<i64>().unwrap();
        check_result(
            &format!("{} topk {} topk2 {}", B::name(device), cfg.topk, cfg.topk2),
            &s,
            &cfg,
            idx,
            to_vec(out.fg),
            to_vec(out.norm),
            labels,
        );
    }
}

#[test]
fn reference_matches_host_f64() {
    check_op::<Flex>(&Default::default(), 9100, 4);
}

#[test]
fn reference_under_autodiff() {
    check_op::<burn::backend::Autodiff<Flex>>(&Default::default(), 9200, 3);
}

#[test]
fn no_gt_slots_and_no_valid_gt() {
    let device = Default::default();
    let s = scene(9300, 3);
    let (logits, boxes, anchors, _, _, _) = upload_scene::<Flex>(&s, &device);
    let out = task_aligned_assign(
        logits,
        boxes,
        anchors,
        Tensor::<Flex, 3>::zeros([3, 0, 4], &device),
        Tensor::<Flex, 2, Int>::zeros([3, 0], &device),
        Tensor::<Flex, 2>::zeros([3, 0], &device),
        TalConfig::new(10, None),
    );
    assert_eq!(out.fg.dims(), [3, s.a]);
    assert!(to_vec(out.fg).iter().all(|&v| v == 0.0));
    assert!(to_vec(out.norm).iter().all(|&v| v == 0.0));
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub(crate) mod cube {
    //! Raw kernel launches (runtime-generic) into poisoned outputs.
    use burn::tensor::{DType, Shape, TensorPrimitive};
    use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeRuntime};

    use super::*;
    use crate::tal::cube::raw;
    use crate::topk::{cube::topk, kernels::chunk_for};

    /// An int-bits tensor of `dtype` (U32 or I32) filled with a poison value, 1-D then viewed as `shape`.
    fn poisoned_bits<R: CubeRuntime, BT: BoolElement, const D: usize>(
        shape: [usize; D],
        dtype: DType,
        device: &R::Device,
    ) -> CubeTensor<R> {
        let n = shape.iter().product::<usize>();
        let t: CubeTensor<R> = Tensor::<Cb<R, BT>, 1, Int>::full([n], 0x0BAD_F00D, device).into_primitive();
        CubeTensor::new_contiguous(t.client, t.device, Shape::new(shape), t.handle, dtype)
    }

    fn download_bits<R: CubeRuntime, BT: BoolElement>(t: CubeTensor<R>) -> Vec<i64> {
        let n = t.meta.shape().num_elements();
        let t = CubeTensor::new_contiguous(t.client, t.device, Shape::new([n]), t.handle, DType::I32);
        Tensor::<Cb<R, BT>, 1, Int>::from_primitive(t).into_data().convert::<i64>().to_vec::<i64>().unwrap()
    }

    /// Every kernel launched by hand into poisoned outputs; checks the intermediate `owner` is fully
    /// written and the final outputs against the host result.
    pub(crate) fn check_kernels<R: CubeRuntime, BT: BoolElement>(device: &R::Device, seed: u64) {
        let s = scene(seed, 3);
        let (b, a, g) = (s.b, s.a, s.g);
        for (i, cfg) in configs().into_iter().enumerate() {
            let logits = upload::<R, BT, 3>(&s.logits, [b, s.c, a], DType::F32, device);
            let boxes = upload::<R, BT, 3>(&s.boxes, [b, 4, a], DType::F32, device);
            // pixel centres, then the anchor grid (the metrics kernel's two layouts)
            let anchors = if i == 0 {
                upload::<R, BT, 2>(&s.anchors, [2, a], DType::F32, device)
            } else {
                upload::<R, BT, 2>(&s.grid, [3, a], DType::F32, device)
            };
            let gt = upload::<R, BT, 3>(&s.gt, [b, g, 4], DType::F32, device);
            let mask = upload::<R, BT, 2>(&s.mask, [b, g], DType::F32, device);
            let labels: CubeTensor<R> =
                Tensor::<Cb<R, BT>, 2, Int>::from_data(TensorData::new(s.labels.clone(), [b, g]), device)
                    .into_primitive();
            let labels = burn_cubecl::kernel::into_contiguous(labels);

            let align = poisoned::<R, BT, 3>([b, g, a], DType::F32, device);
            let overlaps = poisoned::<R, BT, 3>([b, g, a], DType::F32, device);
            let cand = poisoned_bits::<R, BT, 3>([b, g, a], DType::U32, device);
            raw::launch_tal_metrics(&logits, &boxes, &anchors, &gt, &labels, &mask, &align, &overlaps, &cand, &cfg);
            let rows = burn_cubecl::ops::reshape(align.clone(), Shape::new([b * g, a]));
            let (_, top) = topk(rows, cfg.topk, chunk_for(cfg.topk).unwrap(), DType::I32);
            let owner = poisoned_bits::<R, BT, 2>([b, a], DType::U32, device);
            raw::launch_tal_resolve(&cand, &overlaps, &top, &owner);
            let pos_align = poisoned::<R, BT, 2>([b, g], DType::F32, device);
            let pos_overlap = poisoned::<R, BT, 2>([b, g], DType::F32, device);
            let keep = poisoned_bits::<R, BT, 2>([b, g], DType::U32, device);
            let one2one = cfg.one2one();
            raw::launch_tal_gt_stats(&owner, &align, &overlaps, &pos_align, &pos_overlap, &keep, one2one);
            let gt_idx = poisoned_bits::<R, BT, 2>([b, a], DType::I32, device);
            let fg = poisoned::<R, BT, 2>([b, a], DType::F32, device);
            let norm = poisoned::<R, BT, 2>([b, a], DType::F32, device);
            let target_labels = poisoned_bits::<R, BT, 2>([b, a], labels.dtype, device);
            raw::launch_tal_targets(
                &owner,
                &align,
                &pos_align,
                &pos_overlap,
                &keep,
                &labels,
                &gt_idx,
                &fg,
                &norm,
                &target_labels,
                s.c,
                cfg.eps,
                one2one,
            );

            let owners = download_bits::<R, BT>(owner);
            assert!(
                owners.iter().all(|&o| o == -1 || (0..g as i64).contains(&o)),
                "owner: unwritten or out-of-range entries"
            );
            let cands = download_bits::<R, BT>(cand.clone());
            assert!(cands.iter().all(|&c| c == 0 || c == 1), "cand: unwritten entries");
            let what = format!("kernels topk {} topk2 {}", cfg.topk, cfg.topk2);
            let f = |t: CubeTensor<R>| to_vec(Tensor::<Cb<R, BT>, 2>::from_primitive(TensorPrimitive::Float(t)));
            let target_labels = download_bits::<R, BT>(target_labels);
            check_result(&what, &s, &cfg, download_bits::<R, BT>(gt_idx), f(fg), f(norm), target_labels);

            // resolve + statistics + targets in one launch, from the same metrics and top-k
            assert!(raw::fused_fits(g, cfg.topk));
            let gt_idx = poisoned_bits::<R, BT, 2>([b, a], DType::I32, device);
            let fg = poisoned::<R, BT, 2>([b, a], DType::F32, device);
            let norm = poisoned::<R, BT, 2>([b, a], DType::F32, device);
            let target_labels = poisoned_bits::<R, BT, 2>([b, a], labels.dtype, device);
            raw::launch_tal_assign_fused(
                &cand,
                &align,
                &overlaps,
                &top,
                &labels,
                &gt_idx,
                &fg,
                &norm,
                &target_labels,
                s.c,
                cfg.eps,
                one2one,
            );
            let target_labels = download_bits::<R, BT>(target_labels);
            let what = format!("fused {what}");
            check_result(&what, &s, &cfg, download_bits::<R, BT>(gt_idx), f(fg), f(norm), target_labels);
        }
    }
    /// [`crate::tal::cube::assign_raw`]: the boxes decoded inside the metrics kernel from strided raw
    /// distances and a pitched anchor grid, against the host result on the same boxes decoded on the host.
    pub(crate) fn check_raw<R: CubeRuntime, BT: BoolElement>(device: &R::Device, seed: u64) {
        let mut s = scene(seed, 3);
        let (b, a, g) = (s.b, s.a, s.g);
        // distances that decode to (about) the scene's boxes; the host boxes become their exact f32 decode
        let mut dist = vec![0.0f32; b * 4 * a];
        for bi in 0..b {
            for ai in 0..a {
                let (gx, gy, st) = (s.grid[ai], s.grid[a + ai], s.grid[2 * a + ai]);
                let bx = |k: usize| s.boxes[(bi * 4 + k) * a + ai];
                let d = [gx - bx(0) / st, gy - bx(1) / st, bx(2) / st - gx, bx(3) / st - gy];
                let p = [(gx - d[0]) * st, (gy - d[1]) * st, (gx + d[2]) * st, (gy + d[3]) * st];
                for k in 0..4 {
                    dist[(bi * 4 + k) * a + ai] = d[k];
                    s.boxes[(bi * 4 + k) * a + ai] = p[k];
                }
            }
        }
        for cfg in configs() {
            let logits: CubeTensor<R> = strided_logits::<Cb<R, BT>>(&s, device).into_primitive().tensor();
            let dist_t: CubeTensor<R> =
                crate::test_util::transposed_view::<Cb<R, BT>>(&dist, [b, 4, a], device).into_primitive().tensor();
            assert!(!dist_t.is_contiguous(), "the raw distances must be strided");
            let grid = crate::test_util::pitched_rows::<R, BT>(&s.grid, [3, a], a + 3, device);
            assert_ne!(grid.meta.strides()[0], a, "the grid rows must be pitched");
            let gt = upload::<R, BT, 3>(&s.gt, [b, g, 4], DType::F32, device);
            let mask = upload::<R, BT, 2>(&s.mask, [b, g], DType::F32, device);
            let labels: CubeTensor<R> =
                Tensor::<Cb<R, BT>, 2, Int>::from_data(TensorData::new(s.labels.clone(), [b, g]), device)
                    .into_primitive();
            let [gt_idx, fg, norm, target_labels] =
                crate::tal::cube::assign_raw(logits, dist_t, grid, gt, labels, mask, cfg, DType::I32);
            let what = format!("raw-distance kernels topk {} topk2 {}", cfg.topk, cfg.topk2);
            let f = |t: CubeTensor<R>| to_vec(Tensor::<Cb<R, BT>, 2>::from_primitive(TensorPrimitive::Float(t)));
            let ints = |t: CubeTensor<R>| {
                Tensor::<Cb<R, BT>, 2, Int>::from_primitive(t).into_data().convert::<i64>().to_vec::<i64>().unwrap()
            };
            check_result(&what, &s, &cfg, ints(gt_idx), f(fg), f(norm), ints(target_labels));
        }
    }
}

#[cfg(feature = "wgpu")]
mod wgpu {
    use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
    use burn::backend::{Autodiff, Wgpu};

    use super::*;

    #[test]
    fn tal_wgpu_kernels() {
        cube::check_kernels::<WgpuRuntime, u32>(&WgpuDevice::DefaultDevice, 9400);
        cube::check_raw::<WgpuRuntime, u32>(&WgpuDevice::DefaultDevice, 9450);
    }

    #[test]
    fn tal_wgpu_fusion_and_autodiff() {
        check_op::<Wgpu>(&WgpuDevice::DefaultDevice, 9500, 3);
        check_op::<Autodiff<Wgpu>>(&WgpuDevice::DefaultDevice, 9600, 4);
        check_op::<Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>>(&WgpuDevice::DefaultDevice, 9700, 3);
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use burn::backend::cuda::CudaDevice;
    use burn::backend::{Autodiff, Cuda};
    use burn_cubecl::CubeBackend;
    use cubecl::cuda::CudaRuntime;

    use super::*;

    #[test]
    fn tal_cuda_kernels() {
        cube::check_kernels::<CudaRuntime, u8>(&CudaDevice::default(), 9400);
        cube::check_raw::<CudaRuntime, u8>(&CudaDevice::default(), 9450);
    }

    #[test]
    fn tal_cuda_fusion_and_autodiff() {
        check_op::<Cuda>(&CudaDevice::default(), 9500, 3);
        check_op::<Autodiff<Cuda>>(&CudaDevice::default(), 9600, 4);
        check_op::<Autodiff<CubeBackend<CudaRuntime, f32, i32, u8>>>(&CudaDevice::default(), 9700, 3);
    }
}
