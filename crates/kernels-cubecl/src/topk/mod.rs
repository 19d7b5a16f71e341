//! Row-wise top-k on the device: the `k` largest values of each row of a `[rows, n]` tensor, sorted in
//! descending order, with their column indices (ties: smaller index first).
//!
//! ultralytics / torch equivalent: `torch.topk(x, k, dim=-1, largest=True, sorted=True)`.
//!
//! Why a kernel: Burn 0.21's `argtopk` on CubeCL backends is a reduction whose accumulator holds `k`
//! entries per unit, fully unrolled at compile time — with YOLO's `k = 300` its kernel takes minutes to
//! compile (NVRTC) and one cube does all the work. Here one pass sorts chunks of up to 2048 entries per
//! cube (bitonic network in shared memory) and keeps each chunk's top `k`; passes repeat until one chunk
//! is left (`kernel.rs`). `k` up to 1024 runs on the kernel; larger `k` falls back to a sort.
//!
//! - [`topk_rows`]: the `Tensor`-level function. Under `Autodiff` the values are differentiable (a gather
//!   of the input at the returned indices).
//! - [`TopKBackend`]: the backend extension trait, implemented for `CubeBackend` (kernel), `Fusion<B>`
//!   (custom fusion op), `Autodiff<B, C>` and `Flex` (reference: a full sort, the trait's default method).

mod autodiff;
pub(crate) mod cube;
mod fusion;
pub(crate) mod kernels;
mod reference;

#[cfg(test)]
mod tests;

pub use reference::reference_topk;

use burn::tensor::{
    backend::Backend,
    get_device_settings,
    ops::{FloatTensor, IntTensor},
    Int, IntDType, Tensor, TensorPrimitive,
};

/// Backend extension: row-wise top-k of a `[rows, n]` float tensor.
pub trait TopKBackend: Backend {
    /// `(values, indices)`, both `[rows, k]`, sorted by descending value; indices of dtype `int_dtype`.
    /// Requires `1 ≤ k ≤ n`.
    fn topk_rows(x: FloatTensor<Self>, k: usize, int_dtype: IntDType) -> (FloatTensor<Self>, IntTensor<Self>) {
        reference_topk::<Self>(x, k, int_dtype)
    }
}

impl TopKBackend for burn::backend::Flex {}

/// The `k` largest values of each row of `x: [rows, n]` in descending order and their column indices,
/// `([rows, k], [rows, k])`. Panics unless `1 ≤ k ≤ n`. On CubeCL backends this runs the chunked bitonic
/// kernel (no host round trip); the values are differentiable under `Autodiff`.
pub fn topk_rows<B: TopKBackend>(x: Tensor<B, 2>, k: usize) -> (Tensor<B, 2>, Tensor<B, 2, Int>) {
    let [_, n] = x.dims();
    assert!(k >= 1 && k <= n, "topk_rows: k = {k} must be in 1..={n} (the row length)");
    let int_dtype = get_device_settings::<B>(&x.device()).int_dtype;
    let (v, i) = B::topk_rows(x.into_primitive().tensor(), k, int_dtype);
    (Tensor::from_primitive(TensorPrimitive::Float(v)), Tensor::from_primitive(i))
}
