//! Multi-head self-attention on top of [`flash_attention`]: a drop-in for the self-attention use of
//! `burn::nn::attention::MultiHeadAttention` (same `query`/`key`/`value`/`output` `Linear` fields, so
//! records and weights carry over; see [`FlashMultiHeadAttention::from_mha`]). No mask, no dropout.
use burn::config::Config;
use burn::module::Module;
use burn::nn::{attention::MultiHeadAttention, Linear, LinearConfig};
use burn::tensor::{backend::Backend, Tensor};

use super::{flash_attention, FlashAttentionBackend};

/// Configuration of [`FlashMultiHeadAttention`].
#[derive(Config, Debug)]
pub struct FlashMultiHeadAttentionConfig {
    /// Model width (input and output features).
    pub d_model: usize,
    /// Number of heads; must divide `d_model`.
    pub n_heads: usize,
    /// Whether the four projections have a bias.
    #[config(default = true)]
    pub bias: bool,
}

impl FlashMultiHeadAttentionConfig {
    /// Builds the module (Burn's default `Linear` initialisation).
    pub fn init<B: Backend>(&self, device: &B::Device) -> FlashMultiHeadAttention<B> {
        assert!(
            self.n_heads > 0 && self.d_model.is_multiple_of(self.n_heads),
            "FlashMultiHeadAttention: n_heads ({}) must divide d_model ({})",
            self.n_heads,
            self.d_model
        );
        let linear = || LinearConfig::new(self.d_model, self.d_model).with_bias(self.bias).init(device);
        FlashMultiHeadAttention {
            query: linear(),
            key: linear(),
            value: linear(),
            output: linear(),
            d_model: self.d_model,
            n_heads: self.n_heads,
        }
    }
}

/// Multi-head self-attention whose core is [`flash_attention`] with scale `1/sqrt(d_model / n_heads)`.
#[derive(Module, Debug)]
pub struct FlashMultiHeadAttention<B: Backend> {
    /// Query projection `[d_model, d_model]`.
    pub query: Linear<B>,
    /// Key projection.
    pub key: Linear<B>,
    /// Value projection.
    pub value: Linear<B>,
    /// Output projection.
    pub output: Linear<B>,
    /// Model width.
    pub d_model: usize,
    /// Number of heads.
    pub n_heads: usize,
}

impl<B: Backend> FlashMultiHeadAttention<B> {
    /// Takes the projections of a Burn `MultiHeadAttention` (its dropout and mask options are not used).
    pub fn from_mha(mha: MultiHeadAttention<B>) -> Self {
        Self {
            query: mha.query,
            key: mha.key,
            value: mha.value,
            output: mha.output,
            d_model: mha.d_model,
            n_heads: mha.n_heads,
        }
    }

    /// Head dim `d_model / n_heads`.
    pub fn head_dim(&self) -> usize {
        self.d_model / self.n_heads
    }
}

impl<B: FlashAttentionBackend> FlashMultiHeadAttention<B> {
    /// Self-attention: `x: [B, N, d_model]` → `[B, N, d_model]`.
    pub fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        self.forward_qkv(x.clone(), x.clone(), x)
    }

    /// Attention with separate inputs: `query: [B, Nq, d_model]`, `key`/`value: [B, Nk, d_model]` →
    /// `[B, Nq, d_model]`.
    pub fn forward_qkv(&self, query: Tensor<B, 3>, key: Tensor<B, 3>, value: Tensor<B, 3>) -> Tensor<B, 3> {
        let [b, nq, _] = query.dims();
        let heads = |x: Tensor<B, 3>, lin: &Linear<B>| {
            let [b, n, _] = x.dims();
            lin.forward(x).reshape([b, n, self.n_heads, self.head_dim()]).swap_dims(1, 2)
        };
        let q = heads(query, &self.query);
        let k = heads(key, &self.key);
        let v = heads(value, &self.value);
        let scale = 1.0 / (self.head_dim() as f32).sqrt();
        let o = flash_attention(q, k, v, scale); // [B, H, Nq, Dh]
        let o = o.swap_dims(1, 2).reshape([b, nq, self.d_model]);
        self.output.forward(o)
    }
}
