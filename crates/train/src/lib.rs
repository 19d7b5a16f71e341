//! YOLO26 training. So far: the task-aligned assigner ([`assigner`]) and the detection losses ([`loss`]) with
//! their element-wise building blocks ([`ops`]), as tensor ops that run on every backend and under Autodiff.
pub mod assigner;
pub mod loss;
pub mod ops;

pub use assigner::{Assignment, GtBoxes, TaskAlignedAssigner};
pub use loss::{prog_loss_o2m, DetectionLoss, E2ELoss, E2ELossOutput, LossGains, LossTerms};
