//! YOLO26 training. So far: the task-aligned assigner ([`assigner`]) and the detection losses ([`loss`]), batched
//! tensor code around the fused CubeCL ops of `kernels-cubecl` (box decode, CIoU, BCE), on every backend and
//! under Autodiff ([`TrainBackend`]).
pub mod assigner;
mod backend;
pub mod loss;

pub use assigner::{Assignment, GtBoxes, TaskAlignedAssigner};
pub use backend::TrainBackend;
pub use loss::{prog_loss_o2m, DetectionLoss, E2ELoss, E2ELossOutput, LossGains, LossTerms};
