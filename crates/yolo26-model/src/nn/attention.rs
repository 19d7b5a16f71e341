//! Position-sensitive attention: `Attention`, `PSABlock`, `C2PSA`.
//!
//! ultralytics: `nn/modules/block.py::{Attention, PSABlock, C2PSA}`.
//!
//! `Attention(dim, num_heads, attn_ratio=0.5)`: `head_dim = dim / nh`, `key_dim = head_dim · attn_ratio`,
//! `scale = key_dim^-1/2`. The `qkv` conv output `[B, nh·(2·kd + hd), H, W]` is viewed as `[B, nh, 2·kd + hd, N]`
//! (per head interleaved `[q_h | k_h | v_h]`), `attn = softmax((q·scale)ᵀ k)` over keys, `x = v · attnᵀ`
//! reshaped to `[B, dim, H, W]`, plus the depthwise positional conv `pe(v)`, then `proj`.
//!
//! The attention itself (split, scaled softmax attention, reshapes back to NCHW) is one op,
//! [`kernels_cubecl::psa::psa_attention`]: Flash Attention 2 kernels on CubeCL backends (no `N × N` matrix),
//! a tensor-op reference elsewhere.

use burn::prelude::*;
use kernels_cubecl::psa::psa_attention;

use super::conv::{Conv, ConvConfig};
use crate::YoloBackend;

#[derive(Module, Debug)]
pub struct Attention<B: Backend> {
    pub qkv: Conv<B>,
    pub proj: Conv<B>,
    pub pe: Conv<B>,
    pub num_heads: usize,
    pub key_dim: usize,
    pub head_dim: usize,
    pub scale: f64,
}

impl<B: Backend> Attention<B> {
    pub fn new(dim: usize, num_heads: usize, attn_ratio: f64, device: &B::Device) -> Self {
        let head_dim = dim / num_heads;
        let key_dim = (head_dim as f64 * attn_ratio) as usize;
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
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let qkv = self.qkv.forward(x);
        // `attn` = (v @ softmax((q·scale)ᵀ k)ᵀ).view(B, C, H, W), `v` = v.reshape(B, C, H, W).
        let (attn, v) = psa_attention(qkv, self.num_heads, self.key_dim, self.scale as f32);
        let pe = self.pe.forward(v);
        self.proj.forward(attn + pe)
    }
}

/// `PSABlock(c, attn_ratio=0.5, num_heads)`: `x + attn(x)`, then `x + ffn(x)` with
/// `ffn = Sequential(Conv(c, 2c, 1), Conv(2c, c, 1, act=False))`.
#[derive(Module, Debug)]
pub struct PsaBlock<B: Backend> {
    pub attn: Attention<B>,
    pub ffn: Ffn<B>,
}

/// The PSABlock feed-forward `Sequential` (`ffn.0`, `ffn.1`).
#[derive(Module, Debug)]
pub struct Ffn<B: Backend> {
    pub i0: Conv<B>,
    pub i1: Conv<B>,
}

#[derive(Config, Debug)]
pub struct PsaBlockConfig {
    pub c: usize,
    pub num_heads: usize,
    #[config(default = 0.5)]
    pub attn_ratio: f64,
}

impl PsaBlockConfig {
    pub fn init<B: Backend>(&self, device: &B::Device) -> PsaBlock<B> {
        let c = self.c;
        PsaBlock {
            attn: Attention::new(c, self.num_heads, self.attn_ratio, device),
            ffn: Ffn {
                i0: ConvConfig::new(c, 2 * c).init(device),
                i1: ConvConfig::new(2 * c, c).with_act(false).init(device),
            },
        }
    }
}

impl<B: YoloBackend> PsaBlock<B> {
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let x = x.clone() + self.attn.forward(x);
        x.clone() + self.ffn.i1.forward(self.ffn.i0.forward(x))
    }
}

/// `C2PSA(c1, c2=c1, n, e=0.5)`: `a, b = split(cv1(x))`, `b = m(b)`, `cv2(cat(a, b))`.
#[derive(Module, Debug)]
pub struct C2Psa<B: Backend> {
    pub cv1: Conv<B>,
    pub cv2: Conv<B>,
    pub m: Vec<PsaBlock<B>>,
    pub c: usize,
}

impl<B: Backend> C2Psa<B> {
    pub fn new(c1: usize, n: usize, device: &B::Device) -> Self {
        let c = c1 / 2;
        C2Psa {
            cv1: ConvConfig::new(c1, 2 * c).init(device),
            cv2: ConvConfig::new(2 * c, c1).init(device),
            m: (0..n).map(|_| PsaBlockConfig::new(c, (c / 64).max(1)).init(device)).collect(),
            c,
        }
    }
}

impl<B: YoloBackend> C2Psa<B> {
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let y = self.cv1.forward(x);
        let a = y.clone().narrow(1, 0, self.c);
        let mut b = y.narrow(1, self.c, self.c);
        for blk in &self.m {
            b = blk.forward(b);
        }
        self.cv2.forward(Tensor::cat(vec![a, b], 1))
    }
}
