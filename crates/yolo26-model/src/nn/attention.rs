//! Position-sensitive attention: `Attention`, `PSABlock`, `C2PSA`.
//!
//! ultralytics: `nn/modules/block.py::{Attention, PSABlock, C2PSA}`.
//!
//! `Attention(dim, num_heads, attn_ratio=0.5)`: `head_dim = dim / nh`, `key_dim = head_dim · attn_ratio`,
//! `scale = key_dim^-1/2`. The `qkv` conv output `[B, nh·(2·kd + hd), H, W]` is viewed as `[B, nh, 2·kd + hd, N]`
//! (per head interleaved `[q_h | k_h | v_h]`), `attn = softmax((q·scale)ᵀ k)` over keys, `x = v · attnᵀ`
//! reshaped to `[B, dim, H, W]`, plus the depthwise positional conv `pe(v)`, then `proj`. The blocks take and give
//! NHWC tensors (`[B, H, W, C]`); the attention op works on NCHW views of the `qkv` output (P5/32: small).
//!
//! The attention itself (split, scaled softmax attention, reshapes back to NCHW) is one op,
//! [`kernels_cubecl::psa::psa_attention`]: Flash Attention 2 kernels on CubeCL backends (no `N × N` matrix),
//! a tensor-op reference elsewhere.

use burn::prelude::*;
use kernels_cubecl::psa::psa_attention;

use super::conv::{Conv, ConvConfig};
use crate::YoloBackend;

/// ultralytics `nn.modules.block.Attention(dim, num_heads, attn_ratio=0.5)` (see the module docs). Built by
/// [`AttentionConfig::init`].
#[derive(Module, Debug)]
pub struct Attention<B: Backend> {
    /// 1×1 `Conv(dim, dim + 2·nh·kd, act=False)`: per head `[q | k | v]`.
    pub qkv: Conv<B>,
    /// 1×1 `Conv(dim, dim, act=False)`, the output projection.
    pub proj: Conv<B>,
    /// Depthwise 3×3 `Conv(dim, dim, g=dim, act=False)`: the positional encoding of `v`.
    pub pe: Conv<B>,
    /// Number of heads `nh`.
    pub num_heads: usize,
    /// Query/key width per head `kd = int(hd · attn_ratio)`.
    pub key_dim: usize,
    /// Value width per head `hd = dim / nh`.
    pub head_dim: usize,
    /// Softmax scale `kd^-1/2`.
    pub scale: f64,
}

/// Arguments of an [`Attention`].
#[derive(Config, Debug)]
pub struct AttentionConfig {
    /// Channels `dim` (in and out).
    pub dim: usize,
    /// Number of heads.
    pub num_heads: usize,
    /// Key width relative to the head width.
    #[config(default = 0.5)]
    pub attn_ratio: f64,
}

impl AttentionConfig {
    /// Builds the [`Attention`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> Attention<B> {
        let (dim, num_heads) = (self.dim, self.num_heads);
        let head_dim = dim / num_heads;
        let key_dim = (head_dim as f64 * self.attn_ratio) as usize;
        let h = dim + 2 * key_dim * num_heads;
        Attention {
            qkv: ConvConfig::new(dim, h).with_act(false).init(device),
            proj: ConvConfig::new(dim, dim).with_act(false).init(device),
            pe: ConvConfig::new(dim, dim).with_k(3).with_g(dim).with_act(false).init(device),
            num_heads,
            key_dim,
            head_dim,
            scale: (key_dim as f64).powf(-0.5),
        }
    }
}

impl<B: YoloBackend> Attention<B> {
    /// `[B, H, W, dim] → [B, H, W, dim]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let qkv = self.qkv.forward(x).permute([0, 3, 1, 2]);
        // `attn` = (v @ softmax((q·scale)ᵀ k)ᵀ).view(B, C, H, W), `v` = v.reshape(B, C, H, W).
        let (attn, v) = psa_attention(qkv, self.num_heads, self.key_dim, self.scale as f32);
        let (attn, v) = (attn.permute([0, 2, 3, 1]), v.permute([0, 2, 3, 1]));
        let pe = self.pe.forward(v);
        self.proj.forward(attn + pe)
    }
}

/// ultralytics `nn.modules.block.PSABlock(c, attn_ratio=0.5, num_heads, shortcut=True)`: `x + attn(x)`, then
/// `x + ffn(x)` with `ffn = Sequential(Conv(c, 2c, 1), Conv(2c, c, 1, act=False))`. Built by
/// [`PsaBlockConfig::init`].
#[derive(Module, Debug)]
pub struct PsaBlock<B: Backend> {
    /// The attention.
    pub attn: Attention<B>,
    /// The feed-forward.
    pub ffn: Ffn<B>,
}

/// The PSABlock feed-forward `Sequential` (`ffn.0`, `ffn.1`).
#[derive(Module, Debug)]
pub struct Ffn<B: Backend> {
    /// 1×1 `Conv(c, 2c)`.
    pub i0: Conv<B>,
    /// 1×1 `Conv(2c, c, act=False)`.
    pub i1: Conv<B>,
}

/// Arguments of a [`PsaBlock`].
#[derive(Config, Debug)]
pub struct PsaBlockConfig {
    /// Channels (in and out).
    pub c: usize,
    /// Attention heads.
    pub num_heads: usize,
    /// Key width relative to the head width.
    #[config(default = 0.5)]
    pub attn_ratio: f64,
}

impl PsaBlockConfig {
    /// Builds the [`PsaBlock`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> PsaBlock<B> {
        let c = self.c;
        PsaBlock {
            attn: AttentionConfig::new(c, self.num_heads).with_attn_ratio(self.attn_ratio).init(device),
            ffn: Ffn {
                i0: ConvConfig::new(c, 2 * c).init(device),
                i1: ConvConfig::new(2 * c, c).with_act(false).init(device),
            },
        }
    }
}

impl<B: YoloBackend> PsaBlock<B> {
    /// `[B, H, W, c] → [B, H, W, c]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let x = x.clone() + self.attn.forward(x);
        x.clone() + self.ffn.i1.forward(self.ffn.i0.forward(x))
    }
}

/// ultralytics `nn.modules.block.C2PSA(c1, c2=c1, n, e=0.5)`: `a, b = split(cv1(x))`, `b = m(b)`,
/// `cv2(cat(a, b))`. Built by [`C2PsaConfig::init`].
#[derive(Module, Debug)]
pub struct C2Psa<B: Backend> {
    /// 1×1 `Conv(c1, 2c)`.
    pub cv1: Conv<B>,
    /// 1×1 `Conv(2c, c1)`.
    pub cv2: Conv<B>,
    /// `n` chained `PSABlock(c, attn_ratio=0.5, num_heads=c // 64)`.
    pub m: Vec<PsaBlock<B>>,
    /// Hidden width `c = int(c1 · e)`.
    pub c: usize,
}

/// Arguments of a [`C2Psa`] (output channels = `c1`: ultralytics asserts `c1 == c2`).
#[derive(Config, Debug)]
pub struct C2PsaConfig {
    /// Channels (in and out).
    pub c1: usize,
    /// Number of PSA blocks.
    #[config(default = 1)]
    pub n: usize,
    /// Hidden ratio: `c = int(c1 · e)`.
    #[config(default = 0.5)]
    pub e: f64,
}

impl C2PsaConfig {
    /// Builds the [`C2Psa`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> C2Psa<B> {
        let c1 = self.c1;
        let c = (c1 as f64 * self.e) as usize;
        C2Psa {
            cv1: ConvConfig::new(c1, 2 * c).init(device),
            cv2: ConvConfig::new(2 * c, c1).init(device),
            m: (0..self.n).map(|_| PsaBlockConfig::new(c, (c / 64).max(1)).init(device)).collect(),
            c,
        }
    }
}

impl<B: YoloBackend> C2Psa<B> {
    /// `[B, H, W, c1] → [B, H, W, c1]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let y = self.cv1.forward(x);
        let a = y.clone().narrow(3, 0, self.c);
        let mut b = y.narrow(3, self.c, self.c);
        for blk in &self.m {
            b = blk.forward(b);
        }
        self.cv2.forward(kernels_cubecl::nhwc::cat_channels(vec![a, b]))
    }
}
