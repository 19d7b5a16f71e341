//! CubeCL kernels of the detect-decode op: one unit per `(batch, anchor)` handles the 4 channels.
//! Tensors are contiguous: `dist`/`boxes`/`d_dist`/`d_boxes` `[B, 4, A]` (dtype `F`, f32 arithmetic),
//! `anchors` `[3, A]` f32.

pub mod backward;
pub mod forward;

/// Units per cube (1-D grid over `B·A`).
pub(crate) const UNITS: u32 = 256;

/// One representative specialisation of each kernel (f32 storage) for the source snapshots of
/// [`crate::snapshot`] (defined, never launched).
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, R, S, T};
    vec![
        kernel_def!(
            "decode_forward_xyxy_f32",
            forward::decode_fwd_kernel::DecodeFwdKernel<R>,
            units = UNITS,
            [T, T, T, S, S, false, F32]
        ),
        kernel_def!(
            "decode_backward_xyxy_f32",
            backward::decode_bwd_kernel::DecodeBwdKernel<R>,
            units = UNITS,
            [T, T, T, S, S, false, F32]
        ),
        kernel_def!(
            "decode_forward_xywh_f32",
            forward::decode_fwd_kernel::DecodeFwdKernel<R>,
            units = UNITS,
            [T, T, T, S, S, true, F32]
        ),
        kernel_def!(
            "decode_backward_xywh_f32",
            backward::decode_bwd_kernel::DecodeBwdKernel<R>,
            units = UNITS,
            [T, T, T, S, S, true, F32]
        ),
    ]
}
