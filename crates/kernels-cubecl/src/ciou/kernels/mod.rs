//! CubeCL kernels of the CIoU loss: one unit per box (8 coordinates in, 1 loss + alpha or 8 gradients
//! out), f32 arithmetic whatever the storage dtype. All tensors contiguous: `pred`, `target`, `d_pred`,
//! `d_target` `[M, 4]`, `loss`, `d_loss` `[M]` (dtype `F`), `alpha` `[M]` f32.

pub mod backward;
pub mod forward;

/// Units per cube (1-D grid over the boxes).
pub(crate) const UNITS: u32 = 256;

/// `eps` of ultralytics' `bbox_iou` (as f32, the kernels' arithmetic type).
pub(crate) const EPS: f32 = super::CIOU_EPS;

/// `4 / π²` in f32.
pub(crate) const V_SCALE: f32 = 0.405_284_73;

/// `2 · 4 / π²` in f32 (the derivative of `v` w.r.t. the arctangent difference, over that difference).
pub(crate) const TWO_V_SCALE: f32 = 0.810_569_46;

/// One representative specialisation of each kernel (f32 storage) for the source snapshots of
/// [`crate::snapshot`] (defined, never launched).
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, R, S, T};
    vec![
        kernel_def!(
            "ciou_forward_f32",
            forward::ciou_fwd_kernel::CiouFwdKernel<R>,
            units = UNITS,
            [T, T, T, T, S, F32]
        ),
        kernel_def!(
            "ciou_backward_f32",
            backward::ciou_bwd_kernel::CiouBwdKernel<R>,
            units = UNITS,
            [T, T, T, T, T, T, S, F32]
        ),
    ]
}
