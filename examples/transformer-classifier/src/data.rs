//! The synthetic task, generated in code: **which marker comes first?**
//!
//! A sequence of `seq_len` tokens holds filler tokens drawn uniformly from `FIRST_FILLER..vocab_size` and exactly
//! one `MARKER_A` and one `MARKER_B` at two random, distinct positions. The label is 1 when `A` comes before `B`,
//! else 0 (balanced by construction, chance = 50 %). Both classes contain the same multiset of tokens, so any
//! order-blind model (bag of tokens, mean of embeddings) stays at chance: the model has to relate the two marker
//! positions to each other, which is what self-attention over position-embedded tokens does.

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::InMemDataset;
use burn::prelude::*;

/// Token id of the first marker.
pub const MARKER_A: usize = 0;
/// Token id of the second marker.
pub const MARKER_B: usize = 1;
/// Filler tokens are `FIRST_FILLER..vocab_size`.
pub const FIRST_FILLER: usize = 2;
/// Number of classes (`A` after `B`, `A` before `B`).
pub const NUM_CLASSES: usize = 2;

/// One sequence and its label.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Token ids, `seq_len` of them.
    pub tokens: Vec<usize>,
    /// 1 when `MARKER_A` comes before `MARKER_B`.
    pub label: usize,
}

/// SplitMix64: a tiny deterministic generator, so the data set depends only on the seed.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (the modulo bias is irrelevant for the small `n` used here).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Generates `n` samples of length `seq_len` (≥ 2) over `vocab_size` (> `FIRST_FILLER`) tokens.
pub fn generate(n: usize, seq_len: usize, vocab_size: usize, seed: u64) -> Vec<Sample> {
    assert!(seq_len >= 2, "seq_len must be at least 2 (two markers), got {seq_len}");
    assert!(vocab_size > FIRST_FILLER, "vocab_size must exceed {FIRST_FILLER}, got {vocab_size}");
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|_| {
            let mut tokens: Vec<usize> =
                (0..seq_len).map(|_| FIRST_FILLER + rng.below(vocab_size - FIRST_FILLER)).collect();
            let pos_a = rng.below(seq_len);
            let pos_b = (pos_a + 1 + rng.below(seq_len - 1)) % seq_len; // any position but pos_a
            tokens[pos_a] = MARKER_A;
            tokens[pos_b] = MARKER_B;
            Sample { tokens, label: usize::from(pos_a < pos_b) }
        })
        .collect()
}

/// A generated data set as a Burn `Dataset`.
pub fn dataset(n: usize, seq_len: usize, vocab_size: usize, seed: u64) -> InMemDataset<Sample> {
    InMemDataset::new(generate(n, seq_len, vocab_size, seed))
}

/// A batch: `tokens: [B, N]` ids and `targets: [B]` labels.
#[derive(Clone, Debug)]
pub struct SequenceBatch<B: Backend> {
    /// Token ids `[B, N]`.
    pub tokens: Tensor<B, 2, Int>,
    /// Labels `[B]`.
    pub targets: Tensor<B, 1, Int>,
}

/// Stacks [`Sample`]s into a [`SequenceBatch`] on the requested device.
#[derive(Clone, Debug, Default)]
pub struct SequenceBatcher;

impl<B: Backend> Batcher<B, Sample, SequenceBatch<B>> for SequenceBatcher {
    fn batch(&self, items: Vec<Sample>, device: &B::Device) -> SequenceBatch<B> {
        let n = items[0].tokens.len();
        let tokens: Vec<i64> = items.iter().flat_map(|s| s.tokens.iter().map(|&t| t as i64)).collect();
        let targets: Vec<i64> = items.iter().map(|s| s.label as i64).collect();
        SequenceBatch {
            tokens: Tensor::from_data(TensorData::new(tokens, [items.len(), n]), device),
            targets: Tensor::from_data(TensorData::new(targets, [items.len()]), device),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_once_each_and_labels_balanced() {
        let samples = generate(2000, 12, 10, 7);
        for s in &samples {
            assert_eq!(s.tokens.iter().filter(|&&t| t == MARKER_A).count(), 1);
            assert_eq!(s.tokens.iter().filter(|&&t| t == MARKER_B).count(), 1);
            let a = s.tokens.iter().position(|&t| t == MARKER_A).unwrap();
            let b = s.tokens.iter().position(|&t| t == MARKER_B).unwrap();
            assert_eq!(s.label, usize::from(a < b));
            assert!(s.tokens.iter().all(|&t| t < 10));
        }
        let ones = samples.iter().filter(|s| s.label == 1).count();
        assert!((900..1100).contains(&ones), "unbalanced labels: {ones} of 2000");
    }
}
