//! The ultralytics 8.4.190 training schedule (`engine/trainer.py`): the per-epoch lr factor `lf` (linear or
//! `one_cycle` cosine), the warmup that ramps each parameter group's lr and momentum and the gradient
//! accumulation per iteration, the nominal-batch arithmetic (`accumulate`, scaled weight decay) and the EMA decay.
//!
//! Everything is f64 and follows ultralytics' expressions term by term (Python `round` is round-half-even, as is
//! NumPy's `.round()`; `np.interp` is `slope·(x − x0) + y0` with `x = x1` returning `y1` exactly), so the values
//! are bit-equal to ultralytics' (tested against `tests/fixtures/train/gen_schedule_reference.py`).

/// Settings the schedule depends on (ultralytics `args` of the same names).
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleConfig {
    pub epochs: usize,
    /// Batches per epoch (`nb = len(train_loader)`).
    pub batches_per_epoch: usize,
    pub batch: usize,
    /// Nominal batch size (`nbs`, 64).
    pub nbs: usize,
    pub lrf: f64,
    pub cos_lr: bool,
    pub warmup_epochs: f64,
    pub warmup_momentum: f64,
    pub warmup_bias_lr: f64,
    /// `args.momentum`: where the warmup ends every group's momentum.
    pub momentum: f64,
    pub weight_decay: f64,
}

/// Python's `round(x)` / NumPy's `.round()`: to the nearest integer, ties to even.
pub fn round_half_even(x: f64) -> f64 {
    x.round_ties_even()
}

/// `np.interp(x, [x0, x1], [y0, y1])` for `x0 <= x <= x1`.
pub fn interp(x: f64, [x0, x1]: [f64; 2], [y0, y1]: [f64; 2]) -> f64 {
    if x >= x1 {
        return y1;
    }
    if x <= x0 {
        return y0;
    }
    let slope = (y1 - y0) / (x1 - x0);
    slope * (x - x0) + y0
}

/// The schedule of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub cfg: ScheduleConfig,
    /// Warmup iterations (`_get_warmup_iterations`): `round(min(warmup_epochs, max(epochs − 1, 0))·nb)`, 0 when
    /// that is not positive.
    pub warmup_iters: usize,
    /// Nominal accumulation after the warmup (`acc0`): `max(round(nbs / batch), 1)`, capped at `nb·epochs`.
    pub accumulate: usize,
    /// `weight_decay · batch · accumulate / nbs` (with the uncapped `accumulate`, as ultralytics computes it).
    pub weight_decay: f64,
}

impl Schedule {
    pub fn new(cfg: ScheduleConfig) -> Self {
        let acc = round_half_even(cfg.nbs as f64 / cfg.batch as f64).max(1.0) as usize;
        let weight_decay = cfg.weight_decay * cfg.batch as f64 * acc as f64 / cfg.nbs as f64;
        let accumulate = acc.min(cfg.batches_per_epoch * cfg.epochs).max(1);
        let we = cfg.warmup_epochs.min((cfg.epochs as f64 - 1.0).max(0.0));
        let warmup_iters = if we > 0.0 { round_half_even(we * cfg.batches_per_epoch as f64) as usize } else { 0 };
        Schedule { cfg, warmup_iters, accumulate, weight_decay }
    }

    /// The lr factor of `epoch` (ultralytics `self.lf`): linear `max(1 − e/E, 0)·(1 − lrf) + lrf`, or with
    /// `cos_lr` `one_cycle(1, lrf, E)`: `max((1 − cos(e·π/E))/2, 0)·(lrf − 1) + 1`.
    pub fn lf(&self, epoch: usize) -> f64 {
        let (e, n, lrf) = (epoch as f64, self.cfg.epochs as f64, self.cfg.lrf);
        if self.cfg.cos_lr {
            ((1.0 - (e * std::f64::consts::PI / n).cos()) / 2.0).max(0.0) * (lrf - 1.0) + 1.0
        } else {
            (1.0 - e / n).max(0.0) * (1.0 - lrf) + lrf
        }
    }

    /// Whether iteration `ni` (global, `i + nb·epoch`) is in the warmup (`nw and ni <= nw`).
    pub fn in_warmup(&self, ni: usize) -> bool {
        self.warmup_iters > 0 && ni <= self.warmup_iters
    }

    /// Gradient accumulation set at warmup iteration `ni`: `max(1, int(np.interp(ni, [0, nw], [1, acc0]).round()))`.
    pub fn warmup_accumulate(&self, ni: usize) -> usize {
        let nw = self.warmup_iters as f64;
        let v = interp(ni as f64, [0.0, nw], [1.0, self.accumulate as f64]);
        (round_half_even(v) as usize).max(1)
    }

    /// A group's lr at warmup iteration `ni` of `epoch`: from `warmup_bias_lr` (bias group) or 0 to
    /// `initial_lr·lf(epoch)`.
    pub fn warmup_lr(&self, ni: usize, epoch: usize, initial_lr: f64, bias: bool) -> f64 {
        let start = if bias { self.cfg.warmup_bias_lr } else { 0.0 };
        interp(ni as f64, [0.0, self.warmup_iters as f64], [start, initial_lr * self.lf(epoch)])
    }

    /// Momentum at warmup iteration `ni`: `warmup_momentum → momentum`.
    pub fn warmup_momentum(&self, ni: usize) -> f64 {
        interp(ni as f64, [0.0, self.warmup_iters as f64], [self.cfg.warmup_momentum, self.cfg.momentum])
    }
}

/// ultralytics `ModelEMA` decay after `updates` updates: `decay·(1 − exp(−updates/tau))` (0.9999, 2000).
pub fn ema_decay(updates: u64) -> f64 {
    0.9999 * (1.0 - (-(updates as f64) / 2000.0).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_and_interp_follow_python() {
        assert_eq!(round_half_even(2.5), 2.0);
        assert_eq!(round_half_even(3.5), 4.0);
        assert_eq!(round_half_even(0.5), 0.0);
        assert_eq!(interp(5.0, [0.0, 5.0], [0.1, 0.3]), 0.3);
        assert_eq!(interp(0.0, [0.0, 5.0], [0.1, 0.3]), 0.1);
    }
}
