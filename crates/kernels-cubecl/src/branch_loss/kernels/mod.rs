//! The kernels of the loss-branch op on `CubeBackend` (besides those of the ops it composes: decode inside
//! the assigner's metrics, [`crate::tal`]): the fused anchor pass ([`det_loss`]: box terms + one-hot BCE per
//! anchor, forward and backward) and the final reduction into the loss items ([`loss_items`]).

pub mod det_loss;
pub mod loss_items;

/// One representative specialisation of each kernel (f32 storage) for the source snapshots of
/// [`crate::snapshot`] (defined, never launched).
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, I32, R, S, T};
    vec![
        kernel_def!(
            "loss_items_forward_f32",
            loss_items::loss_items_fwd_kernel::LossItemsFwdKernel<R>,
            units = loss_items::UNITS,
            [T, T, T, T, T, T, S, S, S, S, S, S, loss_items::UNITS, F32]
        ),
        kernel_def!(
            "det_loss_forward_f32",
            det_loss::det_loss_fwd_kernel::DetLossFwdKernel<R>,
            units = det_loss::UNITS,
            [T, T, T, T, T, T, T, T, T, S, S, S, S, S, det_loss::UNITS, [F32, I32, I32]]
        ),
        kernel_def!(
            "det_loss_backward_f32",
            det_loss::det_loss_bwd_kernel::DetLossBwdKernel<R>,
            units = det_loss::UNITS,
            [T, T, T, T, T, T, T, T, T, T, T, S, S, S, S, S, S, S, S, S, [F32, I32, I32]]
        ),
    ]
}
