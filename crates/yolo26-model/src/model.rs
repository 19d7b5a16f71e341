//! The YOLO26 detection model: backbone, neck and Detect head as in `yolo26.yaml`.
//!
//! Field `layerN` is ultralytics' `model.N` (the yaml row), so a weight `model.13.cv1.conv.weight` lives at
//! `layer13.cv1.conv.weight` (see `crate::load` for the full naming rule).
//!
//! The network runs NHWC (`[B, H, W, C]`, PyTorch's `channels_last`): the image batch `[B, 3, H, W]` is permuted
//! once on entry, every convolution reads and writes channels-last, and concatenations are along axis 3. The head
//! gives ultralytics' layouts (`[B, 4, A]`, `[B, nc, A]`).

use burn::prelude::*;
use kernels_cubecl::nhwc::cat_channels;

use crate::config::Yolo26Config;
use crate::nn::attention::{C2Psa, C2PsaConfig};
use crate::nn::blocks::{C3k2, C3k2Config, Sppf, SppfConfig};
use crate::nn::conv::{Conv, ConvConfig};
use crate::nn::head::{Detect, DetectConfig, DetectOutput};

/// ultralytics `nn.tasks.DetectionModel` built from `yolo26.yaml`: one field per yaml row that has weights
/// (`layerN` = `model.N`). Built by [`Yolo26Config::init`].
#[derive(Module, Debug)]
pub struct Yolo26<B: Backend> {
    /// Row 0: `Conv(3, 64w, 3, 2)`, P1/2.
    pub layer0: Conv<B>,
    /// Row 1: `Conv(64w, 128w, 3, 2)`, P2/4.
    pub layer1: Conv<B>,
    /// Row 2: `C3k2(128w, 256w, 2d, c3k=False, e=0.25)`.
    pub layer2: C3k2<B>,
    /// Row 3: `Conv(256w, 256w, 3, 2)`, P3/8.
    pub layer3: Conv<B>,
    /// Row 4: `C3k2(256w, 512w, 2d, c3k=False, e=0.25)`: backbone P3.
    pub layer4: C3k2<B>,
    /// Row 5: `Conv(512w, 512w, 3, 2)`, P4/16.
    pub layer5: Conv<B>,
    /// Row 6: `C3k2(512w, 512w, 2d, c3k=True)`: backbone P4.
    pub layer6: C3k2<B>,
    /// Row 7: `Conv(512w, 1024w, 3, 2)`, P5/32.
    pub layer7: Conv<B>,
    /// Row 8: `C3k2(1024w, 1024w, 2d, c3k=True)`.
    pub layer8: C3k2<B>,
    /// Row 9: `SPPF(1024w, 1024w, 5, 3, True)`.
    pub layer9: Sppf<B>,
    /// Row 10: `C2PSA(1024w, 1024w, 2d)`: backbone P5.
    pub layer10: C2Psa<B>,
    // neck (11 upsample, 12 concat, 14 upsample, 15 concat, 18 concat, 21 concat have no weights)
    /// Row 13: `C3k2(cat(11, 6), 512w, 2d, c3k=True)`.
    pub layer13: C3k2<B>,
    /// Row 16: `C3k2(cat(14, 4), 256w, 2d, c3k=True)`: Detect input P3/8.
    pub layer16: C3k2<B>,
    /// Row 17: `Conv(256w, 256w, 3, 2)`.
    pub layer17: Conv<B>,
    /// Row 19: `C3k2(cat(17, 13), 512w, 2d, c3k=True)`: Detect input P4/16.
    pub layer19: C3k2<B>,
    /// Row 20: `Conv(512w, 512w, 3, 2)`.
    pub layer20: Conv<B>,
    /// Row 22: `C3k2(cat(20, 10), 1024w, 1, c3k=True, e=0.5, attn=True)`: Detect input P5/32.
    pub layer22: C3k2<B>,
    /// Row 23: `Detect(nc, [16, 19, 22])`.
    pub layer23: Detect<B>,
}

/// Rows 11 and 14, `nn.Upsample(None, 2, "nearest")` on NHWC: `[B, H, W, C]` → `[B, 2H, 2W, C]` (each pixel
/// repeated 2×2; [`kernels_cubecl::nhwc::upsample2x`]).
pub fn upsample2x_nhwc<B: crate::YoloBackend>(x: Tensor<B, 4>) -> Tensor<B, 4> {
    kernels_cubecl::nhwc::upsample2x(x)
}

/// Every intermediate output the ultralytics reference saves (index = yaml row).
pub struct Yolo26Trace<B: Backend> {
    /// Output of yaml rows 0–22, `[B, C, H, W]` each (NCHW views of the NHWC activations; all `Some` after
    /// [`Yolo26::forward_trace`]).
    pub layers: Vec<Option<Tensor<B, 4>>>,
    /// Output of row 23, the Detect head.
    pub head: DetectOutput<B>,
}

impl Yolo26Config {
    /// Builds a randomly initialised model (load weights with `crate::load`). `w`/`d` in the [`Yolo26`] field
    /// docs are the scale's width and depth multipliers ([`Yolo26Config::ch`], [`Yolo26Config::repeats`]).
    pub fn init<B: Backend>(&self, device: &B::Device) -> Yolo26<B> {
        let ch = |c| self.ch(c);
        let r = |n| self.repeats(n);
        let c3k = self.scale.forces_c3k();
        let conv = |c1, c2| ConvConfig::new(c1, c2).with_k(3).with_s(2).init(device);
        let c3k2 =
            |c1, c2, n, c3k: bool, e: f64| C3k2Config::new(c1, c2).with_n(n).with_c3k(c3k).with_e(e).init(device);
        let (c0, c1, c2, c3, c4) = (ch(64), ch(128), ch(256), ch(256), ch(512));
        let (c5, c6, c7, c8, c9) = (ch(512), ch(512), ch(1024), ch(1024), ch(1024));
        let c13 = ch(512);
        let c16 = ch(256);
        let c17 = ch(256);
        let c19 = ch(512);
        let c20 = ch(512);
        let c22 = ch(1024);
        Yolo26 {
            layer0: conv(3, c0),
            layer1: conv(c0, c1),
            layer2: c3k2(c1, c2, r(2), c3k, 0.25),
            layer3: conv(c2, c3),
            layer4: c3k2(c3, c4, r(2), c3k, 0.25),
            layer5: conv(c4, c5),
            layer6: c3k2(c5, c6, r(2), true, 0.5),
            layer7: conv(c6, c7),
            layer8: c3k2(c7, c8, r(2), true, 0.5),
            layer9: SppfConfig::new(c8, c9).with_k(5).with_n(3).with_shortcut(true).init(device),
            layer10: C2PsaConfig::new(c9).with_n(r(2)).init(device),
            layer13: c3k2(c9 + c6, c13, r(2), true, 0.5),
            layer16: c3k2(c13 + c4, c16, r(2), true, 0.5),
            layer17: conv(c16, c17),
            layer19: c3k2(c17 + c13, c19, r(2), true, 0.5),
            layer20: conv(c19, c20),
            layer22: C3k2Config::new(c20 + c9, c22).with_n(1).with_c3k(true).with_attn(true).init(device),
            layer23: DetectConfig::new(self.nc, vec![c16, c19, c22]).init(device),
        }
    }
}

/// Records each yaml row's output for [`Yolo26::forward_trace`]; off (no clone, nothing kept) otherwise.
struct Tap<B: Backend>(Option<Vec<Option<Tensor<B, 4>>>>);

impl<B: Backend> Tap<B> {
    fn off() -> Self {
        Tap(None)
    }

    fn on() -> Self {
        Tap(Some(vec![None; 23]))
    }

    /// Passes `t` (NHWC), the output of yaml row `row`, on, keeping an NCHW view when tracing.
    fn row(&mut self, row: usize, t: Tensor<B, 4>) -> Tensor<B, 4> {
        if let Some(layers) = &mut self.0 {
            layers[row] = Some(t.clone().permute([0, 3, 1, 2]));
        }
        t
    }
}

impl<B: Backend> Yolo26<B> {
    /// Number of classes of the head.
    pub fn num_classes(&self) -> usize {
        self.layer23.nc
    }
}

impl<B: crate::YoloBackend> Yolo26<B> {
    /// Backbone, yaml rows 0–10: `[B, H, W, 3]` → P3/8 (row 4), P4/16 (row 6), P5/32 (row 10), NHWC.
    fn backbone(&self, x: Tensor<B, 4>, t: &mut Tap<B>) -> [Tensor<B, 4>; 3] {
        let x = t.row(0, self.layer0.forward(x)); // Conv [64, 3, 2], P1/2
        let x = t.row(1, self.layer1.forward(x)); // Conv [128, 3, 2], P2/4
        let x = t.row(2, self.layer2.forward(x)); // C3k2 [256, False, 0.25]
        let x = t.row(3, self.layer3.forward(x)); // Conv [256, 3, 2], P3/8
        let p3 = t.row(4, self.layer4.forward(x)); // C3k2 [512, False, 0.25]
        let x = t.row(5, self.layer5.forward(p3.clone())); // Conv [512, 3, 2], P4/16
        let p4 = t.row(6, self.layer6.forward(x)); // C3k2 [512, True]
        let x = t.row(7, self.layer7.forward(p4.clone())); // Conv [1024, 3, 2], P5/32
        let x = t.row(8, self.layer8.forward(x)); // C3k2 [1024, True]
        let x = t.row(9, self.layer9.forward(x)); // SPPF [1024, 5, 3, True]
        let p5 = t.row(10, self.layer10.forward(x)); // C2PSA [1024]
        [p3, p4, p5]
    }

    /// Neck, yaml rows 11–22: top-down then bottom-up over the backbone's P3, P4, P5 → the Detect inputs
    /// (rows 16, 19, 22) at the same strides.
    fn neck(&self, [p3, p4, p5]: [Tensor<B, 4>; 3], t: &mut Tap<B>) -> [Tensor<B, 4>; 3] {
        let x = t.row(11, upsample2x_nhwc(p5.clone())); // nn.Upsample [None, 2, "nearest"]
        let x = t.row(12, cat_channels(vec![x, p4])); // Concat [-1, 6], cat backbone P4
        let h13 = t.row(13, self.layer13.forward(x)); // C3k2 [512, True]
        let x = t.row(14, upsample2x_nhwc(h13.clone())); // nn.Upsample [None, 2, "nearest"]
        let x = t.row(15, cat_channels(vec![x, p3])); // Concat [-1, 4], cat backbone P3
        let out_p3 = t.row(16, self.layer16.forward(x)); // C3k2 [256, True], P3/8-small
        let x = t.row(17, self.layer17.forward(out_p3.clone())); // Conv [256, 3, 2]
        let x = t.row(18, cat_channels(vec![x, h13])); // Concat [-1, 13], cat head P4
        let out_p4 = t.row(19, self.layer19.forward(x)); // C3k2 [512, True], P4/16-medium
        let x = t.row(20, self.layer20.forward(out_p4.clone())); // Conv [512, 3, 2]
        let x = t.row(21, cat_channels(vec![x, p5])); // Concat [-1, 10], cat head P5
        let out_p5 = t.row(22, self.layer22.forward(x)); // C3k2 [1024, True, 0.5, True], P5/32-large
        [out_p3, out_p4, out_p5]
    }

    /// Backbone and neck only: `[B, 3, H, W]` → the three Detect inputs P3/8, P4/16, P5/32, NHWC
    /// (`[B, H/s, W/s, c]`; [`crate::nn::head::feature_shapes`] gives their `[h, w]`).
    pub fn forward_features(&self, x: Tensor<B, 4>) -> [Tensor<B, 4>; 3] {
        let mut t = Tap::off();
        let feats = self.backbone(x.permute([0, 2, 3, 1]), &mut t);
        self.neck(feats, &mut t)
    }

    /// Full forward: raw outputs of both heads (`x`: `[B, 3, H, W]`, RGB in [0, 1], H and W multiples of 32;
    /// `boxes [B, 4, A]`, `scores [B, nc, A]`, see [`DetectOutput`]).
    pub fn forward(&self, x: Tensor<B, 4>) -> DetectOutput<B> {
        self.layer23.forward(&self.forward_features(x))
    }

    /// Forward that also returns each yaml row's output (rows 0–22), for parity checks.
    pub fn forward_trace(&self, x: Tensor<B, 4>) -> Yolo26Trace<B> {
        let mut t = Tap::on();
        let feats = self.backbone(x.permute([0, 2, 3, 1]), &mut t);
        let feats = self.neck(feats, &mut t);
        let head = self.layer23.forward(&feats);
        Yolo26Trace { layers: t.0.expect("tap on"), head }
    }
}
