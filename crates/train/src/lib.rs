//! YOLO26 training: the loop ([`trainer`]: ultralytics' schedule ([`schedule`]), optimizers ([`optim`]), EMA
//! ([`ema`]), checkpoints and `results.csv`), the training forward ([`step`]), the task-aligned assigner ([`assigner`]) and the detection losses ([`loss`]), built
//! from the fused CubeCL ops of `kernels-cubecl` (box decode, assignment, box loss, one-hot BCE); one loss branch
//! runs as a single op (`kernels_cubecl::branch_loss`); on every backend and under Autodiff ([`TrainBackend`]); and validation
//! with ultralytics' validator semantics ([`val`]).
pub mod amp;
pub mod assigner;
mod backend;
pub mod ema;
pub mod learner;
pub mod loss;
pub mod optim;
pub mod params;
pub mod schedule;
pub mod step;
pub mod trainer;
pub mod val;

pub use assigner::{Assignment, GtBoxes, TaskAlignedAssigner};
pub use backend::TrainBackend;
pub use loss::{prog_loss_o2m, DetectionLoss, E2ELoss, E2ELossOutput, LossGains, LossTerms};
