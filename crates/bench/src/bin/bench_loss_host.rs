//! Where the host time of the YOLO26 loss goes on CUDA: each stage is issued `--reps` times back to back and
//! then synchronised once, so at a small batch (the GPU work is a few µs) the time per repetition is the cost
//! of issuing it — Burn's bookkeeping, CubeCL's allocation and launch work on its device thread — rather than
//! kernel time. Stages go from one allocation up to the whole `E2ELoss` forward+backward under `Autodiff`,
//! on `CubeBackend` (no fusion) and on Burn's default `Cuda` (fusion).
//!
//! ```text
//! bench-loss-host --batch 1          # the H200 run recorded in docs/BENCHMARKS.md
//! ```
#[cfg(feature = "cuda")]
mod cuda {
    use std::time::Duration;

    use burn::backend::Autodiff;
    use burn::prelude::*;
    use burn::tensor::{DType, Shape};
    use burn_cubecl::{tensor::CubeTensor, CubeBackend};
    use clap::Parser;
    use cubecl::cuda::CudaRuntime;
    use cubecl::server::MemoryLayoutDescriptor;
    use kernels_cubecl::bench_internals::assign;
    use kernels_cubecl::bench_internals::empty;
    use kernels_cubecl::bench_internals::launch_decode_forward;
    use kernels_cubecl::branch_loss::{branch_loss, BranchConfig};
    use kernels_cubecl::decode::BoxFormat;
    use yolo26_bench::loss_inputs::{autodiff_inputs, ground_truth, head};
    use yolo26_bench::median_us;
    use yolo26_model::postprocess::Anchors;
    use yolo26_train::{E2ELoss, LossGains, TrainBackend};

    type Cube = CubeBackend<CudaRuntime, f32, i32, u8>;

    #[derive(Parser)]
    pub struct Args {
        #[arg(long, default_value_t = 1)]
        batch: usize,
        #[arg(long, default_value_t = 640)]
        imgsz: usize,
        #[arg(long, default_value_t = 80)]
        classes: usize,
        #[arg(long, default_value_t = 8)]
        gt: usize,
        /// Repetitions issued before each synchronisation
        #[arg(long, default_value_t = 100)]
        reps: usize,
        /// Time budget per stage (seconds)
        #[arg(long, default_value_t = 0.5)]
        budget: f64,
    }

    fn prim<B: Backend, const D: usize>(t: Tensor<B, D>) -> B::FloatTensorPrimitive {
        t.into_primitive().tensor()
    }

    struct Stage<'a> {
        args: &'a Args,
    }

    impl Stage<'_> {
        /// µs per repetition of `f`, `reps` per synchronisation.
        fn time(&self, name: &str, launches: &str, mut f: impl FnMut(), mut sync: impl FnMut()) {
            let reps = self.args.reps;
            let us = median_us(
                || {
                    for _ in 0..reps {
                        f();
                    }
                    sync();
                },
                2,
                3,
                100,
                Duration::from_secs_f64(self.args.budget),
            );
            println!("| {name} | {launches} | {:.1} |", us / reps as f64);
        }
    }

    fn e2e_stages<B: TrainBackend>(st: &Stage, label: &str, dev: &B::Device)
    where
        Autodiff<B>: TrainBackend,
    {
        let args = st.args;
        let f = args.imgsz / 8;
        let feats = [[f, f], [f / 2, f / 2], [f / 4, f / 4]];
        let a: usize = feats.iter().map(|[h, w]| h * w).sum();
        let loss = E2ELoss::new(args.classes, 100, LossGains::default());
        let anchors = Anchors::<B>::new(&feats, dev);
        let gt = ground_truth::<B>(args.batch, args.gt, args.imgsz, args.classes, dev);
        let (o2m, o2o) = (head::<B>(args.batch, args.classes, a, dev), head::<B>(args.batch, args.classes, a, dev));
        let sync = || B::sync(dev).expect("sync");
        st.time(
            &format!("{label}: E2ELoss forward"),
            "",
            || {
                let _ = loss.forward(&o2m, &o2o, &anchors, &gt).total;
            },
            sync,
        );
        let (anchors_ad, gt_ad, [o2m_ad, o2o_ad]) = autodiff_inputs(&anchors, &gt, [&o2m, &o2o]);
        st.time(
            &format!("{label}: E2ELoss forward under Autodiff"),
            "",
            || {
                let _ = loss.forward(&o2m_ad, &o2o_ad, &anchors_ad, &gt_ad).total;
            },
            sync,
        );
        st.time(
            &format!("{label}: E2ELoss forward+backward under Autodiff"),
            "",
            || {
                let out = loss.forward(&o2m_ad, &o2o_ad, &anchors_ad, &gt_ad);
                let grads = out.total.backward();
                let _ = o2m_ad.boxes.grad(&grads).expect("gradient of the one2many boxes");
            },
            sync,
        );
    }

    pub fn main() {
        let args = Args::parse();
        let st = Stage { args: &args };
        let dev = burn::backend::cuda::CudaDevice::new(0);
        let (b, c) = (args.batch, args.classes);
        let f = args.imgsz / 8;
        let feats = [[f, f], [f / 2, f / 2], [f / 4, f / 4]];
        let a: usize = feats.iter().map(|[h, w]| h * w).sum();
        println!("batch {b}, {a} anchors, {c} classes, {} GT/image, {} repetitions per sync\n", args.gt, args.reps);
        println!("| stage | launches | µs per repetition |\n|---|---|---|");
        let sync = || Cube::sync(&dev).expect("sync");
        st.time("sync alone (per repetition: nothing)", "0", || {}, sync);

        let like: CubeTensor<CudaRuntime> = prim(Tensor::<Cube, 2>::ones([1, a], &dev));
        st.time(
            "one allocation [1, A] f32 (dropped)",
            "0",
            || {
                let _ = empty(&like, Shape::new([1, a]), DType::F32);
            },
            sync,
        );
        st.time(
            "four allocations, one call each",
            "0",
            || {
                for _ in 0..4 {
                    let _ = empty(&like, Shape::new([1, a]), DType::F32);
                }
            },
            sync,
        );
        st.time(
            "four allocations in one empty_tensors call",
            "0",
            || {
                let d = || MemoryLayoutDescriptor::contiguous(Shape::new([1, a]), 4);
                let _ = like.client.empty_tensors(vec![d(), d(), d(), d()]);
            },
            sync,
        );

        let anchors = Anchors::<Cube>::new(&feats, &dev);
        let hd = head::<Cube>(b, c, a, &dev);
        let gt = ground_truth::<Cube>(b, args.gt, args.imgsz, c, &dev);
        let dist = prim(hd.boxes.clone());
        let grid = kernels_cubecl::bench_internals::tight_as(prim(anchors.grid.clone()), DType::F32);
        let out = empty(&dist, dist.meta.shape().clone(), DType::F32);
        st.time(
            "detect-decode launch into a preallocated output (3 tensor args)",
            "1",
            || launch_decode_forward(&dist, &grid, &out, false),
            sync,
        );
        st.time(
            "detect-decode op (allocation + launch)",
            "1",
            || {
                let _ = kernels_cubecl::bench_internals::decode_forward(dist.clone(), grid.clone(), BoxFormat::Xyxy);
            },
            sync,
        );
        let px = kernels_cubecl::bench_internals::decode_forward(dist.clone(), grid.clone(), BoxFormat::Xyxy);
        let loss = E2ELoss::new(c, 100, LossGains::default());
        let tal = loss.one2many.assigner.config;
        let labels = gt.labels.clone().into_primitive();
        st.time(
            "assigner on decoded boxes (metrics, top-k, fused resolve + GT statistics + targets)",
            "3",
            || {
                let _ = assign(
                    prim(hd.scores.clone()),
                    px.clone(),
                    grid.clone(),
                    prim(gt.bboxes.clone()),
                    labels.clone(),
                    prim(gt.mask.clone()),
                    tal,
                    DType::I32,
                );
            },
            sync,
        );
        let s0 = yolo26_model::config::STRIDES[0] as f32;
        let cfg = BranchConfig { tal, image: [f as f32 * s0, f as f32 * s0], gains: [7.5, 0.5, 1.5], mix: 1.0 };
        st.time(
            "one loss branch (branch_loss on CubeBackend: assigner with inlined decode, anchor pass, items)",
            "5",
            || {
                let _ = branch_loss(
                    hd.boxes.clone(),
                    hd.scores.clone(),
                    anchors.grid.clone(),
                    gt.bboxes.clone(),
                    gt.labels.clone(),
                    gt.mask.clone(),
                    cfg,
                );
            },
            sync,
        );
        e2e_stages::<Cube>(&st, "CubeBackend", &dev);
        e2e_stages::<burn::backend::Cuda>(&st, "Cuda (fusion)", &dev);
    }
}

fn main() {
    #[cfg(feature = "cuda")]
    cuda::main();
    #[cfg(not(feature = "cuda"))]
    {
        eprintln!("bench-loss-host: built without the cuda feature");
        std::process::exit(2);
    }
}
