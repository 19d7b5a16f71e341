//! [`YoloBackend`]: the Burn backends the model and its post-processing run on — any [`Backend`] that also
//! implements the custom ops of `kernels-cubecl` it uses: the NHWC convolution
//! ([`kernels_cubecl::conv::Conv2dBackend`], every conv of the network), the PSA attention op
//! ([`kernels_cubecl::psa::PsaBackend`], used by `nn::attention::Attention`), the fused box decode
//! ([`kernels_cubecl::decode::DetectDecodeBackend`]) and the device top-k
//! ([`kernels_cubecl::topk::TopKBackend`]), both used by the post-processing, and the NHWC layout ops
//! ([`kernels_cubecl::nhwc::NhwcBackend`]: SPPF's max-pools, the channel concatenations, the 2× upsample). Implemented (blanket impl) for
//! `Flex`, `Wgpu`, `Cuda`, `CubeBackend<R, ..>`, `Fusion<B>` and `Autodiff<B>` of those.
use burn::tensor::backend::Backend;
use kernels_cubecl::conv::Conv2dBackend;
use kernels_cubecl::decode::DetectDecodeBackend;
use kernels_cubecl::nhwc::NhwcBackend;
use kernels_cubecl::norm::NormBackend;
use kernels_cubecl::psa::PsaBackend;
use kernels_cubecl::topk::TopKBackend;

/// A backend with the custom ops the model uses.
pub trait YoloBackend:
    Backend + Conv2dBackend + PsaBackend + TopKBackend + DetectDecodeBackend + NhwcBackend + NormBackend
{
}

impl<B: Backend + Conv2dBackend + PsaBackend + TopKBackend + DetectDecodeBackend + NhwcBackend + NormBackend>
    YoloBackend for B
{
}
