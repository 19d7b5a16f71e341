//! CubeCL kernels of BCE-with-logits: elementwise over `N` contiguous values, one unit per element,
//! f32 arithmetic whatever the storage dtype.

pub mod backward;
pub mod forward;

/// Units per cube (1-D grid).
pub(crate) const UNITS: u32 = 256;
