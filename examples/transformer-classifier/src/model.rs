//! A small pre-norm transformer encoder classifier whose self-attention is
//! [`FlashMultiHeadAttention`] from `kernels-cubecl`: token + learned position embeddings, `n_layers` ×
//! (LayerNorm → flash attention → residual, LayerNorm → GELU MLP → residual), final LayerNorm, mean pooling over
//! the sequence, linear head. Generic over any backend with the [`FlashAttentionBackend`] extension.

use burn::nn::{Embedding, EmbeddingConfig, Gelu, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::prelude::*;
use kernels_cubecl::attention::{FlashAttentionBackend, FlashMultiHeadAttention, FlashMultiHeadAttentionConfig};

/// Configuration of [`Classifier`].
#[derive(Config, Debug)]
pub struct ClassifierConfig {
    /// Token vocabulary size.
    pub vocab_size: usize,
    /// Longest sequence the position table covers.
    pub max_seq_len: usize,
    /// Number of classes.
    pub num_classes: usize,
    /// Model width.
    #[config(default = 32)]
    pub d_model: usize,
    /// Attention heads (must divide `d_model`).
    #[config(default = 2)]
    pub n_heads: usize,
    /// Encoder blocks.
    #[config(default = 2)]
    pub n_layers: usize,
    /// Hidden width of the MLPs.
    #[config(default = 64)]
    pub d_ff: usize,
}

impl ClassifierConfig {
    /// Builds the model on `device`.
    pub fn init<B: Backend>(&self, device: &B::Device) -> Classifier<B> {
        let block = || EncoderBlock {
            norm_attn: LayerNormConfig::new(self.d_model).init(device),
            attn: FlashMultiHeadAttentionConfig::new(self.d_model, self.n_heads).init(device),
            norm_ff: LayerNormConfig::new(self.d_model).init(device),
            ff_in: LinearConfig::new(self.d_model, self.d_ff).init(device),
            ff_out: LinearConfig::new(self.d_ff, self.d_model).init(device),
            act: Gelu::new(),
        };
        Classifier {
            tokens: EmbeddingConfig::new(self.vocab_size, self.d_model).init(device),
            positions: EmbeddingConfig::new(self.max_seq_len, self.d_model).init(device),
            blocks: (0..self.n_layers).map(|_| block()).collect(),
            norm: LayerNormConfig::new(self.d_model).init(device),
            head: LinearConfig::new(self.d_model, self.num_classes).init(device),
        }
    }
}

/// One pre-norm encoder block.
#[derive(Module, Debug)]
pub struct EncoderBlock<B: Backend> {
    norm_attn: LayerNorm<B>,
    attn: FlashMultiHeadAttention<B>,
    norm_ff: LayerNorm<B>,
    ff_in: Linear<B>,
    ff_out: Linear<B>,
    act: Gelu,
}

impl<B: FlashAttentionBackend> EncoderBlock<B> {
    /// `[B, N, d_model]` → `[B, N, d_model]`.
    pub fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        let x = x.clone() + self.attn.forward(self.norm_attn.forward(x));
        let h = self.act.forward(self.ff_in.forward(self.norm_ff.forward(x.clone())));
        x + self.ff_out.forward(h)
    }
}

/// The transformer encoder classifier.
#[derive(Module, Debug)]
pub struct Classifier<B: Backend> {
    tokens: Embedding<B>,
    positions: Embedding<B>,
    blocks: Vec<EncoderBlock<B>>,
    norm: LayerNorm<B>,
    head: Linear<B>,
}

impl<B: FlashAttentionBackend> Classifier<B> {
    /// Token ids `[B, N]` (`N ≤ max_seq_len`) → class logits `[B, num_classes]`.
    pub fn forward(&self, tokens: Tensor<B, 2, Int>) -> Tensor<B, 2> {
        let [batch, n] = tokens.dims();
        let positions = Tensor::<B, 1, Int>::arange(0..n as i64, &tokens.device()).reshape([1, n]);
        let mut x = self.tokens.forward(tokens) + self.positions.forward(positions); // [B, N, d]
        for block in &self.blocks {
            x = block.forward(x);
        }
        let [_, _, d] = x.dims();
        let pooled = self.norm.forward(x).mean_dim(1).reshape([batch, d]);
        self.head.forward(pooled)
    }
}
