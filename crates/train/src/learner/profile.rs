//! `yolo26 train --profile`: where a training step's time goes, per epoch. Each phase of the loop ends with a
//! device synchronisation (`Backend::sync`), so GPU work is charged to the phase that queued it; that removes the
//! overlap of host and device work, so a profiled epoch is slower than an unprofiled one (its images/s are not the
//! run's speed). No ultralytics equivalent (ultralytics has `profile=True` for ONNX/TensorRT export timings only).

use std::time::Instant;

use burn::prelude::*;

/// The phases of one iteration of the training loop, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the loader's next batch.
    Data,
    /// The batch's u8 images and its boxes sent to the device, the images converted to f32 there.
    Upload,
    /// The training forward (both heads) and `E2ELoss`.
    Forward,
    /// The backward and the loss items read back.
    Backward,
    /// Gradients moved into the accumulation map by parameter name.
    Grads,
    /// Clipping + the optimizer update (only on iterations that step).
    Optimizer,
    /// The EMA update (only on iterations that step).
    Ema,
    /// burn-train's event processor (metrics, renderer) and the batch plots.
    Log,
}

const PHASES: [(Phase, &str); 8] = [
    (Phase::Data, "data"),
    (Phase::Upload, "upload"),
    (Phase::Forward, "forward+loss"),
    (Phase::Backward, "backward"),
    (Phase::Grads, "grads"),
    (Phase::Optimizer, "optimizer"),
    (Phase::Ema, "ema"),
    (Phase::Log, "log"),
];

/// Per-phase wall time of the iterations of one epoch (nothing is measured when disabled).
pub struct StepProfile<B: Backend> {
    device: Option<B::Device>,
    last: Instant,
    total: [f64; 8],
    iterations: usize,
    steps: usize,
    images: usize,
}

impl<B: Backend> StepProfile<B> {
    /// A profile that synchronises `device` at every phase boundary, or a disabled one (`None`).
    pub fn new(device: Option<B::Device>) -> Self {
        StepProfile { device, last: Instant::now(), total: [0.0; 8], iterations: 0, steps: 0, images: 0 }
    }

    pub fn enabled(&self) -> bool {
        self.device.is_some()
    }

    /// Starts timing (the beginning of an iteration's wait for data).
    pub fn start(&mut self) {
        if let Some(d) = &self.device {
            let _ = B::sync(d);
            self.last = Instant::now();
        }
    }

    /// Ends `phase`: synchronises the device and charges the time since the previous mark to it.
    pub fn mark(&mut self, phase: Phase) {
        let Some(d) = &self.device else { return };
        let _ = B::sync(d);
        let now = Instant::now();
        let i = PHASES.iter().position(|(p, _)| *p == phase).unwrap_or(0);
        self.total[i] += (now - self.last).as_secs_f64();
        self.last = now;
    }

    /// Ends an iteration of `images` images (`stepped`: whether the optimizer ran).
    pub fn end_iteration(&mut self, images: usize, stepped: bool) {
        if self.enabled() {
            self.iterations += 1;
            self.images += images;
            self.steps += usize::from(stepped);
        }
    }

    /// The epoch's line (mean milliseconds per iteration of each phase, the optimizer and EMA per optimizer step),
    /// then a reset; `None` when disabled or nothing was timed.
    pub fn take_summary(&mut self, epoch: usize) -> Option<String> {
        if !self.enabled() || self.iterations == 0 {
            return None;
        }
        let (n, s) = (self.iterations as f64, self.steps.max(1) as f64);
        let all: f64 = self.total.iter().sum();
        let parts: Vec<String> = PHASES
            .iter()
            .zip(self.total)
            .map(|((p, name), t)| {
                let per = if matches!(p, Phase::Optimizer | Phase::Ema) { s } else { n };
                format!("{name} {:.1}", t / per * 1e3)
            })
            .collect();
        let line = format!(
            "profile epoch {epoch}: {} iterations ({} optimizer steps), {:.1} ms per iteration ({:.1} images/s \
             synchronised); ms: {} (optimizer and ema per optimizer step)",
            self.iterations,
            self.steps,
            all / n * 1e3,
            self.images as f64 / all.max(1e-9),
            parts.join(", ")
        );
        *self = StepProfile::new(self.device.take());
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::Flex;

    use super::*;

    /// Phases are charged in order; optimizer/EMA means are per optimizer step; disabled profiles say nothing.
    #[test]
    fn summary_names_every_phase() {
        let mut p = StepProfile::<Flex>::new(Some(Default::default()));
        for i in 0..4 {
            p.start();
            for ph in [
                Phase::Data,
                Phase::Upload,
                Phase::Forward,
                Phase::Backward,
                Phase::Grads,
                Phase::Optimizer,
                Phase::Ema,
                Phase::Log,
            ] {
                std::thread::sleep(std::time::Duration::from_millis(1));
                p.mark(ph);
            }
            p.end_iteration(8, i % 2 == 1);
        }
        let line = p.take_summary(3).unwrap();
        assert!(line.starts_with("profile epoch 3: 4 iterations (2 optimizer steps)"), "{line}");
        for name in ["data", "upload", "forward+loss", "backward", "grads", "optimizer", "ema", "log"] {
            assert!(line.contains(&format!("{name} ")), "{name} missing: {line}");
        }
        assert!(p.take_summary(4).is_none(), "reset after the summary");
        let mut off = StepProfile::<Flex>::new(None);
        off.start();
        off.mark(Phase::Data);
        off.end_iteration(8, true);
        assert!(off.take_summary(1).is_none());
    }
}
