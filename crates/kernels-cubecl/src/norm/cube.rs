//! [`NormBackend`] for [`CubeBackend`]: each pass as the three kernels of `kernels/` on tight `[N, C]` views of the
//! `[A1, A2, A3, C]` activation. `y`/`dx` come back in `x`'s dtype, the statistics and `dγ`/`dβ` in `γ`'s (the
//! kernels keep them in f32). Other activation dtypes (f64), empty tensors and activations of 2³¹ elements or more
//! (the elementwise kernels' flat index over a padded 2-D grid is a u32)
//! take [`super::reference`].
use burn::tensor::{ops::FloatTensorOps, DType, Shape};
use burn_cubecl::{kernel::cast, tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::kernels::{launch_backward, launch_forward, split, ACT_NONE, ACT_SILU};
use super::{reference, BatchNormSpec, NormBackend};
use crate::conv::Activation;
use crate::cube_util::{empty, tight_as};

/// `(N, C)` of an `[A1, A2, A3, C]` activation the kernels take, or `None` for the reference.
fn rows<R: CubeRuntime>(x: &CubeTensor<R>) -> Option<(usize, usize)> {
    let shape = x.meta.shape();
    let c = *shape.as_slice().last()?;
    let numel = shape.num_elements();
    let fits = matches!(x.dtype, DType::F32 | DType::F16 | DType::BF16) && numel > 0 && numel <= i32::MAX as usize;
    fits.then_some((numel / c, c))
}

fn act_code(a: Activation) -> u32 {
    match a {
        Activation::None => ACT_NONE,
        Activation::Silu => ACT_SILU,
    }
}

/// An f32 result as `dtype`.
fn to_dtype<R: CubeRuntime>(t: CubeTensor<R>, dtype: DType) -> CubeTensor<R> {
    if dtype == DType::F32 {
        t
    } else {
        cast(t, dtype)
    }
}

impl<R, F, I, BT> NormBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn batch_norm_train(
        x: CubeTensor<R>,
        gamma: CubeTensor<R>,
        beta: CubeTensor<R>,
        spec: BatchNormSpec,
    ) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
        let Some((n, c)) = rows(&x) else { return reference::forward::<Self>(x, gamma, beta, spec) };
        let (shape, dtype, stat) = (x.meta.shape().clone(), x.dtype, gamma.dtype);
        let x = Self::float_reshape(tight_as(x, dtype), Shape::new([n, c]));
        let (gamma, beta) = (tight_as(gamma, DType::F32), tight_as(beta, DType::F32));
        let part = empty(&x, Shape::new([2, split(n, c).2 as usize, c]), DType::F32);
        let y = empty(&x, Shape::new([n, c]), dtype);
        let (mean, var) = (empty(&x, Shape::new([c]), DType::F32), empty(&x, Shape::new([c]), DType::F32));
        let (eps, act) = (spec.epsilon as f32, act_code(spec.activation));
        launch_forward(&x, &gamma, &beta, &part, &y, &mean, &var, eps, act);
        (Self::float_reshape(y, shape), to_dtype(mean, stat), to_dtype(var, stat))
    }

    fn batch_norm_train_backward(
        x: CubeTensor<R>,
        gamma: CubeTensor<R>,
        beta: CubeTensor<R>,
        mean: CubeTensor<R>,
        var: CubeTensor<R>,
        dy: CubeTensor<R>,
        spec: BatchNormSpec,
    ) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
        let Some((n, c)) = rows(&x) else {
            return reference::backward::<Self>(x, gamma, beta, mean, var, dy, spec);
        };
        let (shape, dtype, stat) = (x.meta.shape().clone(), x.dtype, gamma.dtype);
        let x = Self::float_reshape(tight_as(x, dtype), Shape::new([n, c]));
        let dy = Self::float_reshape(tight_as(dy, dtype), Shape::new([n, c]));
        let vectors = [mean, var, gamma, beta].map(|t| tight_as(t, DType::F32));
        let part = empty(&x, Shape::new([2, split(n, c).2 as usize, c]), DType::F32);
        let dx = empty(&x, Shape::new([n, c]), dtype);
        let (dgamma, dbeta) = (empty(&x, Shape::new([c]), DType::F32), empty(&x, Shape::new([c]), DType::F32));
        let [m, v, g, b] = &vectors;
        let (eps, act) = (spec.epsilon as f32, act_code(spec.activation));
        launch_backward(&x, &dy, [m, v, g, b], &part, &dx, &dgamma, &dbeta, eps, act);
        (Self::float_reshape(dx, shape), to_dtype(dgamma, stat), to_dtype(dbeta, stat))
    }
}
