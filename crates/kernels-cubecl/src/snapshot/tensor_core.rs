//! CUDA C++ of the tensor-core FA2 kernels (`forward_cmma`, `forward_mma`, `backward_mma`): CUDA only
//! (`wmma`, `mma.sync`, `ldmatrix` have no WGSL form here), so they are not in [`super::kernels`].
use cubecl::prelude::*;
use cubecl::wgpu::WgpuRuntime;

use super::{client, cuda, normalise_cuda};

/// CUDA C++ of the tensor-core FA2 forward (`forward_cmma`, f16, Dk = 32, Dv = 64, 4 planes, 64-key tiles:
/// the PSA shape). CUDA only: WGSL has no `cmma` here, so this kernel is not in [`super::kernels`].
pub fn fa2_forward_cmma_cuda() -> String {
    use crate::attention::kernels::forward_cmma;
    let f16_ty: StorageType = half::f16::as_type_native_unchecked().storage_type();
    let t = || TensorCompilationArg { inplace: None };
    let planes = 4usize;
    let settings = KernelSettings::default()
        .cube_dim(CubeDim::new_2d(forward_cmma::PLANE as u32, planes as u32))
        .address_type(AddressType::U32);
    let def = forward_cmma::flash_fwd_cmma_kernel::FlashFwdCmmaKernel::<WgpuRuntime>::new(
        settings,
        client(),
        t(),
        t(),
        t(),
        t(),
        t(),
        (),
        (),
        (),
        32,
        64,
        planes,
        64,
        f16_ty,
    )
    .define();
    normalise_cuda(&cuda(def))
}

/// CUDA C++ of the register-level tensor-core FA2 kernels (`forward_mma`, `backward_mma`; f16, Dk = 32,
/// Dv = 64: the PSA shape), as `(name, source)`. CUDA only (`mma.sync`/`ldmatrix`).
pub fn fa2_mma_cuda() -> Vec<(&'static str, String)> {
    use crate::attention::kernels::{backward_mma, forward_mma, mma::PLANE};
    let f16_ty: StorageType = half::f16::as_type_native_unchecked().storage_type();
    let t = || TensorCompilationArg { inplace: None };
    let settings = |planes: usize| {
        KernelSettings::default().cube_dim(CubeDim::new_2d(PLANE as u32, planes as u32)).address_type(AddressType::U32)
    };
    let config = forward_mma::FORWARD_CONFIG;
    let fwd = forward_mma::flash_fwd_mma_kernel::FlashFwdMmaKernel::<WgpuRuntime>::new(
        settings(config.planes),
        client(),
        t(),
        t(),
        t(),
        t(),
        t(),
        (),
        (),
        (),
        32,
        64,
        config.planes,
        config.mtiles,
        config.block_n,
        f16_ty,
    )
    .define();
    let (planes, tile) = backward_mma::backward_config(32, 64);
    let dkdv = backward_mma::flash_bwd_dkdv_mma_kernel::FlashBwdDkdvMmaKernel::<WgpuRuntime>::new(
        settings(planes),
        client(),
        t(),
        t(),
        t(),
        t(),
        t(),
        t(),
        t(),
        t(),
        (),
        (),
        (),
        32,
        64,
        planes,
        tile,
        f16_ty,
    )
    .define();
    let dq = backward_mma::flash_bwd_dq_mma_kernel::FlashBwdDqMmaKernel::<WgpuRuntime>::new(
        settings(planes),
        client(),
        t(),
        t(),
        t(),
        t(),
        t(),
        t(),
        t(),
        (),
        (),
        (),
        32,
        64,
        planes,
        tile,
        f16_ty,
    )
    .define();
    vec![
        ("fa2_forward_mma_f16_dk32_dv64.cu", normalise_cuda(&cuda(fwd))),
        ("fa2_backward_dkdv_mma_f16_dk32_dv64.cu", normalise_cuda(&cuda(dkdv))),
        ("fa2_backward_dq_mma_f16_dk32_dv64.cu", normalise_cuda(&cuda(dq))),
    ]
}

/// CUDA C++ of the tensor-core conv weight gradient (`conv::kernels::wgrad_cmma`, f16, 64 × 64 tiles). CUDA only
/// (`wmma`).
pub fn conv_wgrad_cmma_cuda() -> String {
    use crate::conv::kernels::wgrad_cmma;
    let f16_ty: StorageType = half::f16::as_type_native_unchecked().storage_type();
    let t = || TensorCompilationArg { inplace: None };
    let settings = KernelSettings::default()
        .cube_dim(CubeDim::new_2d(wgrad_cmma::PLANE, wgrad_cmma::PLANES))
        .address_type(AddressType::U32);
    let geo = crate::snapshot::conv_geo();
    let def = wgrad_cmma::wgrad_cmma_kernel::WgradCmmaKernel::<WgpuRuntime>::new(
        settings,
        client(),
        t(),
        t(),
        t(),
        geo,
        (),
        (),
        (),
        2,
        f16_ty,
    )
    .define();
    normalise_cuda(&cuda(def))
}
