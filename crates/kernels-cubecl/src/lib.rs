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
pub mod branch_loss;
pub mod ciou;
pub(crate) mod cube_util;
pub mod decode;
pub(crate) mod det_loss;
mod dtype;
#[doc(hidden)]
pub mod fusion_util;
pub(crate) mod loss_items;
pub mod psa;
#[cfg(feature = "wgpu")]
#[doc(hidden)]
pub mod snapshot;
pub mod tal;
pub mod topk;

#[cfg(test)]
mod test_util;

/// Internals the benchmarks time one by one (raw kernel launches, the `CubeBackend` paths); not an API.
#[doc(hidden)]
pub mod bench_internals {
    pub use crate::attention::kernels::{forward_cmma, forward_mma};
    pub use crate::cube_util::{empty, tight_as};
    pub use crate::decode::cube::forward as decode_forward;
    pub use crate::decode::kernels::forward::launch_decode_forward;
    pub use crate::tal::cube::assign;
}
