//! Data-parallel training on several devices of one backend through burn-train's multi-device step
//! ([`MultiDevicesTrainStep`]: one worker thread per device, the model forked onto it, `TrainStep::step` there).
//!
//! ultralytics equivalent: DDP (`device=0,1`) without SyncBN. Each global batch of `--batch` images is cut into
//! one contiguous shard per device ([`Batch::shards`]); each device runs the training forward, `E2ELoss` (scaled by
//! its own shard's size, as every rank's `loss.sum() * batch_size`) and the backward on its shard, BatchNorm on
//! that shard's statistics. The gradients come back to the first device and are **summed**: ultralytics multiplies
//! each rank's loss by the world size and DDP averages, which is the same sum. The optimizer, EMA, validation,
//! logs and checkpoints then run once, on the first device, as on one device.
//!
//! BatchNorm running statistics: every device updates them from its shard (Burn's `RunningState` keeps one value
//! per worker thread), averaged after every step (`RunningState::sync`, through `valid()`), i.e. they follow the
//! mean of the devices' batch statistics; ultralytics keeps rank 0's (`broadcast_buffers=False`) and saves rank
//! 0's EMA.

use burn::data::dataloader::{DataLoaderIterator, Progress};
use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::prelude::DeviceOps;
use burn::tensor::backend::AutodiffBackend;
use burn::train::train::MultiDevicesTrainStep;
use yolo26_data::Batch;
use yolo26_model::YoloBackend;

use super::model::{TrainItem, YoloTrainModel};
use super::strategy::YoloComponents;
use crate::backend::TrainBackend;

/// The devices of a data-parallel run and burn-train's worker threads on them (the first device is the main one:
/// the model, optimizer and EMA live there).
pub struct DeviceSteps<AB: AutodiffBackend + TrainBackend>
where
    AB::InnerBackend: YoloBackend,
{
    devices: Vec<AB::Device>,
    step: MultiDevicesTrainStep<YoloComponents<AB>>,
}

/// One step's result on every device: the loss items of the whole global batch and each device's gradients, moved
/// to the main device, in device order.
pub struct DeviceOutputs {
    pub item: TrainItem,
    pub grads: Vec<GradientsParams>,
}

impl<AB: AutodiffBackend + TrainBackend> DeviceSteps<AB>
where
    AB::InnerBackend: YoloBackend,
{
    /// Worker threads on `devices` (at least two; the first is the main device).
    pub fn new(devices: Vec<AB::Device>) -> Self {
        let step = MultiDevicesTrainStep::new(&devices);
        DeviceSteps { devices, step }
    }

    /// Trains `model` (on the main device) on `batch`: one shard per device (fewer on a last batch smaller than the
    /// device count), every device at once; the shards' gradients moved to the main device.
    pub fn step(&self, batch: &Batch, model: &YoloTrainModel<AB>) -> DeviceOutputs {
        let shards = batch.shards(self.devices.len());
        // exactly one iterator per worker (burn-train indexes them by worker); a device without a shard gets none
        let mut shards = shards.into_iter();
        let mut iters: Vec<Box<dyn DataLoaderIterator<Batch>>> =
            self.devices.iter().map(|_| Box::new(Shard(shards.next())) as Box<dyn DataLoaderIterator<Batch>>).collect();
        let (mut outs, _) = self.step.step(&mut iters, model);
        // workers answer in completion order: sum in device order so that a run is reproducible
        let position = |id| self.devices.iter().position(|d| d.to_id() == id).unwrap_or(usize::MAX);
        outs.sort_by_key(|o| position(o.device));
        // every worker left its BatchNorm running statistics in Burn's per-thread slots; average them into the
        // shared value now, while no worker runs (a worker of the next step reading the value before another has
        // averaged the slots would update from the statistics of two steps ago)
        let _ = model.model.valid();
        let main = &self.devices[0];
        let items: Vec<TrainItem> = outs.iter().map(|o| o.output.item.clone()).collect();
        let grads = outs.into_iter().map(|o| o.output.grads.to_device::<AB, _>(main, model)).collect();
        DeviceOutputs { item: TrainItem::merge(&items), grads }
    }
}

/// A device's part of one global batch as a one-item burn-train data-loader iterator.
struct Shard(Option<Batch>);

impl Iterator for Shard {
    type Item = Batch;
    fn next(&mut self) -> Option<Batch> {
        self.0.take()
    }
}

impl DataLoaderIterator<Batch> for Shard {
    fn progress(&self) -> Progress {
        Progress::new(usize::from(self.0.is_none()), 1)
    }
}
