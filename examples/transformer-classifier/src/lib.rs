//! Composability example: `kernels-cubecl`'s [`FlashMultiHeadAttention`](kernels_cubecl::attention::FlashMultiHeadAttention)
//! (a custom Burn op with CubeCL forward/backward kernels) used as an ordinary module inside a transformer encoder
//! classifier, trained end to end by **burn-train** (`Learner` + `SupervisedTraining`, `TrainStep` /
//! `InferenceStep`, AdamW, Loss and Accuracy metrics, a headless renderer, file checkpoints). The same generic
//! code runs on `Autodiff<Flex>` (reference attention), `Autodiff<Wgpu>` and `Autodiff<Cuda>` (flash kernels
//! through Fusion and Autodiff). The task ([`data`]) is synthetic and needs attention: which of two marker
//! tokens comes first.

pub mod data;
pub mod model;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::AdamWConfig;
use burn::prelude::*;
use burn::record::CompactRecorder;
use burn::tensor::backend::AutodiffBackend;
use burn::train::metric::{AccuracyMetric, LossMetric, MetricDefinition, MetricId, NumericEntry};
use burn::train::renderer::{
    EvaluationName, EvaluationProgress, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining, ProgressType, TrainingProgress,
};
use burn::train::{ClassificationOutput, InferenceStep, Learner, SupervisedTraining, TrainOutput, TrainStep};
use kernels_cubecl::attention::FlashAttentionBackend;

use data::{SequenceBatch, SequenceBatcher, NUM_CLASSES};
use model::{Classifier, ClassifierConfig};

impl<B: FlashAttentionBackend> Classifier<B> {
    /// Logits and cross-entropy loss for a batch, in burn-train's classification output.
    pub fn forward_classification(&self, batch: SequenceBatch<B>) -> ClassificationOutput<B> {
        let logits = self.forward(batch.tokens);
        let loss = CrossEntropyLossConfig::new().init(&logits.device()).forward(logits.clone(), batch.targets.clone());
        ClassificationOutput::new(loss, logits, batch.targets)
    }
}

impl<B: AutodiffBackend + FlashAttentionBackend> TrainStep for Classifier<B> {
    type Input = SequenceBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: SequenceBatch<B>) -> TrainOutput<ClassificationOutput<B>> {
        let item = self.forward_classification(batch);
        TrainOutput::new(self, item.loss.backward(), item)
    }
}

impl<B: FlashAttentionBackend> InferenceStep for Classifier<B> {
    type Input = SequenceBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: SequenceBatch<B>) -> ClassificationOutput<B> {
        self.forward_classification(batch)
    }
}

/// What to train.
#[derive(Config, Debug)]
pub struct TrainConfig {
    /// The model.
    pub model: ClassifierConfig,
    /// Sequence length of the generated data.
    pub seq_len: usize,
    /// Epochs.
    #[config(default = 4)]
    pub epochs: usize,
    /// Batch size.
    #[config(default = 32)]
    pub batch_size: usize,
    /// Generated training sequences per epoch (the same set every epoch).
    #[config(default = 4096)]
    pub train_size: usize,
    /// Generated validation sequences (a different seed).
    #[config(default = 1024)]
    pub valid_size: usize,
    /// AdamW learning rate (constant).
    #[config(default = 2e-3)]
    pub learning_rate: f64,
    /// Seed for the data and the initial weights.
    #[config(default = 42)]
    pub seed: u64,
}

/// Per-epoch means, as burn-train's metrics computed them (accuracy in %).
#[derive(Clone, Debug, Default)]
pub struct EpochMetrics {
    /// Epoch, from 1.
    pub epoch: usize,
    /// Mean training loss over the epoch.
    pub train_loss: f64,
    /// Training accuracy (%) over the epoch.
    pub train_accuracy: f64,
    /// Validation loss after the epoch.
    pub valid_loss: f64,
    /// Validation accuracy (%) after the epoch.
    pub valid_accuracy: f64,
}

/// The outcome of [`train`].
#[derive(Clone, Debug)]
pub struct TrainReport {
    /// One entry per epoch, from the renderer.
    pub epochs: Vec<EpochMetrics>,
    /// Validation accuracy (%) of the returned model, recomputed after training.
    pub final_valid_accuracy: f64,
    /// Wall time of the training (all epochs, with validation).
    pub seconds: f64,
}

/// Headless renderer: averages the per-batch metric values over each epoch and prints one line per epoch (instead of the CLI
/// renderer's line per batch). The history is shared with [`train`] through an `Arc<Mutex<..>>`.
struct EpochRenderer {
    names: HashMap<MetricId, String>,
    /// Per metric name: (Σ value·count, Σ count) over the current epoch, per split.
    train: HashMap<String, (f64, usize)>,
    valid: HashMap<String, (f64, usize)>,
    history: Arc<Mutex<Vec<EpochMetrics>>>,
    start: Instant,
    verbose: bool,
}

impl EpochRenderer {
    fn record(&mut self, split_valid: bool, state: MetricState) {
        // The numeric entry is the batch's value (with its batch size): average them over the epoch.
        if let MetricState::Numeric(entry, value) = state {
            if let Some(name) = self.names.get(&entry.metric_id) {
                let (v, n) = match value {
                    NumericEntry::Value(v) => (v, 1),
                    NumericEntry::Aggregated { aggregated_value, count } => (aggregated_value, count),
                };
                let map = if split_valid { &mut self.valid } else { &mut self.train };
                let acc = map.entry(name.clone()).or_default();
                acc.0 += v * n as f64;
                acc.1 += n;
            }
        }
    }
}

fn epoch_done(item: &TrainingProgress) -> bool {
    item.progress.as_ref().is_some_and(|p| p.items_processed >= p.items_total)
}

impl MetricsRendererTraining for EpochRenderer {
    fn update_train(&mut self, state: MetricState) {
        self.record(false, state);
    }

    fn update_valid(&mut self, state: MetricState) {
        self.record(true, state);
    }

    fn render_train(&mut self, _item: TrainingProgress, _progress: Vec<ProgressType>) {}

    fn render_valid(&mut self, item: TrainingProgress, _progress: Vec<ProgressType>) {
        if !epoch_done(&item) {
            return;
        }
        let get = |m: &HashMap<String, (f64, usize)>, k: &str| m.get(k).map_or(f64::NAN, |&(s, n)| s / n as f64);
        let e = EpochMetrics {
            epoch: item.global_progress.items_processed,
            train_loss: get(&self.train, "Loss"),
            train_accuracy: get(&self.train, "Accuracy"),
            valid_loss: get(&self.valid, "Loss"),
            valid_accuracy: get(&self.valid, "Accuracy"),
        };
        if self.verbose {
            println!(
                "epoch {}/{}  train loss {:.4} acc {:5.1}%  |  valid loss {:.4} acc {:5.1}%  ({:.1} s)",
                e.epoch,
                item.global_progress.items_total,
                e.train_loss,
                e.train_accuracy,
                e.valid_loss,
                e.valid_accuracy,
                self.start.elapsed().as_secs_f64()
            );
        }
        self.history.lock().unwrap().push(e);
        self.train.clear();
        self.valid.clear();
    }

    fn on_train_end(
        &mut self,
        _summary: Option<burn::train::LearnerSummary>,
    ) -> Result<(), Box<dyn core::error::Error>> {
        Ok(())
    }
}

impl MetricsRendererEvaluation for EpochRenderer {
    fn update_test(&mut self, _name: EvaluationName, _state: MetricState) {}
    fn render_test(&mut self, _item: EvaluationProgress, _progress: Vec<ProgressType>) {}
}

impl MetricsRenderer for EpochRenderer {
    fn manual_close(&mut self) {}

    fn register_metric(&mut self, definition: MetricDefinition) {
        self.names.insert(definition.metric_id, definition.name);
    }
}

/// Trains a [`Classifier`] on the generated task with burn-train on `device`; metrics, checkpoints, the config
/// and the final model (`model.mpk`) go to `out`. Prints one line per epoch when `verbose`.
pub fn train<B>(config: &TrainConfig, device: B::Device, out: PathBuf, verbose: bool) -> TrainReport
where
    B: AutodiffBackend + FlashAttentionBackend,
    B::InnerBackend: FlashAttentionBackend,
{
    assert!(
        config.seq_len <= config.model.max_seq_len,
        "seq_len {} exceeds the model's position table ({})",
        config.seq_len,
        config.model.max_seq_len
    );
    // Fresh metric logs: burn-train writes `<out>/{train,valid}/epoch-N/`; stale epochs would mix in.
    for split in ["train", "valid"] {
        let _ = std::fs::remove_dir_all(out.join(split));
    }
    std::fs::create_dir_all(&out).expect("create the artifact directory");
    config.save(out.join("config.json")).expect("write config.json");
    B::seed(&device, config.seed);

    let vocab = config.model.vocab_size;
    let train_set = data::dataset(config.train_size, config.seq_len, vocab, config.seed);
    let valid_set = data::dataset(config.valid_size, config.seq_len, vocab, config.seed ^ 0x05EE_D0F7_A11D);
    let loader_train: Arc<dyn DataLoader<B, SequenceBatch<B>>> = DataLoaderBuilder::new(SequenceBatcher)
        .batch_size(config.batch_size)
        .shuffle(config.seed)
        .set_device(device.clone())
        .build(train_set);
    let loader_valid: Arc<dyn DataLoader<B::InnerBackend, SequenceBatch<B::InnerBackend>>> =
        DataLoaderBuilder::new(SequenceBatcher)
            .batch_size(config.batch_size)
            .set_device(device.clone())
            .build(valid_set);

    let history = Arc::new(Mutex::new(Vec::new()));
    let renderer = EpochRenderer {
        names: HashMap::new(),
        train: HashMap::new(),
        valid: HashMap::new(),
        history: history.clone(),
        start: Instant::now(),
        verbose,
    };
    let training = SupervisedTraining::new(&out, loader_train, loader_valid.clone())
        .metrics((AccuracyMetric::new(), LossMetric::new()))
        .with_file_checkpointer(CompactRecorder::new())
        .renderer(renderer)
        .num_epochs(config.epochs);
    let model = config.model.init::<B>(&device);
    let start = Instant::now();
    let result = training.launch(Learner::new(model, AdamWConfig::new().init(), config.learning_rate));
    let seconds = start.elapsed().as_secs_f64();

    let final_valid_accuracy = accuracy(&result.model, loader_valid.as_ref());
    result.model.save_file(out.join("model"), &CompactRecorder::new()).expect("write model.mpk");
    let epochs = history.lock().unwrap().clone();
    TrainReport { epochs, final_valid_accuracy, seconds }
}

/// Accuracy (%) of `model` over every batch of `loader`.
pub fn accuracy<B: FlashAttentionBackend>(model: &Classifier<B>, loader: &dyn DataLoader<B, SequenceBatch<B>>) -> f64 {
    let (mut correct, mut total) = (0i64, 0usize);
    for batch in loader.iter() {
        total += batch.targets.dims()[0];
        let predicted = model.forward(batch.tokens).argmax(1).squeeze_dim::<1>(1);
        correct += predicted.equal(batch.targets).int().sum().into_scalar().elem::<i64>();
    }
    100.0 * correct as f64 / total.max(1) as f64
}

/// The default model for a task: vocabulary of 16 (2 markers + 14 fillers), two classes.
pub fn default_model(seq_len: usize) -> ClassifierConfig {
    ClassifierConfig::new(16, seq_len, NUM_CLASSES)
}
