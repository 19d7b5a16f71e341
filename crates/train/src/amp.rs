//! Mixed-precision training (`yolo26 train --amp`, ultralytics `amp=True`): PyTorch's `torch.autocast` +
//! `torch.amp.GradScaler` as ultralytics' `BaseTrainer` uses them.
//!
//! What runs in which dtype:
//! - parameters, optimizer state, EMA and checkpoints stay f32 (the master weights);
//! - the images are cast to f16 once, every convolution casts its f32 weight (and bias) to f16 where it is used
//!   (`yolo26_model::nn::conv::conv2d_module_nhwc`; Burn's autodiff casts the gradient back to f32 on the way to
//!   the parameter) and accumulates in f32 (`ConvMath::Fast`: tensor cores where the conv op takes them —
//!   `groups = 1` with channel counts that are multiples of 8 — its plain f32-accumulating kernels elsewhere);
//! - BatchNorm (+ SiLU) computes its statistics and arithmetic in f32 and returns f16 (`kernels_cubecl::norm`),
//!   running statistics f32;
//! - the two heads' outputs are cast to f32 before `E2ELoss` (assignment, CIoU, BCE in f32).
//!
//! Loss scaling ([`GradScaler`]): the loss is multiplied by `scale` before the backward so that small f16
//! gradients do not flush to zero; the optimizer step divides the gradients by it again (folded into the
//! clipping factor: `scale` is a power of two, so that is exact), and skips the step when a gradient is
//! infinite or NaN, halving the scale — torch's `scaler.unscale_` / `clip_grad_norm_` / `scaler.step` /
//! `scaler.update()` in `BaseTrainer.optimizer_step`. The EMA is updated after every optimizer step, skipped or
//! not, as ultralytics does.

use std::sync::{Arc, Mutex, MutexGuard};

/// torch `torch.amp.GradScaler("cuda")` with its defaults: `init_scale = 2¹⁶`, `growth_factor = 2`,
/// `backoff_factor = 0.5`, `growth_interval = 2000`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GradScaler {
    /// The factor the loss is multiplied by before the backward.
    pub scale: f64,
    /// Optimizer steps without an infinite gradient since the scale last changed (torch `_growth_tracker`).
    pub growth_tracker: u32,
}

impl Default for GradScaler {
    fn default() -> Self {
        GradScaler { scale: Self::INIT_SCALE, growth_tracker: 0 }
    }
}

impl GradScaler {
    pub const INIT_SCALE: f64 = 65536.0;
    pub const GROWTH_FACTOR: f64 = 2.0;
    pub const BACKOFF_FACTOR: f64 = 0.5;
    pub const GROWTH_INTERVAL: u32 = 2000;

    /// torch `GradScaler.update()` (`_amp_update_scale_`) after an optimizer step that found an infinite or NaN
    /// gradient (`found_inf`, the step was skipped) or not.
    pub fn update(&mut self, found_inf: bool) {
        if found_inf {
            self.scale *= Self::BACKOFF_FACTOR;
            self.growth_tracker = 0;
        } else {
            self.growth_tracker += 1;
            if self.growth_tracker == Self::GROWTH_INTERVAL {
                self.scale *= Self::GROWTH_FACTOR;
                self.growth_tracker = 0;
            }
        }
    }
}

/// A run's loss scaler, shared by the train step (which scales the loss) and the optimizer (which unscales,
/// skips and updates). Clones share the state.
#[derive(Clone, Debug, Default)]
pub struct SharedScaler {
    inner: Arc<Mutex<GradScaler>>,
}

impl SharedScaler {
    pub fn new(scaler: GradScaler) -> Self {
        SharedScaler { inner: Arc::new(Mutex::new(scaler)) }
    }

    /// The scaler (a poisoned lock still gives it: it is two numbers, read or overwritten whole).
    pub fn lock(&self) -> MutexGuard<'_, GradScaler> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current scale.
    pub fn scale(&self) -> f64 {
        self.lock().scale
    }

    /// A copy of the state (for the checkpoint).
    pub fn get(&self) -> GradScaler {
        *self.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scale trajectory of torch 2.15's `GradScaler` (CUDA, defaults) for a sequence of steps with and
    /// without infinite gradients: `tests/fixtures/train/grad_scaler.json`, written by
    /// `tests/fixtures/train/gen_grad_scaler.py` (it runs torch's own `_amp_update_scale_`).
    #[test]
    fn grad_scaler_follows_torch() {
        let text = include_str!("../../../tests/fixtures/train/grad_scaler.json");
        let fx: serde_json::Value = serde_json::from_str(text).unwrap();
        let found: Vec<bool> = fx["found_inf"].as_array().unwrap().iter().map(|v| v.as_bool().unwrap()).collect();
        let scales: Vec<f64> = fx["scale_after"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        let trackers: Vec<u64> = fx["tracker_after"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        // the sequence backs off (twice in a row too) and grows
        assert!(found.len() > 4000 && found.windows(2).any(|w| w[0] && w[1]));
        assert!(scales.windows(2).any(|w| w[1] > w[0]));
        let mut s = GradScaler::default();
        assert_eq!(s.scale, fx["init_scale"].as_f64().unwrap());
        for (i, f) in found.iter().enumerate() {
            s.update(*f);
            assert_eq!((s.scale, s.growth_tracker as u64), (scales[i], trackers[i]), "step {i}");
        }
    }
}
