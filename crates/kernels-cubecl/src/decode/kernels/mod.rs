//! CubeCL kernels of the detect-decode op: one unit per `(batch, anchor)` handles the 4 channels.
//! Tensors are contiguous: `dist`/`boxes`/`d_dist`/`d_boxes` `[B, 4, A]` (dtype `F`, f32 arithmetic),
//! `anchors` `[3, A]` f32.

pub mod backward;
pub mod forward;

/// Units per cube (1-D grid over `B·A`).
pub(crate) const UNITS: u32 = 256;
