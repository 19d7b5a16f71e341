//! How a run shows its progress: burn-train's TUI on a terminal, else [`LineRenderer`] (a few plain lines per
//! epoch, for logs and pipes; burn-train's own CLI renderer prints every item's debug form).

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use burn::train::metric::{MetricDefinition, MetricId};
use burn::train::renderer::tui::TuiMetricsRendererWrapper;
use burn::train::renderer::{
    EvaluationName, EvaluationProgress, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining, ProgressType, TrainingProgress,
};
use burn::train::{Interrupter, LearnerSummary};

/// Which renderer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ui {
    /// The TUI when stdout is a terminal, else lines.
    Auto,
    /// burn-train's TUI (plots of every metric, progress, ETA; `q` stops the run after the current batch).
    Tui,
    /// [`LineRenderer`] on stdout.
    Lines,
    /// Nothing (tests, embedding).
    Quiet,
}

impl Ui {
    /// Whether this choice shows the TUI.
    pub fn is_tui(self) -> bool {
        match self {
            Ui::Auto => std::io::stdout().is_terminal(),
            Ui::Tui => true,
            Ui::Lines | Ui::Quiet => false,
        }
    }

    /// The renderer; `resumed_epoch` is the last completed epoch of a resumed run (the TUI counts from it).
    pub fn renderer(self, interrupter: Interrupter, resumed_epoch: Option<usize>) -> AnyRenderer {
        if self.is_tui() {
            return AnyRenderer(Box::new(TuiMetricsRendererWrapper::new(interrupter, resumed_epoch)));
        }
        AnyRenderer(Box::new(LineRenderer::new(self == Ui::Quiet)))
    }
}

/// A boxed renderer (burn-train's `renderer(..)` takes a sized one).
pub struct AnyRenderer(pub Box<dyn MetricsRenderer>);

impl MetricsRendererTraining for AnyRenderer {
    fn update_train(&mut self, state: MetricState) {
        self.0.update_train(state)
    }
    fn update_valid(&mut self, state: MetricState) {
        self.0.update_valid(state)
    }
    fn render_train(&mut self, item: TrainingProgress, p: Vec<ProgressType>) {
        self.0.render_train(item, p)
    }
    fn render_valid(&mut self, item: TrainingProgress, p: Vec<ProgressType>) {
        self.0.render_valid(item, p)
    }
    fn on_train_end(&mut self, summary: Option<LearnerSummary>) -> Result<(), Box<dyn core::error::Error>> {
        self.0.on_train_end(summary)
    }
}

impl MetricsRendererEvaluation for AnyRenderer {
    fn update_test(&mut self, name: EvaluationName, state: MetricState) {
        self.0.update_test(name, state)
    }
    fn render_test(&mut self, item: EvaluationProgress, p: Vec<ProgressType>) {
        self.0.render_test(item, p)
    }
}

impl MetricsRenderer for AnyRenderer {
    fn manual_close(&mut self) {
        self.0.manual_close()
    }
    fn register_metric(&mut self, definition: MetricDefinition) {
        self.0.register_metric(definition)
    }
}

/// Plain progress lines on stdout: the training metrics every 30 s (`YOLO26_LOG_EVERY=SECONDS` in the environment
/// sets another interval; 0 prints every batch, e.g. to compare a run iteration by iteration) and at the end of an epoch
/// (`epoch 3/100  batch 125/125  box_loss 1.2345 cls_loss … images/s 512.0`), the validation metrics after each
/// validation.
pub struct LineRenderer {
    quiet: bool,
    names: HashMap<MetricId, String>,
    train: Vec<(String, String)>,
    valid: Vec<(String, String)>,
    last: Option<Instant>,
    every: Duration,
}

impl LineRenderer {
    pub fn new(quiet: bool) -> Self {
        LineRenderer {
            quiet,
            names: HashMap::new(),
            train: Vec::new(),
            valid: Vec::new(),
            last: None,
            every: std::env::var("YOLO26_LOG_EVERY")
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map_or(Duration::from_secs(30), Duration::from_secs_f64),
        }
    }

    fn set(list: &mut Vec<(String, String)>, name: String, value: String) {
        match list.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => list.push((name, value)),
        }
    }

    fn record(&mut self, valid: bool, state: MetricState) {
        let entry = match state {
            MetricState::Generic(e) | MetricState::Numeric(e, _) => e,
        };
        let name = self.names.get(&entry.metric_id).cloned().unwrap_or_else(|| format!("{:?}", entry.metric_id));
        let list = if valid { &mut self.valid } else { &mut self.train };
        Self::set(list, name, entry.serialized_entry.formatted);
    }

    fn line(&self, head: String, list: &[(String, String)]) {
        if self.quiet {
            return;
        }
        let body: Vec<String> = list.iter().map(|(n, v)| format!("{n} {v}")).collect();
        let mut out = std::io::stdout().lock();
        // a closed stdout (`| head`) must not stop the training
        let _ = writeln!(out, "{head}  {}", body.join("  "));
    }
}

fn epoch_head(item: &TrainingProgress) -> String {
    format!("epoch {}/{}", item.global_progress.items_processed, item.global_progress.items_total)
}

impl MetricsRendererTraining for LineRenderer {
    fn update_train(&mut self, state: MetricState) {
        self.record(false, state)
    }
    fn update_valid(&mut self, state: MetricState) {
        self.record(true, state)
    }
    fn render_train(&mut self, item: TrainingProgress, _: Vec<ProgressType>) {
        let done = item.progress.as_ref().is_some_and(|p| p.items_processed >= p.items_total);
        if done || self.last.is_none_or(|t| t.elapsed() >= self.every) {
            self.last = Some(Instant::now());
            let batch = item
                .progress
                .as_ref()
                .map_or(String::new(), |p| format!("  batch {}/{}", p.items_processed, p.items_total));
            self.line(format!("{}{batch}", epoch_head(&item)), &self.train);
        }
    }
    fn render_valid(&mut self, item: TrainingProgress, _: Vec<ProgressType>) {
        self.line(format!("{}  val", epoch_head(&item)), &self.valid);
    }
    fn on_train_end(&mut self, _summary: Option<LearnerSummary>) -> Result<(), Box<dyn core::error::Error>> {
        Ok(())
    }
}

impl MetricsRendererEvaluation for LineRenderer {
    fn update_test(&mut self, _name: EvaluationName, state: MetricState) {
        self.record(true, state)
    }
    fn render_test(&mut self, _item: EvaluationProgress, _: Vec<ProgressType>) {
        self.line("test".into(), &self.valid);
    }
}

impl MetricsRenderer for LineRenderer {
    fn manual_close(&mut self) {}
    fn register_metric(&mut self, definition: MetricDefinition) {
        self.names.insert(definition.metric_id, definition.name);
    }
}
