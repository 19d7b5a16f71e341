//! The learning strategy burn-train runs for YOLO26: ultralytics 8.4.190 `BaseTrainer._do_train` as a
//! `SupervisedLearningStrategy` (`TrainingStrategy::Custom`).
//!
//! Per epoch: the ProgLoss weights of the epoch, every group's lr set to `initial_lr·lf(epoch)` (the `LambdaLR`
//! step), then per batch (global iteration `ni`): the warmup (lr, momentum, accumulation ramps),
//! `Learner::train_step` (training forward, `E2ELoss`, backward), gradients accumulated by parameter name until
//! `ni − last_opt_step ≥ accumulate`, then `Learner::optimizer_step` (clipping at norm 10 and the update) and the
//! EMA update. Every batch's loss items go to burn-train's event processor (metrics, TUI, logger). After the
//! epoch: the EMA validated through the model's `InferenceStep` (mAP50-95 is the fitness), `results.csv`,
//! `weights/last.*` and, on a new best fitness, `weights/best.safetensors`; early stop after `patience` epochs
//! without improvement. A non-finite loss stops the run with an error naming epoch, batch and iteration; the
//! checkpoints of the last completed epoch stay. With several devices each batch is split among them
//! ([`DeviceSteps`], ultralytics DDP) and everything after the backward runs once. burn-train's interrupter (the TUI's `q`) stops after the
//! current batch, keeping the last completed epoch.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use burn::data::dataloader::Progress;
use burn::module::AutodiffModule;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::train::{
    EventProcessorTraining, InferenceStep, Interrupter, Learner, LearnerEvent, LearningComponentsMarker,
    SupervisedLearningStrategy, SupervisedTrainingEventProcessor, TrainingComponents, TrainingItem,
};
use yolo26_model::YoloBackend;

use super::loader::EpochLoader;
use super::model::{wrap, LossControl, ValJob, YoloTrainModel};
use super::multi::DeviceSteps;
use super::optimizer::YoloOptimizer;
use super::profile::{Phase, StepProfile};
use crate::backend::TrainBackend;
use crate::ema::ModelEma;
use crate::optim::{accumulate_grads, grads_params, GroupKind, Optimizer, OptimizerKind};
use crate::schedule::Schedule;
use crate::trainer::{checkpoint, results, EpochRow, Event, TrainArgs, TrainState, TrainSummary};

/// burn-train's component types of a YOLO26 run: a constant burn lr (unused, see [`YoloOptimizer`]).
pub type YoloComponents<AB> =
    LearningComponentsMarker<AB, f64, YoloTrainModel<AB>, YoloOptimizer<<AB as AutodiffBackend>::InnerBackend>>;

/// Everything a run carries besides the learner's model and optimizer.
pub struct Run<AB: AutodiffBackend> {
    pub args: TrainArgs,
    pub dir: PathBuf,
    pub names: Vec<String>,
    pub schedule: Schedule,
    pub optimizer: YoloOptimizer<AB::InnerBackend>,
    pub ema: ModelEma<AB::InnerBackend>,
    pub state: TrainState,
    /// Gradients accumulated since the last optimizer step, by parameter name.
    pub pending: HashMap<String, Tensor<AB::InnerBackend, 1>>,
    pub loss: LossControl,
    /// The devices the steps run on (several: data-parallel, [`DeviceSteps`]); the model is on the first.
    pub devices: Vec<AB::Device>,
    pub loader: EpochLoader,
    pub val: ValJob,
    /// Run time before this process (a resumed run continues the clock).
    pub start: Instant,
    pub on_event: Box<dyn FnMut(Event) + Send>,
}

/// The strategy: the run, taken by the one `fit`, and the outcome left for the caller of `launch`.
pub struct YoloStrategy<AB: AutodiffBackend> {
    run: Mutex<Option<Run<AB>>>,
    pub outcome: Arc<Mutex<Option<Result<TrainSummary, String>>>>,
}

impl<AB: AutodiffBackend> YoloStrategy<AB> {
    pub fn new(run: Run<AB>) -> Self {
        YoloStrategy { run: Mutex::new(Some(run)), outcome: Arc::new(Mutex::new(None)) }
    }
}

impl<AB> SupervisedLearningStrategy<YoloComponents<AB>> for YoloStrategy<AB>
where
    AB: AutodiffBackend + TrainBackend,
    AB::InnerBackend: YoloBackend,
{
    fn fit(
        &self,
        components: TrainingComponents<YoloComponents<AB>>,
        mut learner: Learner<YoloComponents<AB>>,
        dataloader_train: burn::train::TrainLoader<YoloComponents<AB>>,
        dataloader_valid: burn::train::ValidLoader<YoloComponents<AB>>,
        _starting_epoch: usize,
    ) -> (YoloTrainModel<AB>, SupervisedTrainingEventProcessor<YoloComponents<AB>>) {
        let mut processor = components.event_processor;
        let run = self.run.lock().ok().and_then(|mut r| r.take());
        let outcome = match run {
            Some(mut run) => {
                run.fit(&mut learner, &*dataloader_train, &*dataloader_valid, &mut processor, &components.interrupter)
            }
            None => Err("a YOLO26 learning strategy runs once".to_string()),
        };
        if let Ok(mut o) = self.outcome.lock() {
            *o = Some(outcome);
        }
        (learner.model(), processor)
    }
}

/// Sets every group's lr to `initial_lr·lf(epoch)` (the scheduler step at the start of an epoch).
fn scheduler_step<B: Backend>(opt: &mut Optimizer<B>, schedule: &Schedule, epoch: usize) {
    for g in &mut opt.groups {
        g.lr = g.initial_lr * schedule.lf(epoch);
    }
}

/// The warmup of iteration `ni`: accumulation, each group's lr and (except Adam's) momentum.
fn warmup<B: Backend>(opt: &mut Optimizer<B>, schedule: &Schedule, ni: usize, epoch: usize) -> Option<usize> {
    if !schedule.in_warmup(ni) {
        return None;
    }
    let has_momentum = opt.kind != OptimizerKind::AdamW;
    for g in &mut opt.groups {
        g.lr = schedule.warmup_lr(ni, epoch, g.initial_lr, g.kind == GroupKind::Bias);
        if has_momentum {
            g.momentum = schedule.warmup_momentum(ni);
        }
    }
    Some(schedule.warmup_accumulate(ni))
}

type TrainData<AB> = dyn burn::data::dataloader::DataLoader<AB, yolo26_data::Batch>;
type ValData<B> = dyn burn::data::dataloader::DataLoader<B, ValJob>;

impl<AB> Run<AB>
where
    AB: AutodiffBackend + TrainBackend,
    AB::InnerBackend: YoloBackend,
{
    fn fit(
        &mut self,
        learner: &mut Learner<YoloComponents<AB>>,
        train: &TrainData<AB>,
        valid: &ValData<AB::InnerBackend>,
        processor: &mut SupervisedTrainingEventProcessor<YoloComponents<AB>>,
        interrupter: &Interrupter,
    ) -> Result<TrainSummary, String> {
        let args = self.args.clone();
        let nb = self.loader.num_batches();
        let wdir = self.dir.join("weights");
        let (last, best) = (wdir.join("last.safetensors"), wdir.join("best.safetensors"));
        let start_epoch = if self.state.rows.is_empty() { 0 } else { self.state.epoch + 1 };
        let mut stale = 0usize;
        let device = learner.model().model.devices().first().cloned();
        let mut prof = StepProfile::<AB>::new(device.filter(|_| args.profile));
        let multi = (self.devices.len() > 1).then(|| DeviceSteps::<AB>::new(self.devices.clone()));
        let mut plot_idx = vec![0, 1, 2];
        if args.close_mosaic > 0 && args.close_mosaic <= args.epochs {
            let base = (args.epochs - args.close_mosaic) * nb;
            plot_idx.extend([base, base + 1, base + 2]);
        }
        for epoch in start_epoch..args.epochs {
            self.loss.set_epoch(epoch);
            scheduler_step(&mut self.optimizer.inner(), &self.schedule, epoch);
            self.loader.set_epoch(epoch);
            let global = Progress::new(epoch + 1, args.epochs);
            let mut tloss = [0f64; 3];
            let mut iter = train.iter();
            let mut i = 0usize;
            prof.start();
            while let Some(batch) = iter.next() {
                prof.mark(Phase::Data);
                let images = batch.len();
                let ni = i + nb * epoch;
                if args.plots && plot_idx.contains(&ni) {
                    // ultralytics plot_training_samples: the first three batches, and three after close_mosaic
                    let path = self.dir.join(format!("train_batch{ni}.jpg"));
                    let samples = batch.samples().map_err(|e| e.to_string())?;
                    yolo26_augment::plot_batch(&samples, &self.names, &path)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                }
                if let Some(acc) = warmup(&mut self.optimizer.inner(), &self.schedule, ni, epoch) {
                    self.state.accumulate = acc;
                }
                let (item, grads) = match &multi {
                    None if prof.enabled() => {
                        let out = learner.model().step_marked(batch, |p| prof.mark(p));
                        (out.item, vec![out.grads])
                    }
                    None => {
                        let out = learner.train_step(batch);
                        (out.item, vec![out.grads])
                    }
                    Some(steps) => {
                        let out = steps.step(&batch, &learner.model());
                        drop(batch);
                        // (every device's upload, forward and backward, run at once, are charged to "backward")
                        prof.mark(Phase::Backward);
                        (out.item, out.grads)
                    }
                };
                if !item.is_finite() {
                    return Err(format!(
                        "non-finite loss {:?} (box, cls, l1) at epoch {}, batch {i} (iteration {ni}); the run \
                         stopped, {} holds the last completed epoch",
                        item.items,
                        epoch + 1,
                        wdir.display()
                    ));
                }
                let model = learner.model().model;
                for g in grads {
                    accumulate_grads::<AB, _>(&model, g, &mut self.pending);
                }
                prof.mark(Phase::Grads);
                for (k, v) in item.items.iter().enumerate() {
                    tloss[k] = (tloss[k] * i as f64 + v) / (i + 1) as f64;
                }
                let stepped = ni as i64 - self.state.last_opt_step >= self.state.accumulate as i64;
                if stepped {
                    let grads = grads_params::<AB, _>(&model, std::mem::take(&mut self.pending));
                    learner.optimizer_step(grads);
                    prof.mark(Phase::Optimizer);
                    self.ema.update(&learner.model().model.valid());
                    prof.mark(Phase::Ema);
                    self.state.last_opt_step = ni as i64;
                }
                let lr = self.optimizer.inner().groups.first().map(|g| g.lr);
                let item = TrainingItem::new(item, iter.progress(), global.clone(), Some(ni + 1), lr);
                processor.process_train(LearnerEvent::ProcessedItem(item));
                prof.mark(Phase::Log);
                prof.end_iteration(images, stepped);
                i += 1;
                if interrupter.should_stop() {
                    (self.on_event)(Event::Info(format!(
                        "stopped during epoch {} (batch {i}/{nb}); {} holds the last completed epoch",
                        epoch + 1,
                        wdir.display()
                    )));
                    return Ok(self.summary());
                }
            }
            if let Some(e) = self.loader.take_error() {
                return Err(e);
            }
            if let Some(line) = prof.take_summary(epoch + 1) {
                (self.on_event)(Event::Info(line));
            }
            processor.process_train(LearnerEvent::EndEpoch(epoch + 1));
            let final_epoch = epoch + 1 == args.epochs;
            let report =
                if args.val || final_epoch { self.validate(valid, processor, &global, epoch + 1)? } else { None };
            let metrics = report.as_ref().map(|r| {
                let r = r.results();
                [r.precision, r.recall, r.map50, r.map]
            });
            let row = EpochRow {
                epoch: epoch + 1,
                time: self.start.elapsed().as_secs_f64(),
                train_loss: tloss,
                metrics,
                lr: self.optimizer.inner().groups.iter().map(|g| g.lr).collect(),
            };
            self.state.rows.push(row.clone());
            results::write_csv(&self.state.rows, &self.dir.join("results.csv"))?;
            if args.plots {
                results::plot(&self.state.rows, &self.dir.join("results.png"))?;
            }
            let fitness = metrics.map(|m| m[3]);
            let improved = match (fitness, self.state.best_fitness) {
                (Some(f), Some(b)) => f >= b,
                (Some(_), None) => true,
                _ => false,
            };
            if improved {
                self.state.best_fitness = fitness;
                self.state.best_epoch = Some(epoch);
                stale = 0;
            } else {
                stale += 1;
            }
            self.state.epoch = epoch;
            self.state.ema_updates = self.ema.updates;
            self.state.scaler = self.loss.scaler.as_ref().map(|s| s.get());
            let (rec, optim_tensors) = self.optimizer.inner().to_record();
            self.state.optimizer = rec;
            let ema = self.ema.model();
            checkpoint::save_weights(&ema, &self.names, &last)?;
            if improved {
                checkpoint::save_weights(&ema, &self.names, &best)?;
                // the validation outputs of the best epoch (metrics.json, per_class.csv, PR/F1/P/R curves,
                // confusion matrices), as ultralytics leaves those of its final validation of best.pt
                if let Some(report) = &report {
                    report.write(&self.dir, args.plots).map_err(|e| e.to_string())?;
                }
            }
            checkpoint::save_state(
                &wdir.join("last.state.safetensors"),
                &self.state,
                &learner.model().model.valid(),
                &ema,
                optim_tensors,
                &self.pending,
            )?;
            (self.on_event)(Event::EpochEnd(row));
            if stale >= args.patience && !final_epoch {
                (self.on_event)(Event::Info(format!(
                    "Stopping training early as no improvement observed in last {} epochs. Best results observed \
                     at epoch {}",
                    args.patience,
                    self.state.best_epoch.map_or(0, |e| e + 1)
                )));
                break;
            }
        }
        Ok(self.summary())
    }

    /// Validates the EMA through the model's `InferenceStep` on every job of `valid` (one: the split), reporting
    /// to the event processor; the report of the split.
    fn validate(
        &mut self,
        valid: &ValData<AB::InnerBackend>,
        processor: &mut SupervisedTrainingEventProcessor<YoloComponents<AB>>,
        global: &Progress,
        epoch: usize,
    ) -> Result<Option<Arc<crate::val::ValReport>>, String> {
        let model: YoloTrainModel<AB::InnerBackend> = wrap(self.ema.model(), self.loss.clone());
        let mut iter = valid.iter();
        let mut report = None;
        while let Some(job) = iter.next() {
            let out = model.step(job);
            report = Some(out.report.clone().map_err(|e| format!("validation after epoch {epoch}: {e}"))?);
            let item = TrainingItem::new(out, iter.progress(), global.clone(), None, None);
            processor.process_valid(LearnerEvent::ProcessedItem(item));
        }
        processor.process_valid(LearnerEvent::EndEpoch(epoch));
        Ok(report)
    }

    fn summary(&self) -> TrainSummary {
        let wdir = self.dir.join("weights");
        TrainSummary {
            dir: self.dir.clone(),
            rows: self.state.rows.clone(),
            best_fitness: self.state.best_fitness,
            best_epoch: self.state.best_epoch,
            last: wdir.join("last.safetensors"),
            best: wdir.join("best.safetensors"),
        }
    }
}
