//! The YOLO26 `Detect` head: one-to-many (`cv2`/`cv3`) and one-to-one (`one2one_cv2`/`one2one_cv3`) branches,
//! `reg_max = 1` (4 raw LTRB distances per anchor, no DFL), depthwise-separable classification branch.
//!
//! ultralytics: `nn/modules/head.py::Detect` with `legacy=False`, `end2end=True`.
//! Outputs per head: `boxes [B, 4, A]` (raw LTRB in grid units) and `scores [B, nc, A]` (logits), with the
//! anchors of P3, P4, P5 concatenated (row-major within a level, `A = Σ h_i·w_i`).

use burn::nn::conv::Conv2d;
use burn::prelude::*;

use super::conv::{conv1x1_bias, Conv, ConvConfig};

/// Box branch `Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), Conv2d(c2, 4, 1))`.
#[derive(Module, Debug)]
pub struct BoxBranch<B: Backend> {
    pub i0: Conv<B>,
    pub i1: Conv<B>,
    pub i2: Conv2d<B>,
}

/// `Sequential(DWConv(c, c, 3), Conv(c, c_out, 1))`.
#[derive(Module, Debug)]
pub struct DwSep<B: Backend> {
    pub i0: Conv<B>,
    pub i1: Conv<B>,
}

/// Class branch `Sequential(DwSep(x → c3), DwSep(c3 → c3), Conv2d(c3, nc, 1))`.
#[derive(Module, Debug)]
pub struct ClsBranch<B: Backend> {
    pub i0: DwSep<B>,
    pub i1: DwSep<B>,
    pub i2: Conv2d<B>,
}

impl<B: Backend> BoxBranch<B> {
    fn new(x: usize, c2: usize, device: &B::Device) -> Self {
        BoxBranch {
            i0: ConvConfig::new(x, c2).with_k(3).init(device),
            i1: ConvConfig::new(c2, c2).with_k(3).init(device),
            i2: conv1x1_bias(c2, 4, device),
        }
    }
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        self.i2.forward(self.i1.forward(self.i0.forward(x)))
    }
}

impl<B: Backend> DwSep<B> {
    fn new(c: usize, c_out: usize, device: &B::Device) -> Self {
        DwSep { i0: ConvConfig::dw(c, c, 3).init(device), i1: ConvConfig::new(c, c_out).init(device) }
    }
    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        self.i1.forward(self.i0.forward(x))
    }
}

impl<B: Backend> ClsBranch<B> {
    fn new(x: usize, c3: usize, nc: usize, device: &B::Device) -> Self {
        ClsBranch { i0: DwSep::new(x, c3, device), i1: DwSep::new(c3, c3, device), i2: conv1x1_bias(c3, nc, device) }
    }
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        self.i2.forward(self.i1.forward(self.i0.forward(x)))
    }
}

/// Raw outputs of one head: `boxes [B, 4, A]`, `scores [B, nc, A]`.
#[derive(Debug, Clone)]
pub struct HeadOutput<B: Backend> {
    pub boxes: Tensor<B, 3>,
    pub scores: Tensor<B, 3>,
}

/// Both heads plus the feature-map sizes `[h, w]` of P3, P4, P5 (for the anchor grid).
#[derive(Debug, Clone)]
pub struct DetectOutput<B: Backend> {
    pub one2many: HeadOutput<B>,
    pub one2one: HeadOutput<B>,
    pub feat_shapes: Vec<[usize; 2]>,
}

#[derive(Module, Debug)]
pub struct Detect<B: Backend> {
    pub cv2: Vec<BoxBranch<B>>,
    pub cv3: Vec<ClsBranch<B>>,
    pub one2one_cv2: Vec<BoxBranch<B>>,
    pub one2one_cv3: Vec<ClsBranch<B>>,
    pub nc: usize,
}

impl<B: Backend> Detect<B> {
    /// `ch`: input channels of P3, P4, P5. Box hidden `c2 = max(16, ch0/4, 4)`, class hidden `c3 = max(ch0, min(nc, 100))`.
    pub fn new(nc: usize, ch: &[usize], device: &B::Device) -> Self {
        let c2 = 16.max(ch[0] / 4).max(4);
        let c3 = ch[0].max(nc.min(100));
        let boxes = || ch.iter().map(|&x| BoxBranch::new(x, c2, device)).collect::<Vec<_>>();
        let cls = || ch.iter().map(|&x| ClsBranch::new(x, c3, nc, device)).collect::<Vec<_>>();
        Detect { cv2: boxes(), cv3: cls(), one2one_cv2: boxes(), one2one_cv3: cls(), nc }
    }

    fn run_head(&self, feats: &[Tensor<B, 4>], bx: &[BoxBranch<B>], cl: &[ClsBranch<B>]) -> HeadOutput<B> {
        let b = feats[0].dims()[0];
        let boxes = feats.iter().zip(bx).map(|(f, m)| m.forward(f.clone()).reshape([b as i32, 4, -1])).collect();
        let scores =
            feats.iter().zip(cl).map(|(f, m)| m.forward(f.clone()).reshape([b as i32, self.nc as i32, -1])).collect();
        HeadOutput { boxes: Tensor::cat(boxes, 2), scores: Tensor::cat(scores, 2) }
    }

    /// Raw one-to-many head only (what NMS inference needs).
    pub fn forward_one2many(&self, feats: &[Tensor<B, 4>]) -> HeadOutput<B> {
        self.run_head(feats, &self.cv2, &self.cv3)
    }

    /// Raw one-to-one head only (what end-to-end inference needs). In training ultralytics feeds it detached
    /// features; the caller detaches (`Tensor::detach`) where gradients must not flow.
    pub fn forward_one2one(&self, feats: &[Tensor<B, 4>]) -> HeadOutput<B> {
        self.run_head(feats, &self.one2one_cv2, &self.one2one_cv3)
    }

    pub fn forward(&self, feats: &[Tensor<B, 4>]) -> DetectOutput<B> {
        let feat_shapes = feats.iter().map(|f| [f.dims()[2], f.dims()[3]]).collect();
        DetectOutput { one2many: self.forward_one2many(feats), one2one: self.forward_one2one(feats), feat_shapes }
    }
}
