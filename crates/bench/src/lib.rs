//! Shared pieces of the benchmark binaries: timing (median of synchronised runs) and table rows.
//! Speed is measured on the GPU machine with these binaries, never in tests; the results and the exact
//! commands are recorded in `docs/BENCHMARKS.md`.

use std::time::{Duration, Instant};

/// Runs `f` (which must end with a device synchronisation) `warmup` times, then until `budget` has passed
/// (at least `min_iters`, at most `max_iters` runs) and returns the median duration in microseconds.
pub fn median_us(mut f: impl FnMut(), warmup: usize, min_iters: usize, max_iters: usize, budget: Duration) -> f64 {
    for _ in 0..warmup {
        f();
    }
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < min_iters || (times.len() < max_iters && start.elapsed() < budget) {
        let t = Instant::now();
        f();
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// `flops / µs` in TFLOP/s.
pub fn tflops(flops: f64, us: f64) -> f64 {
    flops / us * 1e-6
}
