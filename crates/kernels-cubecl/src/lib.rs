//! CubeCL kernels as Burn custom ops.
//!
//! Each op is a backend extension trait implemented for `CubeBackend` (CubeCL kernels, any runtime),
//! `Fusion<B>` (custom op in the fusion stream), `Autodiff<B, C>` (backward step) and, through the
//! trait's default methods, any other backend (plain tensor ops: the reference). See the crate README.

pub mod attention;
#[doc(hidden)]
pub mod autodiff_util;
pub mod bbox_loss;
pub mod bce;
pub mod bce_onehot;
pub mod ciou;
pub mod cube_util;
pub mod decode;
pub mod det_loss;
mod dtype;
#[doc(hidden)]
pub mod fusion_util;
pub mod loss_items;
pub mod psa;
#[cfg(feature = "wgpu")]
pub mod snapshot;
pub mod tal;
pub mod topk;

#[cfg(test)]
mod test_util;
