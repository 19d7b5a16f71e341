//! Bottleneck, C3k, C3k2 (with its C3k and attention variants) and the YOLO26 SPPF.
//!
//! ultralytics: `nn/modules/block.py::{Bottleneck, C2f, C3, C3k, C3k2, SPPF}`. All tensors NHWC (`[B, H, W, C]`):
//! splits and concatenations are along axis 3.

use burn::prelude::*;
use kernels_cubecl::nhwc::{cat_channels, max_pool2d, PoolSpec};

use super::attention::{PsaBlock, PsaBlockConfig};
use super::conv::{Conv, ConvConfig};

/// ultralytics `nn.modules.block.Bottleneck(c1, c2, shortcut=True, g=1, k=(3, 3), e)`: `x + cv2(cv1(x))` when
/// `c1 == c2`, else `cv2(cv1(x))`. Built by [`BottleneckConfig::init`].
#[derive(Module, Debug)]
pub struct Bottleneck<B: Backend> {
    /// 3×3 `Conv(c1, c_)`, `c_ = int(c2 · e)`.
    pub cv1: Conv<B>,
    /// 3×3 `Conv(c_, c2)`.
    pub cv2: Conv<B>,
    /// Residual connection (`shortcut and c1 == c2`).
    pub add: bool,
}

/// Arguments of a [`Bottleneck`] (`shortcut=True`, `g=1`, `k=(3, 3)` as every YOLO26 bottleneck has them).
#[derive(Config, Debug)]
pub struct BottleneckConfig {
    /// Input channels.
    pub c1: usize,
    /// Output channels.
    pub c2: usize,
    /// Hidden ratio: 0.5 inside C3k2, 1.0 inside C3k.
    #[config(default = 0.5)]
    pub e: f64,
}

impl BottleneckConfig {
    /// Builds the [`Bottleneck`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> Bottleneck<B> {
        let c_ = (self.c2 as f64 * self.e) as usize;
        Bottleneck {
            cv1: ConvConfig::new(self.c1, c_).with_k(3).init(device),
            cv2: ConvConfig::new(c_, self.c2).with_k(3).init(device),
            add: self.c1 == self.c2,
        }
    }
}

impl<B: crate::YoloBackend> Bottleneck<B> {
    /// `[B, H, W, c1] → [B, H, W, c2]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let y = self.cv2.forward(self.cv1.forward(x.clone()));
        if self.add {
            x + y
        } else {
            y
        }
    }
}

/// ultralytics `nn.modules.block.C3k(c1, c2, n, k=3)` (a C3 with 3×3 bottlenecks): `cv3(cat(m(cv1(x)), cv2(x)))`.
/// Built by [`C3kConfig::init`].
#[derive(Module, Debug)]
pub struct C3k<B: Backend> {
    /// 1×1 `Conv(c1, c_)`, `c_ = c2 / 2`: the bottleneck path.
    pub cv1: Conv<B>,
    /// 1×1 `Conv(c1, c_)`: the bypass path.
    pub cv2: Conv<B>,
    /// 1×1 `Conv(2·c_, c2)` over both paths.
    pub cv3: Conv<B>,
    /// `n` bottlenecks `Bottleneck(c_, c_, e=1.0)`.
    pub m: Vec<Bottleneck<B>>,
}

/// Arguments of a [`C3k`] (`shortcut=True`, `g=1`, `e=0.5`, `k=3`).
#[derive(Config, Debug)]
pub struct C3kConfig {
    /// Input channels.
    pub c1: usize,
    /// Output channels.
    pub c2: usize,
    /// Number of bottlenecks (C3k2 passes 2).
    #[config(default = 1)]
    pub n: usize,
}

impl C3kConfig {
    /// Builds the [`C3k`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> C3k<B> {
        let c_ = (self.c2 as f64 * 0.5) as usize;
        C3k {
            cv1: ConvConfig::new(self.c1, c_).init(device),
            cv2: ConvConfig::new(self.c1, c_).init(device),
            cv3: ConvConfig::new(2 * c_, self.c2).init(device),
            m: (0..self.n).map(|_| BottleneckConfig::new(c_, c_).with_e(1.0).init(device)).collect(),
        }
    }
}

impl<B: crate::YoloBackend> C3k<B> {
    /// `[B, H, W, c1] → [B, H, W, c2]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let mut a = self.cv1.forward(x.clone());
        for b in &self.m {
            a = b.forward(a);
        }
        self.cv3.forward(cat_channels(vec![a, self.cv2.forward(x)]))
    }
}

/// `Sequential(Bottleneck, PSABlock)`: the attention block of C3k2 with `attn=True` (layer 22).
/// Fields `i0`/`i1` are the Sequential's `0`/`1` in the state_dict.
#[derive(Module, Debug)]
pub struct BottleneckPsa<B: Backend> {
    /// `Bottleneck(c, c, e=0.5)`.
    pub i0: Bottleneck<B>,
    /// `PSABlock(c, attn_ratio=0.5, num_heads=c // 64)`.
    pub i1: PsaBlock<B>,
}

/// One inner block of a C3k2 (its `m[i]`).
#[derive(Module, Debug)]
#[allow(clippy::large_enum_variant)] // one per C3k2 repeat, built once: boxing would only add an indirection
pub enum C3k2Block<B: Backend> {
    /// `c3k=False`: `Bottleneck(c, c, e=0.5)`.
    Bottleneck(Bottleneck<B>),
    /// `c3k=True`: `C3k(c, c, 2)`.
    C3k(C3k<B>),
    /// `attn=True`: `Sequential(Bottleneck(c, c), PSABlock(c))`.
    Attn(BottleneckPsa<B>),
}

impl<B: crate::YoloBackend> C3k2Block<B> {
    /// `[B, H, W, c] → [B, H, W, c]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        match self {
            C3k2Block::Bottleneck(b) => b.forward(x),
            C3k2Block::C3k(b) => b.forward(x),
            C3k2Block::Attn(b) => b.i1.forward(b.i0.forward(x)),
        }
    }
}

/// Arguments of a C3k2 as `parse_model` resolves them (`C3k2(c1, c2, n, c3k, e, attn)`, `g=1`, `shortcut=True`).
#[derive(Config, Debug)]
pub struct C3k2Config {
    /// Input channels.
    pub c1: usize,
    /// Output channels.
    pub c2: usize,
    /// Number of inner blocks.
    #[config(default = 1)]
    pub n: usize,
    /// Inner blocks are [`C3k`]s instead of [`Bottleneck`]s.
    #[config(default = false)]
    pub c3k: bool,
    /// Hidden ratio: `c = int(c2 · e)`.
    #[config(default = 0.5)]
    pub e: f64,
    /// Inner blocks are `Bottleneck + PSABlock` ([`BottleneckPsa`]); takes precedence over `c3k`.
    #[config(default = false)]
    pub attn: bool,
}

/// ultralytics `nn.modules.block.C3k2` (a C2f whose blocks are Bottleneck, C3k or Bottleneck+PSABlock):
/// `a, b = chunk(cv1(x), 2)`, `y = [a, b, m0(b), m1(m0(b)), ...]`, `cv2(cat(y))`. Built by [`C3k2Config::init`].
#[derive(Module, Debug)]
pub struct C3k2<B: Backend> {
    /// 1×1 `Conv(c1, 2·c)`.
    pub cv1: Conv<B>,
    /// 1×1 `Conv((2 + n)·c, c2)` over every intermediate output.
    pub cv2: Conv<B>,
    /// The `n` inner blocks, chained.
    pub m: Vec<C3k2Block<B>>,
    /// Hidden width `c`.
    pub c: usize,
}

impl C3k2Config {
    /// Hidden width `c = int(c2 * e)`.
    pub fn hidden(&self) -> usize {
        (self.c2 as f64 * self.e) as usize
    }

    /// Builds the [`C3k2`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> C3k2<B> {
        let c = self.hidden();
        let m = (0..self.n)
            .map(|_| {
                if self.attn {
                    C3k2Block::Attn(BottleneckPsa {
                        i0: BottleneckConfig::new(c, c).init(device),
                        i1: PsaBlockConfig::new(c, (c / 64).max(1)).init(device),
                    })
                } else if self.c3k {
                    C3k2Block::C3k(C3kConfig::new(c, c).with_n(2).init(device))
                } else {
                    C3k2Block::Bottleneck(BottleneckConfig::new(c, c).init(device))
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
    /// `[B, H, W, c1] → [B, H, W, c2]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let mut ys = self.cv1.forward_chunks(x, 2);
        for block in &self.m {
            let last = ys.last().expect("chunk gives two tensors").clone();
            ys.push(block.forward(last));
        }
        self.cv2.forward(cat_channels(ys))
    }
}

/// YOLO26's ultralytics `nn.modules.block.SPPF(c1, c2, k=5, n=3, shortcut=True)`: `cv1` without activation,
/// `n` chained `k×k` max-pools (stride 1), `cv2` over the concatenation, residual `+ x` when `shortcut` and
/// `c1 == c2`. Built by [`SppfConfig::init`].
#[derive(Module, Debug)]
pub struct Sppf<B: Backend> {
    /// 1×1 `Conv(c1, c1 / 2, act=False)`.
    pub cv1: Conv<B>,
    /// 1×1 `Conv((n + 1)·c1/2, c2)`.
    pub cv2: Conv<B>,
    /// Kernel of the pools `MaxPool2d(k, stride=1, padding=k // 2)` (ultralytics `SPPF.m`, no parameters).
    pub k: usize,
    /// Number of chained pools.
    pub n: usize,
    /// Residual connection (`shortcut and c1 == c2`).
    pub add: bool,
}

/// Arguments of an [`Sppf`] (ultralytics' defaults; `yolo26.yaml` row 9 passes `k=5, n=3, shortcut=True`).
#[derive(Config, Debug)]
pub struct SppfConfig {
    /// Input channels.
    pub c1: usize,
    /// Output channels.
    pub c2: usize,
    /// Max-pool kernel size.
    #[config(default = 5)]
    pub k: usize,
    /// Number of chained max-pools.
    #[config(default = 1)]
    pub n: usize,
    /// Residual `+ x` (when `c1 == c2`).
    #[config(default = false)]
    pub shortcut: bool,
}

impl SppfConfig {
    /// Builds the [`Sppf`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> Sppf<B> {
        let (c1, k, n) = (self.c1, self.k, self.n);
        let c_ = c1 / 2;
        Sppf {
            cv1: ConvConfig::new(c1, c_).with_act(false).init(device),
            cv2: ConvConfig::new(c_ * (n + 1), self.c2).init(device),
            k,
            n,
            add: self.shortcut && c1 == self.c2,
        }
    }
}

impl<B: crate::YoloBackend> Sppf<B> {
    /// `[B, H, W, c1] → [B, H, W, c2]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let (k, p) = (self.k, self.k / 2);
        let spec = PoolSpec { kernel: [k, k], stride: [1, 1], padding: [p, p] };
        let mut ys = vec![self.cv1.forward(x.clone())];
        for _ in 0..self.n {
            let last = ys.last().expect("non-empty").clone();
            ys.push(max_pool2d(last, spec));
        }
        let y = self.cv2.forward(cat_channels(ys));
        if self.add {
            y + x
        } else {
            y
        }
    }
}
