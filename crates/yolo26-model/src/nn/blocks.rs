//! Bottleneck, C3k, C3k2 (with its C3k and attention variants) and the YOLO26 SPPF.
//!
//! ultralytics: `nn/modules/block.py::{Bottleneck, C2f, C3, C3k, C3k2, SPPF}`. All tensors NCHW.

use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::PaddingConfig2d;
use burn::prelude::*;

use super::attention::{PsaBlock, PsaBlockConfig};
use super::conv::{Conv, ConvConfig};

/// `Bottleneck(c1, c2, shortcut=True, g=1, k=(k1, k2), e)`: `x + cv2(cv1(x))` when `c1 == c2`.
#[derive(Module, Debug)]
pub struct Bottleneck<B: Backend> {
    pub cv1: Conv<B>,
    pub cv2: Conv<B>,
    pub add: bool,
}

impl<B: Backend> Bottleneck<B> {
    /// `e` is the hidden ratio: 0.5 inside C3k2, 1.0 inside C3k.
    pub fn new(c1: usize, c2: usize, e: f64, device: &B::Device) -> Self {
        let c_ = (c2 as f64 * e) as usize;
        Bottleneck {
            cv1: ConvConfig::new(c1, c_).with_k(3).init(device),
            cv2: ConvConfig::new(c_, c2).with_k(3).init(device),
            add: c1 == c2,
        }
    }

    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let y = self.cv2.forward(self.cv1.forward(x.clone()));
        if self.add {
            x + y
        } else {
            y
        }
    }
}

/// `C3k(c1, c2, n=2)` (a C3 with 3×3 bottlenecks): `cv3(cat(m(cv1(x)), cv2(x)))`.
#[derive(Module, Debug)]
pub struct C3k<B: Backend> {
    pub cv1: Conv<B>,
    pub cv2: Conv<B>,
    pub cv3: Conv<B>,
    pub m: Vec<Bottleneck<B>>,
}

impl<B: Backend> C3k<B> {
    pub fn new(c1: usize, c2: usize, n: usize, device: &B::Device) -> Self {
        let c_ = (c2 as f64 * 0.5) as usize;
        C3k {
            cv1: ConvConfig::new(c1, c_).init(device),
            cv2: ConvConfig::new(c1, c_).init(device),
            cv3: ConvConfig::new(2 * c_, c2).init(device),
            m: (0..n).map(|_| Bottleneck::new(c_, c_, 1.0, device)).collect(),
        }
    }

    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let mut a = self.cv1.forward(x.clone());
        for b in &self.m {
            a = b.forward(a);
        }
        self.cv3.forward(Tensor::cat(vec![a, self.cv2.forward(x)], 1))
    }
}

/// `Sequential(Bottleneck, PSABlock)`: the attention block of C3k2 with `attn=True` (layer 22).
/// Fields `i0`/`i1` are the Sequential's `0`/`1` in the state_dict.
#[derive(Module, Debug)]
pub struct BottleneckPsa<B: Backend> {
    pub i0: Bottleneck<B>,
    pub i1: PsaBlock<B>,
}

/// One inner block of a C3k2.
#[derive(Module, Debug)]
#[allow(clippy::large_enum_variant)] // one per C3k2 repeat, built once: boxing would only add an indirection
pub enum C3k2Block<B: Backend> {
    Bottleneck(Bottleneck<B>),
    C3k(C3k<B>),
    Attn(BottleneckPsa<B>),
}

impl<B: crate::YoloBackend> C3k2Block<B> {
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        match self {
            C3k2Block::Bottleneck(b) => b.forward(x),
            C3k2Block::C3k(b) => b.forward(x),
            C3k2Block::Attn(b) => b.i1.forward(b.i0.forward(x)),
        }
    }
}

/// Arguments of a C3k2 as `parse_model` resolves them.
#[derive(Config, Debug)]
pub struct C3k2Config {
    pub c1: usize,
    pub c2: usize,
    #[config(default = 1)]
    pub n: usize,
    #[config(default = false)]
    pub c3k: bool,
    #[config(default = 0.5)]
    pub e: f64,
    #[config(default = false)]
    pub attn: bool,
}

/// `C3k2` (a C2f whose blocks are Bottleneck, C3k or Bottleneck+PSABlock):
/// `a, b = chunk(cv1(x), 2)`, `y = [a, b, m0(b), m1(m0(b)), ...]`, `cv2(cat(y))`.
#[derive(Module, Debug)]
pub struct C3k2<B: Backend> {
    pub cv1: Conv<B>,
    pub cv2: Conv<B>,
    pub m: Vec<C3k2Block<B>>,
    pub c: usize,
}

impl C3k2Config {
    /// Hidden width `c = int(c2 * e)`.
    pub fn hidden(&self) -> usize {
        (self.c2 as f64 * self.e) as usize
    }

    pub fn init<B: Backend>(&self, device: &B::Device) -> C3k2<B> {
        let c = self.hidden();
        let m = (0..self.n)
            .map(|_| {
                if self.attn {
                    C3k2Block::Attn(BottleneckPsa {
                        i0: Bottleneck::new(c, c, 0.5, device),
                        i1: PsaBlockConfig::new(c, (c / 64).max(1)).init(device),
                    })
                } else if self.c3k {
                    C3k2Block::C3k(C3k::new(c, c, 2, device))
                } else {
                    C3k2Block::Bottleneck(Bottleneck::new(c, c, 0.5, device))
                }
            })
            .collect();
        C3k2 {
            cv1: ConvConfig::new(self.c1, 2 * c).init(device),
            cv2: ConvConfig::new((2 + self.n) * c, self.c2).init(device),
            m,
            c,
        }
    }
}

impl<B: crate::YoloBackend> C3k2<B> {
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let y = self.cv1.forward(x);
        let mut ys = y.chunk(2, 1);
        for block in &self.m {
            let last = ys.last().expect("chunk gives two tensors").clone();
            ys.push(block.forward(last));
        }
        self.cv2.forward(Tensor::cat(ys, 1))
    }
}

/// YOLO26 `SPPF(c1, c2, k=5, n=3, shortcut=True)`: `cv1` without activation, three chained 5×5 max-pools,
/// `cv2` over the concatenation, residual `+ x` when `c1 == c2`.
#[derive(Module, Debug)]
pub struct Sppf<B: Backend> {
    pub cv1: Conv<B>,
    pub cv2: Conv<B>,
    pub m: MaxPool2d,
    pub n: usize,
    pub add: bool,
}

impl<B: Backend> Sppf<B> {
    pub fn new(c1: usize, c2: usize, k: usize, n: usize, device: &B::Device) -> Self {
        let c_ = c1 / 2;
        Sppf {
            cv1: ConvConfig::new(c1, c_).with_act(false).init(device),
            cv2: ConvConfig::new(c_ * (n + 1), c2).init(device),
            m: MaxPool2dConfig::new([k, k])
                .with_strides([1, 1])
                .with_padding(PaddingConfig2d::Explicit(k / 2, k / 2, k / 2, k / 2))
                .init(),
            n,
            add: c1 == c2,
        }
    }

    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let mut ys = vec![self.cv1.forward(x.clone())];
        for _ in 0..self.n {
            let last = ys.last().expect("non-empty").clone();
            ys.push(self.m.forward(last));
        }
        let y = self.cv2.forward(Tensor::cat(ys, 1));
        if self.add {
            y + x
        } else {
            y
        }
    }
}
