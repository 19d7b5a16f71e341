//! CubeCL kernels as Burn custom ops, with backward passes.
//!
//! Each op is a backend extension trait (`…Backend`) whose default methods are the reference in Burn tensor
//! ops (so `Flex` and any other backend run it as is), implemented for `CubeBackend` (CubeCL kernels, any
//! runtime), `Fusion<B>` (a custom op in the fusion stream) and `Autodiff<B, C>` (a backward step), plus a
//! `Tensor`-level function that is what a model calls. Every op folder has the same shape:
//!
//! | file | role |
//! |---|---|
//! | `mod.rs` | the public function(s) and the backend trait (default bodies = the reference) |
//! | `reference.rs` | the reference in tensor ops |
//! | `kernels.rs` or `kernels/` | the `#[cube]` kernels, their launchers and their snapshot list |
//! | `cube.rs`, `fusion.rs`, `autodiff.rs` | the trait for `CubeBackend`, `Fusion<B>`, `Autodiff<B, C>` |
//! | `tests.rs` or `tests/` | reference vs f64, kernels vs reference (poisoned outputs), gradients |
//!
//! See the crate README for how to use the ops in a Burn model and how to add one.
#![warn(missing_docs)]

pub mod attention;
pub mod autodiff_util;
pub mod bbox_loss;
pub mod bce;
pub mod bce_onehot;
pub mod branch_loss;
pub mod ciou;
pub mod conv;
pub(crate) mod cube_util;
pub mod decode;
mod flex_buf;
pub mod fusion_util;
pub mod nhwc;
pub mod norm;
pub mod psa;
#[cfg(feature = "wgpu")]
#[doc(hidden)]
pub mod snapshot;
pub mod tal;
mod tensor_util;
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
