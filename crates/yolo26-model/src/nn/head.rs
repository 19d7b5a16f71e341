//! The YOLO26 `Detect` head: one-to-many (`cv2`/`cv3`) and one-to-one (`one2one_cv2`/`one2one_cv3`) branches,
//! `reg_max = 1` (4 raw LTRB distances per anchor, no DFL), depthwise-separable classification branch.
//!
//! ultralytics: `nn/modules/head.py::Detect` with `legacy=False`, `end2end=True`.
//! Outputs per head: `boxes [B, 4, A]` (raw LTRB in grid units) and `scores [B, nc, A]` (logits), with the
//! anchors of P3, P4, P5 concatenated (row-major within a level, `A = Σ h_i·w_i`). The branches run on the NHWC
//! feature maps (`[B, h, w, c]`); each branch's `[B, h, w, 4 | nc]` output is turned to `[B, 4 | nc, h·w]` here.

use burn::nn::conv::Conv2d;
use burn::prelude::*;

use kernels_cubecl::conv::Activation;

use super::conv::{conv1x1_bias, conv2d_module_nhwc, Conv, ConvConfig};
use crate::YoloBackend;

/// Box branch `Sequential(Conv(c1, c2, 3), Conv(c2, c2, 3), Conv2d(c2, 4, 1))` (one entry of `Detect.cv2`).
/// Built by [`BoxBranchConfig::init`].
#[derive(Module, Debug)]
pub struct BoxBranch<B: Backend> {
    /// 3×3 `Conv(c1, c2)`.
    pub i0: Conv<B>,
    /// 3×3 `Conv(c2, c2)`.
    pub i1: Conv<B>,
    /// Biased 1×1 `nn.Conv2d(c2, 4)`: LTRB distances.
    pub i2: Conv2d<B>,
}

/// Arguments of a [`BoxBranch`].
#[derive(Config, Debug)]
pub struct BoxBranchConfig {
    /// Input channels (the feature level's).
    pub c1: usize,
    /// Hidden channels.
    pub c2: usize,
}

impl BoxBranchConfig {
    /// Builds the [`BoxBranch`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> BoxBranch<B> {
        BoxBranch {
            i0: ConvConfig::new(self.c1, self.c2).with_k(3).init(device),
            i1: ConvConfig::new(self.c2, self.c2).with_k(3).init(device),
            i2: conv1x1_bias(self.c2, 4, device),
        }
    }
}

impl<B: YoloBackend> BoxBranch<B> {
    /// `[B, H, W, c1] → [B, H, W, 4]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        conv2d_module_nhwc(&self.i2, self.i1.forward(self.i0.forward(x)), Activation::None)
    }
}

/// `Sequential(DWConv(c1, c1, 3), Conv(c1, c2, 1))`: a depthwise-separable conv. Built by [`DwSepConfig::init`].
#[derive(Module, Debug)]
pub struct DwSep<B: Backend> {
    /// Depthwise 3×3 `DWConv(c1, c1)`.
    pub i0: Conv<B>,
    /// Pointwise 1×1 `Conv(c1, c2)`.
    pub i1: Conv<B>,
}

/// Arguments of a [`DwSep`].
#[derive(Config, Debug)]
pub struct DwSepConfig {
    /// Input channels.
    pub c1: usize,
    /// Output channels.
    pub c2: usize,
}

impl DwSepConfig {
    /// Builds the [`DwSep`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> DwSep<B> {
        DwSep {
            i0: ConvConfig::dw(self.c1, self.c1, 3).init(device),
            i1: ConvConfig::new(self.c1, self.c2).init(device),
        }
    }
}

impl<B: YoloBackend> DwSep<B> {
    /// `[B, H, W, c1] → [B, H, W, c2]`.
    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        self.i1.forward(self.i0.forward(x))
    }
}

/// Class branch `Sequential(DwSep(c1 → c3), DwSep(c3 → c3), Conv2d(c3, nc, 1))` (one entry of `Detect.cv3`).
/// Built by [`ClsBranchConfig::init`].
#[derive(Module, Debug)]
pub struct ClsBranch<B: Backend> {
    /// `DwSep(c1, c3)`.
    pub i0: DwSep<B>,
    /// `DwSep(c3, c3)`.
    pub i1: DwSep<B>,
    /// Biased 1×1 `nn.Conv2d(c3, nc)`: class logits.
    pub i2: Conv2d<B>,
}

/// Arguments of a [`ClsBranch`].
#[derive(Config, Debug)]
pub struct ClsBranchConfig {
    /// Input channels (the feature level's).
    pub c1: usize,
    /// Hidden channels.
    pub c3: usize,
    /// Number of classes.
    pub nc: usize,
}

impl ClsBranchConfig {
    /// Builds the [`ClsBranch`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> ClsBranch<B> {
        ClsBranch {
            i0: DwSepConfig::new(self.c1, self.c3).init(device),
            i1: DwSepConfig::new(self.c3, self.c3).init(device),
            i2: conv1x1_bias(self.c3, self.nc, device),
        }
    }
}

impl<B: YoloBackend> ClsBranch<B> {
    /// `[B, H, W, c1] → [B, H, W, nc]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        conv2d_module_nhwc(&self.i2, self.i1.forward(self.i0.forward(x)), Activation::None)
    }
}

/// Raw outputs of one head: `boxes [B, 4, A]`, `scores [B, nc, A]`.
#[derive(Debug, Clone)]
pub struct HeadOutput<B: Backend> {
    /// LTRB distances in grid units, `[B, 4, A]`.
    pub boxes: Tensor<B, 3>,
    /// Class logits, `[B, nc, A]`.
    pub scores: Tensor<B, 3>,
}

/// Both heads plus the feature-map sizes `[h, w]` of P3, P4, P5 (for the anchor grid).
#[derive(Debug, Clone)]
pub struct DetectOutput<B: Backend> {
    /// The one-to-many head (`cv2`/`cv3`; NMS inference and the training loss).
    pub one2many: HeadOutput<B>,
    /// The one-to-one head (`one2one_cv2`/`one2one_cv3`; end-to-end inference).
    pub one2one: HeadOutput<B>,
    /// `[h, w]` of each input level.
    pub feat_shapes: Vec<[usize; 2]>,
}

/// ultralytics `nn.modules.head.Detect(nc, reg_max=1, end2end=True, ch)` (see the module docs). Built by
/// [`DetectConfig::init`].
#[derive(Module, Debug)]
pub struct Detect<B: Backend> {
    /// One-to-many box branches, one per level.
    pub cv2: Vec<BoxBranch<B>>,
    /// One-to-many class branches, one per level.
    pub cv3: Vec<ClsBranch<B>>,
    /// One-to-one box branches, one per level.
    pub one2one_cv2: Vec<BoxBranch<B>>,
    /// One-to-one class branches, one per level.
    pub one2one_cv3: Vec<ClsBranch<B>>,
    /// Number of classes.
    pub nc: usize,
}

/// Arguments of a [`Detect`] head.
#[derive(Config, Debug)]
pub struct DetectConfig {
    /// Number of classes.
    pub nc: usize,
    /// Input channels of P3, P4, P5.
    pub ch: Vec<usize>,
}

impl DetectConfig {
    /// Builds the [`Detect`] head. Box hidden `c2 = max(16, ch0/4, 4)`, class hidden `c3 = max(ch0, min(nc, 100))`.
    pub fn init<B: Backend>(&self, device: &B::Device) -> Detect<B> {
        let (nc, ch) = (self.nc, &self.ch);
        let c2 = 16.max(ch[0] / 4).max(4);
        let c3 = ch[0].max(nc.min(100));
        let boxes = || ch.iter().map(|&x| BoxBranchConfig::new(x, c2).init(device)).collect::<Vec<_>>();
        let cls = || ch.iter().map(|&x| ClsBranchConfig::new(x, c3, nc).init(device)).collect::<Vec<_>>();
        Detect { cv2: boxes(), cv3: cls(), one2one_cv2: boxes(), one2one_cv3: cls(), nc }
    }
}

/// `[h, w]` of each NHWC feature map `[B, h, w, c]` (for the anchor grid).
pub fn feature_shapes<B: Backend>(feats: &[Tensor<B, 4>]) -> Vec<[usize; 2]> {
    feats.iter().map(|f| [f.dims()[1], f.dims()[2]]).collect()
}

/// A branch output `[B, h, w, c]` as `[B, c, h·w]`.
fn channels_first<B: Backend>(y: Tensor<B, 4>) -> Tensor<B, 3> {
    let [b, h, w, c] = y.dims();
    y.reshape([b, h * w, c]).swap_dims(1, 2)
}

impl<B: YoloBackend> Detect<B> {
    fn run_head(&self, feats: &[Tensor<B, 4>], bx: &[BoxBranch<B>], cl: &[ClsBranch<B>]) -> HeadOutput<B> {
        let boxes = feats.iter().zip(bx).map(|(f, m)| channels_first(m.forward(f.clone()))).collect();
        let scores = feats.iter().zip(cl).map(|(f, m)| channels_first(m.forward(f.clone()))).collect();
        HeadOutput { boxes: Tensor::cat(boxes, 2), scores: Tensor::cat(scores, 2) }
    }

    /// Raw one-to-many head only (what NMS inference needs). `[P3, P4, P5]` (NHWC) → `boxes [B, 4, A]`,
    /// `scores [B, nc, A]`.
    pub fn forward_one2many(&self, feats: &[Tensor<B, 4>]) -> HeadOutput<B> {
        self.run_head(feats, &self.cv2, &self.cv3)
    }

    /// Raw one-to-one head only (what end-to-end inference needs). In training ultralytics feeds it detached
    /// features; the caller detaches (`Tensor::detach`) where gradients must not flow.
    pub fn forward_one2one(&self, feats: &[Tensor<B, 4>]) -> HeadOutput<B> {
        self.run_head(feats, &self.one2one_cv2, &self.one2one_cv3)
    }

    /// `[P3 [B, H/8, W/8, ch0], P4 [B, H/16, W/16, ch1], P5 [B, H/32, W/32, ch2]]` (NHWC) → both heads'
    /// `boxes [B, 4, A]`, `scores [B, nc, A]`.
    pub fn forward(&self, feats: &[Tensor<B, 4>]) -> DetectOutput<B> {
        let feat_shapes = feature_shapes(feats);
        DetectOutput { one2many: self.forward_one2many(feats), one2one: self.forward_one2one(feats), feat_shapes }
    }
}
