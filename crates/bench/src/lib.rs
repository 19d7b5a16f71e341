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

/// The loss benchmarks' inputs: fixed pseudo-random ground truth and raw head outputs.
pub mod loss_inputs {
    use burn::backend::Autodiff;
    use burn::prelude::*;
    use burn::tensor::{Distribution, TensorData};
    use yolo26_model::nn::head::HeadOutput;
    use yolo26_model::postprocess::Anchors;
    use yolo26_train::GtBoxes;

    /// xorshift64*: deterministic host values for the ground truth.
    pub struct Rng(pub u64);
    impl Rng {
        pub fn uniform(&mut self) -> f32 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32
        }
    }

    /// `g` boxes per image, sides 8–320 px, inside the image; random classes.
    pub fn ground_truth<B: Backend>(b: usize, g: usize, imgsz: usize, nc: usize, dev: &B::Device) -> GtBoxes<B> {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let s = imgsz as f32;
        let (mut boxes, mut labels) = (Vec::with_capacity(b * g * 4), Vec::with_capacity(b * g));
        for _ in 0..b * g {
            let (w, h) = (8.0 + 312.0 * rng.uniform(), 8.0 + 312.0 * rng.uniform());
            let (x, y) = (rng.uniform() * (s - w), rng.uniform() * (s - h));
            boxes.extend([x, y, x + w, y + h]);
            labels.push(((rng.uniform() * nc as f32) as i64).min(nc as i64 - 1));
        }
        GtBoxes {
            bboxes: Tensor::from_data(TensorData::new(boxes, [b, g, 4]), dev),
            labels: Tensor::from_data(TensorData::new(labels, [b, g]), dev),
            mask: Tensor::ones([b, g], dev),
        }
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
