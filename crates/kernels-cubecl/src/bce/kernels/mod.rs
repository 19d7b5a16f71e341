//! CubeCL kernels of BCE-with-logits: elementwise over `N` contiguous values, one unit per element,
//! f32 arithmetic whatever the storage dtype.

pub mod backward;
pub mod forward;

/// Units per cube (1-D grid).
pub(crate) const UNITS: u32 = 256;

/// One representative specialisation of each kernel (f32 storage) for the source snapshots of
/// [`crate::snapshot`] (defined, never launched).
#[cfg(feature = "wgpu")]
pub(crate) fn snapshot() -> Vec<(&'static str, cubecl::prelude::KernelDefinition)> {
    use crate::snapshot::{kernel_def, F32, R, S, T};
    vec![
        kernel_def!("bce_forward_f32", forward::bce_fwd_kernel::BceFwdKernel<R>, units = UNITS, [T, T, T, S, F32]),
        kernel_def!("bce_backward_f32", backward::bce_bwd_kernel::BceBwdKernel<R>, units = UNITS, [T, T, T, T, S, F32]),
    ]
}
