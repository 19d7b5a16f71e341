//! [`YoloBackend`]: the Burn backends the model and its post-processing run on — any [`Backend`] that also
//! implements the custom ops of `kernels-cubecl` it uses. Flex, NdArray-free CPU (Flex), `Wgpu`, `Cuda`,
//! `CubeBackend<..>` and `Autodiff<..>` of any of them all qualify (blanket impl below).
use burn::tensor::backend::Backend;
use kernels_cubecl::topk::TopKBackend;

/// A backend with the custom ops the model uses (device top-k for end-to-end decoding).
pub trait YoloBackend: Backend + TopKBackend {}

impl<B: Backend + TopKBackend> YoloBackend for B {}
