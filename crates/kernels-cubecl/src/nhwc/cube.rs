//! [`NhwcBackend`] for [`CubeBackend`]: the channel concatenation as one kernel launch per
//! [`CAT_INPUTS`](super::kernels::CAT_INPUTS) inputs
//! ([`launch_cat_channels`], strided inputs read in place); max-pool and upsample stay Burn's (the reference).
//! Mixed or other dtypes (f64), empty outputs and outputs of 2³² elements or more take the reference.
use burn::tensor::{DType, Shape};
use burn_cubecl::{tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::kernels::launch_cat_channels;
use super::{reference, NhwcBackend};
use crate::cube_util::empty;

impl<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement> NhwcBackend for CubeBackend<R, F, I, BT> {
    fn cat_channels_nhwc(xs: Vec<CubeTensor<R>>) -> CubeTensor<R> {
        let dtype = xs[0].dtype;
        // inputs with no channels add nothing (and would bind empty buffers)
        let parts: Vec<CubeTensor<R>> = xs.iter().filter(|t| t.meta.shape().dims::<4>()[3] > 0).cloned().collect();
        let [b, h, w, _] = xs[0].meta.shape().dims::<4>();
        let ct: usize = parts.iter().map(|t| t.meta.shape().dims::<4>()[3]).sum();
        let total = b * h * w * ct;
        let kernel_dtype = matches!(dtype, DType::F32 | DType::F16 | DType::BF16);
        let fits = !parts.is_empty()
            && kernel_dtype
            && parts.iter().all(|t| t.dtype == dtype)
            && total > 0
            && total <= u32::MAX as usize;
        if !fits {
            return reference::cat_channels::<Self>(xs);
        }
        let out = empty(&parts[0], Shape::new([b, h, w, ct]), dtype);
        launch_cat_channels(&parts, &out);
        out
    }
}
