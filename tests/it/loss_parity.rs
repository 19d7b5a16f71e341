//! Parity of the training loss with ultralytics 8.4.190 (`tests/fixtures/generate_loss.py` →
//! `loss_fixture.safetensors`: B = 3 images at 128 px, 336 anchors, 20 classes; image 0 four boxes, image 1 none,
//! image 2 a tiny STAL box and two overlapping boxes): assigner outputs of both branches, every loss term, the
//! E2ELoss total at epoch 3 of 10 and its gradients w.r.t. the raw predictions of both heads (Autodiff<Flex>,
//! Autodiff<Wgpu> with the `wgpu` feature, Autodiff<Cuda> with `cuda`), an all-empty batch, and the ProgLoss schedule.

use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use yolo26_model::nn::head::HeadOutput;
use yolo26_model::postprocess::Anchors;
use yolo26_model::weights::{read_safetensors, WeightMap};
use yolo26_tests::{fixture, host, rel_l2};
use yolo26_train::{prog_loss_o2m, DetectionLoss, E2ELoss, GtBoxes, LossGains, LossTerms, TrainBackend};

const REL_TOL: f64 = 1e-4;
const FEATS: [[usize; 2]; 3] = [[16, 16], [8, 8], [4, 4]];
const NC: usize = 20;

struct Fx(WeightMap);

impl Fx {
    fn load() -> Self {
        Fx(read_safetensors(&fixture("tests/fixtures/loss_fixture.safetensors")).expect("loss fixture reads"))
    }
    fn data(&self, key: &str) -> &[f32] {
        &self.0.tensors.get(key).unwrap_or_else(|| panic!("fixture has no '{key}'")).data
    }
    fn tensor<B: Backend, const D: usize>(&self, key: &str, device: &B::Device) -> Tensor<B, D> {
        let t = self.0.tensors.get(key).unwrap_or_else(|| panic!("fixture has no '{key}'"));
        Tensor::from_data(burn::tensor::TensorData::new(t.data.clone(), t.shape.clone()), device)
    }
    fn head<B: Backend>(&self, branch: &str, device: &B::Device) -> HeadOutput<B> {
        HeadOutput {
            boxes: self.tensor(&format!("{branch}.boxes"), device),
            scores: self.tensor(&format!("{branch}.scores"), device),
        }
    }
    fn gt<B: Backend>(&self, device: &B::Device) -> GtBoxes<B> {
        GtBoxes {
            bboxes: self.tensor("gt.bboxes", device),
            labels: self.tensor::<B, 2>("gt.labels", device).int(),
            mask: self.tensor("gt.mask", device),
        }
    }
}

fn check(name: &str, ours: &[f32], reference: &[f32], tol: f64) {
    let (rel, max) = rel_l2(ours, reference);
    println!("{name:<26} rel {rel:.2e} max|d| {max:.2e} (tolerance {tol:.0e})");
    assert!(rel <= tol, "{name}: relative error {rel:.3e} > {tol:.0e} (max abs diff {max:.3e})");
}

fn terms_host<B: Backend>(t: &LossTerms<B>) -> Vec<f32> {
    [t.box_loss(), t.cls_loss(), t.l1_loss()].into_iter().map(|x| host(x)[0]).collect()
}

/// Each term on its own (relative to the reference term; an exact-zero reference must be matched to 1e-6).
fn check_terms(name: &str, ours: &[f32], reference: &[f32]) {
    for (i, n) in ["box", "cls", "l1"].iter().enumerate() {
        let (o, r) = (ours[i] as f64, reference[i] as f64);
        let err = if r == 0.0 { o.abs() } else { (o - r).abs() / r.abs() };
        println!("{name}.{n:<5} ours {o:.7} ref {r:.7} rel {err:.2e}");
        assert!(err <= if r == 0.0 { 1e-6 } else { REL_TOL }, "{name}.{n}: {o} vs {r}");
    }
}

/// Assigner outputs and the terms of each branch on backend `B` (no autodiff: the loss branch op's plain path,
/// one custom op on `Fusion`).
fn assigner_and_branch_losses<B: TrainBackend>(dev: &B::Device) {
    let fx = Fx::load();
    let anchors = Anchors::<B>::new(&FEATS, dev);
    let gt = fx.gt::<B>(dev);
    for (br, topk, topk2) in [("o2m", 10, None), ("o2o", 7, Some(1))] {
        let loss = DetectionLoss::new(NC, topk, topk2, LossGains::default());
        let (terms, asg) = loss.forward_with_assignment(&fx.head::<B>(br, dev), &anchors, &gt);
        let fg = host(asg.fg_mask.clone());
        let fg_ref = fx.data(&format!("{br}.assign.fg_mask"));
        let n_fg = fg_ref.iter().filter(|&&v| v > 0.5).count();
        assert_eq!(fg, fg_ref, "{br}: fg mask differs");
        println!("{br}: fg mask exact ({n_fg} foreground anchors)");
        let idx: Vec<f32> = host(asg.target_gt_idx.clone().float());
        assert_eq!(idx, fx.data(&format!("{br}.assign.target_gt_idx")), "{br}: target_gt_idx differs");
        check(
            &format!("{br} target_bboxes"),
            &host(asg.target_bboxes()),
            fx.data(&format!("{br}.assign.target_bboxes")),
            REL_TOL,
        );
        check(
            &format!("{br} target_scores"),
            &host(asg.target_scores()),
            fx.data(&format!("{br}.assign.target_scores")),
            REL_TOL,
        );
        check_terms(br, &terms_host(&terms), fx.data(&format!("{br}.loss")));
    }
}

#[test]
fn assigner_and_branch_losses_match_ultralytics() {
    assigner_and_branch_losses::<Flex>(&Default::default());
}

#[cfg(feature = "wgpu")]
#[test]
fn assigner_and_branch_losses_match_ultralytics_wgpu_fusion_and_cube() {
    use burn::backend::wgpu::{CubeBackend, Wgpu, WgpuDevice, WgpuRuntime};
    assigner_and_branch_losses::<Wgpu>(&WgpuDevice::DefaultDevice);
    assigner_and_branch_losses::<CubeBackend<WgpuRuntime, f32, i32, u32>>(&WgpuDevice::DefaultDevice);
}

#[cfg(feature = "wgpu")]
#[test]
fn e2e_loss_and_gradients_match_ultralytics_wgpu_cube() {
    use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
    e2e_and_grads::<Autodiff<CubeBackend<WgpuRuntime, f32, i32, u32>>>(
        &Fx::load(),
        &WgpuDevice::DefaultDevice,
        REL_TOL,
    );
}

/// E2ELoss at the fixture's epoch on an autodiff backend: terms, total and d total / d raw predictions.
fn e2e_and_grads<B: AutodiffBackend + TrainBackend>(fx: &Fx, dev: &B::Device, grad_tol: f64) {
    let ee = fx.data("e2e.epoch_epochs");
    let mut loss = E2ELoss::new(NC, ee[1] as usize, LossGains::default());
    for _ in 0..ee[0] as usize {
        loss.update();
    }
    let w = fx.data("e2e.weights");
    assert!((loss.o2m - w[0] as f64).abs() < 1e-6 && (loss.o2o - w[1] as f64).abs() < 1e-6, "weights {loss:?}");

    let leaf = |k: &str| fx.tensor::<B, 3>(k, dev).require_grad();
    let (mb, ms, ob, os) = (leaf("o2m.boxes"), leaf("o2m.scores"), leaf("o2o.boxes"), leaf("o2o.scores"));
    let o2m = HeadOutput { boxes: mb.clone(), scores: ms.clone() };
    let o2o = HeadOutput { boxes: ob.clone(), scores: os.clone() };
    let out = loss.forward(&o2m, &o2o, &Anchors::<B>::new(&FEATS, dev), &fx.gt::<B>(dev));
    check_terms("o2m", &terms_host(&out.one2many), fx.data("o2m.loss"));
    check_terms("o2o", &terms_host(&out.one2one), fx.data("o2o.loss"));
    check_terms("e2e", &terms_host(&out.terms), fx.data("e2e.loss"));
    check("e2e total", &host(out.total.clone()), fx.data("e2e.total"), REL_TOL);

    let grads = out.total.backward();
    for (key, t) in [("o2m.grad.boxes", mb), ("o2m.grad.scores", ms), ("o2o.grad.boxes", ob), ("o2o.grad.scores", os)] {
        let g = t.grad(&grads).unwrap_or_else(|| panic!("no gradient for {key}"));
        check(key, &host(g), fx.data(key), grad_tol);
    }
}

#[test]
fn e2e_loss_and_gradients_match_ultralytics_flex() {
    e2e_and_grads::<Autodiff<Flex>>(&Fx::load(), &Default::default(), REL_TOL);
}

#[cfg(feature = "wgpu")]
#[test]
fn e2e_loss_and_gradients_match_ultralytics_wgpu() {
    use burn::backend::wgpu::{Wgpu, WgpuDevice};
    e2e_and_grads::<Autodiff<Wgpu>>(&Fx::load(), &WgpuDevice::DefaultDevice, REL_TOL);
}

#[cfg(feature = "cuda")]
#[test]
fn e2e_loss_and_gradients_match_ultralytics_cuda() {
    use burn::backend::{cuda::CudaDevice, Cuda};
    e2e_and_grads::<Autodiff<Cuda>>(&Fx::load(), &CudaDevice::new(0), REL_TOL);
    assigner_and_branch_losses::<Cuda>(&CudaDevice::new(0));
}

/// A batch without any box (G = 0): only the class loss remains (all targets zero), box and L1 are exactly 0,
/// and gradients stay finite.
#[test]
fn empty_batch_matches_ultralytics() {
    type B = Autodiff<Flex>;
    let fx = Fx::load();
    let dev = Default::default();
    let gt = GtBoxes::<B> {
        bboxes: Tensor::zeros([3, 0, 4], &dev),
        labels: Tensor::zeros([3, 0], &dev),
        mask: Tensor::zeros([3, 0], &dev),
    };
    let mut loss = E2ELoss::new(NC, 10, LossGains::default());
    loss.set_epoch(3);
    let (mb, ob) =
        (fx.tensor::<B, 3>("o2m.boxes", &dev).require_grad(), fx.tensor::<B, 3>("o2o.boxes", &dev).require_grad());
    let o2m = HeadOutput { boxes: mb.clone(), scores: fx.tensor("o2m.scores", &dev) };
    let o2o = HeadOutput { boxes: ob.clone(), scores: fx.tensor("o2o.scores", &dev) };
    let out = loss.forward(&o2m, &o2o, &Anchors::<B>::new(&FEATS, &dev), &gt);
    check_terms("zero o2m", &terms_host(&out.one2many), fx.data("zero.o2m.loss"));
    check_terms("zero o2o", &terms_host(&out.one2one), fx.data("zero.o2o.loss"));
    check("zero e2e total", &host(out.total.clone()), fx.data("zero.e2e.total"), REL_TOL);
    let grads = out.total.backward();
    let g = host(mb.grad(&grads).expect("boxes stay in the graph"));
    assert!(g.iter().all(|v| *v == 0.0), "box gradients must be zero without targets");
    assert!(host(ob.grad(&grads).expect("boxes stay in the graph")).iter().all(|v| *v == 0.0));
}

#[test]
fn prog_loss_schedule_matches_ultralytics() {
    let fx = Fx::load();
    let reference = fx.data("schedule.o2m");
    let epochs = reference.len();
    let mut loss = E2ELoss::new(NC, epochs, LossGains::default());
    for (e, &r) in reference.iter().enumerate() {
        assert!((prog_loss_o2m(e, epochs) - r as f64).abs() < 1e-6, "epoch {e}: {} vs {r}", prog_loss_o2m(e, epochs));
        assert!((loss.o2m - r as f64).abs() < 1e-6 && (loss.o2o - (1.0 - r as f64)).abs() < 1e-6, "epoch {e}");
        loss.update();
    }
    // §3.1 of the reference: epochs = 100 → 0.8 at epoch 0, 0.792929 after 1 update, 0.446465 after 50, 0.1 at the end
    for (e, v) in [(0, 0.8), (1, 0.792929), (50, 0.446465), (99, 0.1)] {
        assert!((prog_loss_o2m(e, 100) - v).abs() < 1e-6, "epochs=100, epoch {e}");
    }
    assert_eq!(prog_loss_o2m(0, 1), 0.8, "a single epoch keeps the initial weight");
    assert_eq!(prog_loss_o2m(5, 3), 0.1, "past the last epoch the weight stays at its floor");
    println!("ProgLoss schedule for {epochs} epochs: {reference:?}");
}
