//! YOLO26 detection loss: ultralytics 8.4.190 `v8DetectionLoss` with `reg_max = 1` (CIoU box loss, L1 on
//! image-size-normalised LTRB distances instead of DFL, BCE class loss) and `E2ELoss` (one2many + one2one
//! branches mixed by the ProgLoss schedule).
//!
//! Layouts: raw head outputs as `Detect` returns them, `boxes [B, 4, A]` (LTRB distances in grid units, may be
//! negative) and `scores [B, nc, A]` (logits); anchors from [`Anchors`] (`points [1, 2, A]` grid units,
//! `strides [1, 1, A]`); ground truth padded as [`GtBoxes`] (xyxy pixels). The loss terms of a branch are one
//! `[3]` tensor `(box, cls, l1)` already multiplied by the gains and by the batch size, as ultralytics returns
//! them. Everything stays on the
//! device (no host sync); gradients flow into the raw predictions only (the assigner sees detached copies).
//!
//! The work runs in the fused `kernels-cubecl` ops (each with its backward kernel on CubeCL backends, plain
//! tensor ops elsewhere): `detect_decode` (LTRB → xyxy pixels for the assigner), `task_aligned_assign`,
//! `bbox_loss_sums` (CIoU + L1 + Σ weights over the anchors, target boxes gathered by the assigned slot) and
//! `bce_onehot_sum` (the class loss without the dense `[B, A, C]` targets) and `loss_items` (normalisation and
//! gains), composed into one op per branch ([`kernels_cubecl::branch_loss`]; on CubeCL backends five launches forward and
//! one backward). The op takes the branch's ProgLoss weight, so what remains here is one addition of the two
//! weighted branch losses (and of their terms, for logging).

use burn::prelude::*;
use yolo26_model::nn::head::HeadOutput;
use yolo26_model::postprocess::Anchors;

use crate::assigner::{Assignment, GtBoxes, TaskAlignedAssigner};
use crate::backend::TrainBackend;
use kernels_cubecl::branch_loss::{branch_loss, BranchConfig};

/// Loss gains (ultralytics `cfg/default.yaml`: `box 7.5`, `cls 0.5`, `dfl 1.5` — the latter weighs L1 here).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossGains {
    pub box_gain: f64,
    pub cls_gain: f64,
    pub l1_gain: f64,
}

impl Default for LossGains {
    fn default() -> Self {
        LossGains { box_gain: 7.5, cls_gain: 0.5, l1_gain: 1.5 }
    }
}

/// The three loss items (ultralytics `box_loss`, `cls_loss`, `l1_loss`), gain × batch size applied, as one
/// `[3]` tensor `(box, cls, l1)` (the order of ultralytics' `loss_items`), and the loss to back-propagate.
#[derive(Debug, Clone)]
pub struct LossTerms<B: Backend> {
    /// `[3]` `(box, cls, l1)`: values for logging; no gradient flows through them.
    pub items: Tensor<B, 1>,
    /// `[1]` the differentiable loss `weight·(box + cls + l1)` (ultralytics `loss.sum()`): weight 1 from
    /// [`DetectionLoss`]; inside [`E2ELoss`] a branch's ProgLoss weight, and for the mixed terms the total.
    pub loss: Tensor<B, 1>,
}

impl<B: Backend> LossTerms<B> {
    /// `[1]` box (CIoU) loss.
    pub fn box_loss(&self) -> Tensor<B, 1> {
        self.items.clone().narrow(0, 0, 1)
    }

    /// `[1]` classification (BCE) loss.
    pub fn cls_loss(&self) -> Tensor<B, 1> {
        self.items.clone().narrow(0, 1, 1)
    }

    /// `[1]` L1 loss on the normalised distances.
    pub fn l1_loss(&self) -> Tensor<B, 1> {
        self.items.clone().narrow(0, 2, 1)
    }

    /// `box + cls + l1` as a value, `[1]` (back-propagate [`Self::loss`]).
    pub fn sum(&self) -> Tensor<B, 1> {
        self.items.clone().sum()
    }
}

/// ultralytics `v8DetectionLoss(model, tal_topk, tal_topk2)` for a `reg_max = 1` head.
#[derive(Debug, Clone)]
pub struct DetectionLoss {
    pub assigner: TaskAlignedAssigner,
    pub gains: LossGains,
}

impl DetectionLoss {
    pub fn new(num_classes: usize, topk: usize, topk2: Option<usize>, gains: LossGains) -> Self {
        DetectionLoss { assigner: TaskAlignedAssigner::new(topk, topk2, num_classes), gains }
    }

    /// `v8DetectionLoss.loss(preds, batch)`: the terms and their sum as the loss.
    pub fn forward<B: TrainBackend>(
        &self,
        head: &HeadOutput<B>,
        anchors: &Anchors<B>,
        gt: &GtBoxes<B>,
    ) -> LossTerms<B> {
        self.forward_with_assignment(head, anchors, gt).0
    }

    /// [`Self::forward`] plus the assigner's output (`get_assigned_targets_and_loss`).
    /// The input size is taken from the first feature map: `imgsz = feat_shapes[0] · stride[0]`.
    pub fn forward_with_assignment<B: TrainBackend>(
        &self,
        head: &HeadOutput<B>,
        anchors: &Anchors<B>,
        gt: &GtBoxes<B>,
    ) -> (LossTerms<B>, Assignment<B>) {
        let (terms, _, asg) = self.forward_weighted(head, anchors, gt, 1.0);
        (terms, asg)
    }

    /// The branch with weight `mix` in the loss: `(terms with loss = mix·Σ items, mix·items [3], assignment)`.
    fn forward_weighted<B: TrainBackend>(
        &self,
        head: &HeadOutput<B>,
        anchors: &Anchors<B>,
        gt: &GtBoxes<B>,
        mix: f64,
    ) -> (LossTerms<B>, Tensor<B, 1>, Assignment<B>) {
        let [_, c, _] = head.scores.dims();
        assert_eq!(
            c, self.assigner.num_classes,
            "DetectionLoss: {c} class logits for {} classes",
            self.assigner.num_classes
        );
        let [fh, fw] = anchors.feat_shapes[0];
        let s0 = yolo26_model::config::STRIDES[0] as f64;
        let (img_h, img_w) = (fh as f64 * s0, fw as f64 * s0);

        // decode → assignment → Σ w·(1 − CIoU), Σ BCE, Σ w·L1 → items normalised by max(Σ w, 1), gain ×
        // batch size: one op (see `branch_loss`)
        let g = self.gains;
        let cfg = BranchConfig {
            tal: self.assigner.config,
            image: [img_w as f32, img_h as f32],
            gains: [g.box_gain as f32, g.cls_gain as f32, g.l1_gain as f32],
            mix: mix as f32,
        };
        let out = branch_loss(
            head.boxes.clone(),
            head.scores.clone(),
            anchors.grid.clone(),
            gt.bboxes.clone(),
            gt.labels.clone(),
            gt.mask.clone(),
            cfg,
        );
        let terms = LossTerms { items: out.items, loss: out.total };
        let asg = Assignment {
            target_labels: out.labels,
            gt_bboxes: gt.bboxes.clone().detach(),
            target_score_sum: out.score_sum,
            num_classes: c,
            fg_mask: out.fg,
            target_gt_idx: out.gt_idx,
        };
        (terms, out.terms, asg)
    }
}

/// ProgLoss one2many weight during epoch `epoch` (0-based) of `epochs`: ultralytics `E2ELoss.decay(updates)` with
/// `updates = epoch`, `max(1 − e/max(E − 1, 1), 0)·(0.8 − 0.1) + 0.1`. The one2one weight is `max(1 − o2m, 0)`.
pub fn prog_loss_o2m(epoch: usize, epochs: usize) -> f64 {
    const O2M_INIT: f64 = 0.8;
    const O2M_FINAL: f64 = 0.1;
    let e_max = (epochs as f64 - 1.0).max(1.0);
    (1.0 - epoch as f64 / e_max).max(0.0) * (O2M_INIT - O2M_FINAL) + O2M_FINAL
}

/// Output of [`E2ELoss::forward`].
#[derive(Debug, Clone)]
pub struct E2ELossOutput<B: Backend> {
    /// `o2m·L_o2m + o2o·L_o2o`, term by term (ultralytics `E2ELoss.__call__(...)[0]`); its `loss` is `total`.
    pub terms: LossTerms<B>,
    /// `[1]`: sum of `terms` — the scalar to back-propagate.
    pub total: Tensor<B, 1>,
    /// The one2many branch: unweighted items; `loss` = `o2m·Σ items`.
    pub one2many: LossTerms<B>,
    /// The one2one branch (the one ultralytics logs as loss items): unweighted items; `loss` = `o2o·Σ items`.
    pub one2one: LossTerms<B>,
}

/// ultralytics `E2ELoss`: one2many branch with `topk = 10`, one2one branch with `topk = 7, topk2 = 1`, mixed by
/// the ProgLoss weights, which change once per epoch ([`E2ELoss::set_epoch`] / [`E2ELoss::update`]).
///
/// Detach contract: in training the one2one head runs on **detached** neck features (ultralytics `x_detach`), so
/// its loss trains only the one2one head. This loss cannot detach what it is given; the caller builds the
/// `one2one` [`HeadOutput`] from `feats.detach()` (see `Detect::forward_one2one`).
#[derive(Debug, Clone)]
pub struct E2ELoss {
    pub one2many: DetectionLoss,
    pub one2one: DetectionLoss,
    pub epochs: usize,
    /// Number of `update()` calls so far (= the current 0-based epoch).
    pub updates: usize,
    pub o2m: f64,
    pub o2o: f64,
}

impl E2ELoss {
    pub fn new(num_classes: usize, epochs: usize, gains: LossGains) -> Self {
        let mut s = E2ELoss {
            one2many: DetectionLoss::new(num_classes, 10, None, gains),
            one2one: DetectionLoss::new(num_classes, 7, Some(1), gains),
            epochs,
            updates: 0,
            o2m: 0.0,
            o2o: 0.0,
        };
        s.set_epoch(0);
        s
    }

    /// Weights in force during `epoch` (also what a resume at `epoch` restores).
    pub fn set_epoch(&mut self, epoch: usize) {
        self.updates = epoch;
        self.o2m = prog_loss_o2m(epoch, self.epochs);
        self.o2o = (1.0 - self.o2m).max(0.0);
    }

    /// Called once at the end of every epoch (ultralytics `E2ELoss.update`).
    pub fn update(&mut self) {
        self.set_epoch(self.updates + 1);
    }

    pub fn forward<B: TrainBackend>(
        &self,
        one2many: &HeadOutput<B>,
        one2one: &HeadOutput<B>,
        anchors: &Anchors<B>,
        gt: &GtBoxes<B>,
    ) -> E2ELossOutput<B> {
        let (l_o2m, t_o2m, _) = self.one2many.forward_weighted(one2many, anchors, gt, self.o2m);
        let (l_o2o, t_o2o, _) = self.one2one.forward_weighted(one2one, anchors, gt, self.o2o);
        let total = l_o2m.loss.clone() + l_o2o.loss.clone();
        let terms = LossTerms { items: t_o2m + t_o2o, loss: total.clone() };
        E2ELossOutput { total, terms, one2many: l_o2m, one2one: l_o2o }
    }
}
