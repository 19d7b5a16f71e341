//! The YOLO26 detection model: backbone, neck and Detect head as in `yolo26.yaml`.
//!
//! Field `layerN` is ultralytics' `model.N` (the yaml row), so a weight `model.13.cv1.conv.weight` lives at
//! `layer13.cv1.conv.weight` (see `crate::load` for the full naming rule).

use burn::nn::interpolate::{Interpolate2d, Interpolate2dConfig, InterpolateMode};
use burn::prelude::*;

use crate::config::Yolo26Config;
use crate::nn::attention::C2Psa;
use crate::nn::blocks::{C3k2, C3k2Config, Sppf};
use crate::nn::conv::{Conv, ConvConfig};
use crate::nn::head::{Detect, DetectOutput};

#[derive(Module, Debug)]
pub struct Yolo26<B: Backend> {
    // backbone
    pub layer0: Conv<B>,
    pub layer1: Conv<B>,
    pub layer2: C3k2<B>,
    pub layer3: Conv<B>,
    pub layer4: C3k2<B>,
    pub layer5: Conv<B>,
    pub layer6: C3k2<B>,
    pub layer7: Conv<B>,
    pub layer8: C3k2<B>,
    pub layer9: Sppf<B>,
    pub layer10: C2Psa<B>,
    // neck (11 upsample, 12 concat, 14 upsample, 15 concat, 18 concat, 21 concat have no weights)
    pub layer13: C3k2<B>,
    pub layer16: C3k2<B>,
    pub layer17: Conv<B>,
    pub layer19: C3k2<B>,
    pub layer20: Conv<B>,
    pub layer22: C3k2<B>,
    pub layer23: Detect<B>,
    pub upsample: Interpolate2d,
}

/// Every intermediate output the ultralytics reference saves (index = yaml row).
pub struct Yolo26Trace<B: Backend> {
    pub layers: Vec<Option<Tensor<B, 4>>>,
    pub head: DetectOutput<B>,
}

impl Yolo26Config {
    /// Builds a randomly initialised model (load weights with `crate::load`).
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
            layer9: Sppf::new(c8, c9, 5, 3, device),
            layer10: C2Psa::new(c9, r(2), device),
            layer13: c3k2(c9 + c6, c13, r(2), true, 0.5),
            layer16: c3k2(c13 + c4, c16, r(2), true, 0.5),
            layer17: conv(c16, c17),
            layer19: c3k2(c17 + c13, c19, r(2), true, 0.5),
            layer20: conv(c19, c20),
            layer22: C3k2Config::new(c20 + c9, c22).with_n(1).with_c3k(true).with_attn(true).init(device),
            layer23: Detect::new(self.nc, &[c16, c19, c22], device),
            upsample: Interpolate2dConfig::new()
                .with_scale_factor(Some([2.0, 2.0]))
                .with_mode(InterpolateMode::Nearest)
                .init(),
        }
    }
}

impl<B: Backend> Yolo26<B> {
    /// Number of classes of the head.
    pub fn num_classes(&self) -> usize {
        self.layer23.nc
    }
}

impl<B: crate::YoloBackend> Yolo26<B> {
    /// Backbone + neck: returns the Detect inputs P3, P4, P5. With `trace`, records every yaml row's output.
    fn features(&self, x: Tensor<B, 4>, mut trace: Option<&mut Vec<Option<Tensor<B, 4>>>>) -> [Tensor<B, 4>; 3] {
        let mut rec = |i: usize, t: &Tensor<B, 4>| {
            if let Some(tr) = trace.as_deref_mut() {
                tr[i] = Some(t.clone());
            }
        };
        let x = self.layer0.forward(x);
        rec(0, &x);
        let x = self.layer1.forward(x);
        rec(1, &x);
        let x = self.layer2.forward(x);
        rec(2, &x);
        let x = self.layer3.forward(x);
        rec(3, &x);
        let p3 = self.layer4.forward(x);
        rec(4, &p3);
        let x = self.layer5.forward(p3.clone());
        rec(5, &x);
        let p4 = self.layer6.forward(x);
        rec(6, &p4);
        let x = self.layer7.forward(p4.clone());
        rec(7, &x);
        let x = self.layer8.forward(x);
        rec(8, &x);
        let x = self.layer9.forward(x);
        rec(9, &x);
        let p5 = self.layer10.forward(x);
        rec(10, &p5);
        // top-down
        let x = self.upsample.forward(p5.clone());
        rec(11, &x);
        let x = Tensor::cat(vec![x, p4], 1);
        rec(12, &x);
        let h13 = self.layer13.forward(x);
        rec(13, &h13);
        let x = self.upsample.forward(h13.clone());
        rec(14, &x);
        let x = Tensor::cat(vec![x, p3], 1);
        rec(15, &x);
        let out_p3 = self.layer16.forward(x);
        rec(16, &out_p3);
        // bottom-up
        let x = self.layer17.forward(out_p3.clone());
        rec(17, &x);
        let x = Tensor::cat(vec![x, h13], 1);
        rec(18, &x);
        let out_p4 = self.layer19.forward(x);
        rec(19, &out_p4);
        let x = self.layer20.forward(out_p4.clone());
        rec(20, &x);
        let x = Tensor::cat(vec![x, p5], 1);
        rec(21, &x);
        let out_p5 = self.layer22.forward(x);
        rec(22, &out_p5);
        [out_p3, out_p4, out_p5]
    }

    /// Backbone and neck only: the three Detect inputs (P3/8, P4/16, P5/32).
    pub fn forward_features(&self, x: Tensor<B, 4>) -> [Tensor<B, 4>; 3] {
        self.features(x, None)
    }

    /// Full forward: raw outputs of both heads (`x`: `[B, 3, H, W]`, RGB in [0, 1], H and W multiples of 32).
    pub fn forward(&self, x: Tensor<B, 4>) -> DetectOutput<B> {
        let feats = self.features(x, None);
        self.layer23.forward(&feats)
    }

    /// Forward that also returns each yaml row's output (rows 0–22), for parity checks.
    pub fn forward_trace(&self, x: Tensor<B, 4>) -> Yolo26Trace<B> {
        let mut layers = vec![None; 23];
        let feats = self.features(x, Some(&mut layers));
        Yolo26Trace { layers, head: self.layer23.forward(&feats) }
    }
}
