//! burn-train metrics of a YOLO26 run, shown by its TUI / line renderer: the three loss items (running epoch
//! means, as ultralytics' progress bar shows `tloss`), objects per batch, images per second (train); precision,
//! recall, mAP50 and mAP50-95 of the validated EMA (valid). The learning rate is burn-train's
//! `LearningRateMetric` (pg0's lr, passed with every item).

use std::sync::Arc;
use std::time::Instant;

use burn::train::metric::{
    Adaptor, Metric, MetricAttributes, MetricMetadata, MetricName, Numeric, NumericAttributes, NumericEntry,
    SerializedEntry,
};

use super::model::{TrainItem, ValOutput};

impl Adaptor<TrainItem> for TrainItem {
    fn adapt(&self) -> TrainItem {
        self.clone()
    }
}

impl Adaptor<ValOutput> for ValOutput {
    fn adapt(&self) -> ValOutput {
        self.clone()
    }
}

/// A mean weighted by a count, and the last value.
#[derive(Clone, Debug, Default)]
struct Mean {
    sum: f64,
    count: f64,
    last: f64,
}

impl Mean {
    fn add(&mut self, v: f64, weight: f64) {
        self.sum += v * weight;
        self.count += weight;
        self.last = v;
    }
    fn mean(&self) -> f64 {
        if self.count > 0.0 {
            self.sum / self.count
        } else {
            f64::NAN
        }
    }
    fn entry(&self, digits: usize) -> SerializedEntry {
        let m = self.mean();
        SerializedEntry::new(format!("{m:.digits$}"), NumericEntry::Value(m).serialize())
    }
}

fn numeric(higher_is_better: bool, unit: Option<&str>) -> MetricAttributes {
    NumericAttributes { unit: unit.map(str::to_string), higher_is_better }.into()
}

/// Running epoch mean of one loss item (`box_loss`, `cls_loss`, `l1_loss`), ultralytics' `tloss`.
#[derive(Clone)]
pub struct LossItemMetric {
    index: usize,
    name: MetricName,
    mean: Mean,
}

impl LossItemMetric {
    /// The three items in ultralytics' order.
    pub fn all() -> [LossItemMetric; 3] {
        let names = ["box_loss", "cls_loss", "l1_loss"];
        std::array::from_fn(|index| LossItemMetric {
            index,
            name: Arc::new(names[index].into()),
            mean: Mean::default(),
        })
    }
}

impl Metric for LossItemMetric {
    type Input = TrainItem;
    fn name(&self) -> MetricName {
        self.name.clone()
    }
    fn update(&mut self, item: &TrainItem, _: &MetricMetadata) -> SerializedEntry {
        // ultralytics: tloss = (tloss * i + loss_items) / (i + 1), a mean over batches (not images)
        self.mean.add(item.items[self.index], 1.0);
        self.mean.entry(4)
    }
    fn clear(&mut self) {
        self.mean = Mean::default();
    }
    fn attributes(&self) -> MetricAttributes {
        numeric(false, None)
    }
}

impl Numeric for LossItemMetric {
    fn value(&self) -> NumericEntry {
        NumericEntry::Value(self.mean.last)
    }
    fn running_value(&self) -> NumericEntry {
        NumericEntry::Value(self.mean.mean())
    }
}

/// Objects in the last batch (ultralytics' `Instances` column).
#[derive(Clone)]
pub struct InstancesMetric {
    name: MetricName,
    mean: Mean,
}

impl Default for InstancesMetric {
    fn default() -> Self {
        InstancesMetric { name: Arc::new("instances".into()), mean: Mean::default() }
    }
}

impl Metric for InstancesMetric {
    type Input = TrainItem;
    fn name(&self) -> MetricName {
        self.name.clone()
    }
    fn update(&mut self, item: &TrainItem, _: &MetricMetadata) -> SerializedEntry {
        self.mean.add(item.instances as f64, 1.0);
        SerializedEntry::new(item.instances.to_string(), NumericEntry::Value(item.instances as f64).serialize())
    }
    fn clear(&mut self) {
        self.mean = Mean::default();
    }
    fn attributes(&self) -> MetricAttributes {
        numeric(true, None)
    }
}

impl Numeric for InstancesMetric {
    fn value(&self) -> NumericEntry {
        NumericEntry::Value(self.mean.last)
    }
    fn running_value(&self) -> NumericEntry {
        NumericEntry::Value(self.mean.mean())
    }
}

/// Training images per second since the epoch's first batch (loading, forward, backward and optimizer steps;
/// the first batch only starts the clock).
#[derive(Clone)]
pub struct ImagesPerSecond {
    name: MetricName,
    start: Option<Instant>,
    images: usize,
    last: f64,
}

impl Default for ImagesPerSecond {
    fn default() -> Self {
        ImagesPerSecond { name: Arc::new("images/s".into()), start: None, images: 0, last: 0.0 }
    }
}

impl Metric for ImagesPerSecond {
    type Input = TrainItem;
    fn name(&self) -> MetricName {
        self.name.clone()
    }
    fn update(&mut self, item: &TrainItem, _: &MetricMetadata) -> SerializedEntry {
        match self.start {
            None => self.start = Some(Instant::now()),
            Some(t) => {
                self.images += item.images;
                self.last = self.images as f64 / t.elapsed().as_secs_f64().max(1e-9);
            }
        }
        SerializedEntry::new(format!("{:.1}", self.last), NumericEntry::Value(self.last).serialize())
    }
    fn clear(&mut self) {
        *self = ImagesPerSecond { name: self.name.clone(), ..ImagesPerSecond::default() };
    }
    fn attributes(&self) -> MetricAttributes {
        numeric(true, Some("img/s"))
    }
}

impl Numeric for ImagesPerSecond {
    fn value(&self) -> NumericEntry {
        NumericEntry::Value(self.last)
    }
    fn running_value(&self) -> NumericEntry {
        NumericEntry::Value(self.last)
    }
}

/// Which validation figure.
#[derive(Clone, Copy, Debug)]
pub enum ValFigure {
    Precision,
    Recall,
    Map50,
    Map50To95,
}

/// One figure of the validation report (ultralytics `metrics/precision(B)` … `metrics/mAP50-95(B)`).
#[derive(Clone)]
pub struct ValMetric {
    figure: ValFigure,
    name: MetricName,
    value: f64,
}

impl ValMetric {
    pub fn all() -> [ValMetric; 4] {
        [
            (ValFigure::Precision, "precision"),
            (ValFigure::Recall, "recall"),
            (ValFigure::Map50, "mAP50"),
            (ValFigure::Map50To95, "mAP50-95"),
        ]
        .map(|(figure, n)| ValMetric { figure, name: Arc::new(n.into()), value: f64::NAN })
    }
}

impl Metric for ValMetric {
    type Input = ValOutput;
    fn name(&self) -> MetricName {
        self.name.clone()
    }
    fn update(&mut self, out: &ValOutput, _: &MetricMetadata) -> SerializedEntry {
        self.value = match &out.report {
            Ok(report) => {
                let r = report.results();
                match self.figure {
                    ValFigure::Precision => r.precision,
                    ValFigure::Recall => r.recall,
                    ValFigure::Map50 => r.map50,
                    ValFigure::Map50To95 => r.map,
                }
            }
            Err(_) => f64::NAN,
        };
        SerializedEntry::new(format!("{:.4}", self.value), NumericEntry::Value(self.value).serialize())
    }
    fn clear(&mut self) {
        self.value = f64::NAN;
    }
    fn attributes(&self) -> MetricAttributes {
        numeric(true, None)
    }
}

impl Numeric for ValMetric {
    fn value(&self) -> NumericEntry {
        NumericEntry::Value(self.value)
    }
    fn running_value(&self) -> NumericEntry {
        NumericEntry::Value(self.value)
    }
}
