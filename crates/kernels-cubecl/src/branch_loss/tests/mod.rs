//! Tests of the loss-branch kernels: the fused anchor pass against the references of the ops it fuses, the
//! items reduction against [`super::items_from_sums`]. The op as a whole is tested end to end against
//! ultralytics in the workspace's integration tests (`tests/it/loss_parity.rs`).

mod det_loss;
mod loss_items;
