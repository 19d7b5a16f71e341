//! Shared pieces of the benchmark binaries: timing (median of synchronised runs) and table rows.
//! Speed is measured on the GPU machine with these binaries, never in tests; the results and the exact
//! commands are recorded in `docs/BENCHMARKS.md`.

use std::time::{Duration, Instant};

pub mod cpu_usage;

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

/// The loss benchmarks' inputs: fixed pseudo-random ground truth and raw head outputs.
pub mod loss_inputs {
    use burn::backend::Autodiff;
    use burn::prelude::*;
    use burn::tensor::Distribution;
    use yolo26_model::nn::head::HeadOutput;
    use yolo26_model::postprocess::Anchors;
    use yolo26_train::GtBoxes;

    /// `g` boxes per image, sides 8–320 px, inside the image; random classes
    /// ([`yolo26_train::step::random_targets`]).
    pub fn ground_truth<B: Backend>(b: usize, g: usize, imgsz: usize, nc: usize, dev: &B::Device) -> GtBoxes<B> {
        yolo26_train::step::random_targets(b, g, imgsz, nc, (8.0, 320.0), dev)
    }

    /// Raw head outputs as `Detect` returns them: LTRB distances in grid units (0–6) and class logits.
    pub fn head<B: Backend>(b: usize, nc: usize, a: usize, dev: &B::Device) -> HeadOutput<B> {
        HeadOutput {
            boxes: Tensor::random([b, 4, a], Distribution::Uniform(0.0, 6.0), dev),
            scores: Tensor::random([b, nc, a], Distribution::Normal(-4.0, 2.0), dev),
        }
    }

    /// [`autodiff_inputs`]' result: anchors, ground truth and the two heads on `Autodiff<B>`.
    pub type AutodiffInputs<B> = (Anchors<Autodiff<B>>, GtBoxes<Autodiff<B>>, [HeadOutput<Autodiff<B>>; 2]);

    /// The same inputs on `Autodiff<B>`: anchors and ground truth as constants, the two heads as leaves that
    /// require a gradient.
    pub fn autodiff_inputs<B: Backend>(
        anchors: &Anchors<B>,
        gt: &GtBoxes<B>,
        heads: [&HeadOutput<B>; 2],
    ) -> AutodiffInputs<B> {
        let anchors = Anchors {
            points: Tensor::from_inner(anchors.points.clone()),
            strides: Tensor::from_inner(anchors.strides.clone()),
            grid: Tensor::from_inner(anchors.grid.clone()),
            feat_shapes: anchors.feat_shapes.clone(),
        };
        let gt = GtBoxes {
            bboxes: Tensor::from_inner(gt.bboxes.clone()),
            labels: Tensor::from_inner(gt.labels.clone()),
            mask: Tensor::from_inner(gt.mask.clone()),
        };
        let leaf = |h: &HeadOutput<B>| HeadOutput {
            boxes: Tensor::from_inner(h.boxes.clone()).require_grad(),
            scores: Tensor::from_inner(h.scores.clone()).require_grad(),
        };
        (anchors, gt, heads.map(leaf))
    }
}
