//! A new op, added the way `crates/kernels-cubecl/README.md` describes ("Adding an op"): `y = s·x²`
//! elementwise with its backward `dx = 2·s·x·dy`, on every backend: the reference in the trait's default bodies
//! (Flex and any backend without kernels), CubeCL kernels on `CubeBackend`, one custom op in the `Fusion`
//! stream, one recorded backward step on `Autodiff`. `cargo test --release -p kernels-cubecl --example
//! toy_square --features wgpu` runs its checks (Flex always, wgpu with the feature).
//!
//! Glue (everything but the kernels, the reference and the public function): the three `impl` blocks, 36 code
//! lines.
use burn::tensor::{backend::Backend, ops::FloatTensor, Tensor, TensorPrimitive};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};
use kernels_cubecl::autodiff_util::differentiable;
use kernels_cubecl::fusion_util::{custom_op, Prim};

// 1. The extension trait; its default bodies are the reference (tensor ops), used by Flex and others.
pub trait SquareBackend: Backend {
    /// `y = s·x²`, any shape (flattened by the public function).
    fn square_forward(x: FloatTensor<Self>, s: f32) -> FloatTensor<Self> {
        let x = Tensor::<Self, 1>::from_primitive(TensorPrimitive::Float(x));
        (x.clone() * x).mul_scalar(s).into_primitive().tensor()
    }
    /// `dx = 2·s·x·dy`.
    fn square_backward(x: FloatTensor<Self>, dy: FloatTensor<Self>, s: f32) -> FloatTensor<Self> {
        let x = Tensor::<Self, 1>::from_primitive(TensorPrimitive::Float(x));
        let dy = Tensor::<Self, 1>::from_primitive(TensorPrimitive::Float(dy));
        (x * dy).mul_scalar(2.0 * s).into_primitive().tensor()
    }
}
impl SquareBackend for burn::backend::Flex {}

// 2. The kernel (its own module: cubecl's prelude has a `Tensor` too): one unit per element, f32 arithmetic
//    whatever the storage type; `grad` (comptime) picks the backward.
mod kernel {
    use burn_cubecl::CubeRuntime;
    use burn_cubecl::{kernel::into_contiguous, ops::numeric::empty_device_contiguous_dtype, tensor::CubeTensor};
    use cubecl::prelude::*;

    #[cube(launch_unchecked)]
    fn square_kernel<F: Float>(
        x: &Tensor<F>,
        dy: &Tensor<F>,
        out: &mut Tensor<F>,
        s: f32,
        #[comptime] grad: bool,
        #[define(F)] _dtype: StorageType,
    ) {
        let i = ABSOLUTE_POS;
        if i < out.len() {
            let v = f32::cast_from(x[i]);
            out[i] = F::cast_from(if grad { f32::new(2.0) * s * v * f32::cast_from(dy[i]) } else { s * v * v });
        }
    }

    /// `s·x²`, or `2·s·x·dy` when `dy` is given; a fresh tight output.
    pub fn launch<R: CubeRuntime>(x: CubeTensor<R>, dy: Option<CubeTensor<R>>, s: f32) -> CubeTensor<R> {
        let x = into_contiguous(x);
        let grad = dy.is_some();
        let dy = dy.map(into_contiguous).unwrap_or_else(|| x.clone());
        let out = empty_device_contiguous_dtype(x.client.clone(), x.device.clone(), x.meta.shape().clone(), x.dtype);
        let n = x.meta.num_elements();
        if n > 0 {
            let cube_dim = CubeDim::new_1d(256);
            let count = cubecl::calculate_cube_count_elemwise(&x.client, n, cube_dim);
            // SAFETY: every access is guarded by `i < out.len()`, the element count of all three tensors.
            unsafe {
                square_kernel::launch_unchecked::<R>(
                    &x.client,
                    count,
                    cube_dim,
                    x.clone().into_tensor_arg(),
                    dy.into_tensor_arg(),
                    out.clone().into_tensor_arg(),
                    s,
                    grad,
                    x.dtype.into(),
                )
            }
        }
        out
    }
}

// 3. CubeBackend: the kernels.
impl<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement> SquareBackend for CubeBackend<R, F, I, BT> {
    fn square_forward(x: CubeTensor<R>, s: f32) -> CubeTensor<R> {
        kernel::launch(x, None, s)
    }
    fn square_backward(x: CubeTensor<R>, dy: CubeTensor<R>, s: f32) -> CubeTensor<R> {
        kernel::launch(x, Some(dy), s)
    }
}

// 4. Fusion: one opaque custom op per method; the scalar travels in the closure.
type T<B> = burn_fusion::FusionTensor<<B as burn_fusion::FusionBackend>::FusionRuntime>;
impl<B: burn_fusion::FusionBackend + SquareBackend> SquareBackend for burn_fusion::Fusion<B> {
    fn square_forward(x: T<B>, s: f32) -> T<B> {
        let out = (x.shape.clone(), x.dtype);
        let [y] =
            custom_op::<B, 1, 1>("toy_square", [x], [out], move |[x]| [Prim::Float(B::square_forward(x.float(), s))]);
        y
    }
    fn square_backward(x: T<B>, dy: T<B>, s: f32) -> T<B> {
        let out = (x.shape.clone(), x.dtype);
        let [dx] = custom_op::<B, 2, 1>("toy_square_backward", [x, dy], [out], move |[x, g]| {
            [Prim::Float(B::square_backward(x.float(), g.float(), s))]
        });
        dx
    }
}

// 5. Autodiff: the forward on the inner backend, and the rule dx = 2·s·x·dy (state: x and s).
type Ad<B, C> = burn::backend::Autodiff<B, C>;
impl<B: SquareBackend, C: burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy> SquareBackend
    for Ad<B, C>
{
    fn square_forward(x: FloatTensor<Self>, s: f32) -> FloatTensor<Self> {
        differentiable::<B, C, _, 1>(
            [x],
            |[x]| (B::square_forward(x.clone(), s), (x, s)),
            |(x, s), dy, _| [Some(B::square_backward(x, dy, s))],
        )
    }
}

// 6. The public function, on `Tensor`s of any rank.
pub fn square<B: SquareBackend, const D: usize>(x: Tensor<B, D>, s: f32) -> Tensor<B, D> {
    let shape = x.shape();
    let y = B::square_forward(x.reshape([shape.num_elements()]).into_primitive().tensor(), s);
    Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(y)).reshape(shape)
}

fn main() {
    let dev = Default::default();
    let x = Tensor::<burn::backend::Flex, 2>::from_floats([[1.0, -2.0], [0.5, 3.0]], &dev);
    println!("{}", square(x, 0.5));
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Autodiff;
    use burn::tensor::TensorData;

    /// `y` and `dx` of `square` on backend `B` against the values computed by hand.
    fn check<B: SquareBackend>(dev: &burn::tensor::Device<Autodiff<B>>) {
        let xs = [1.5f32, -2.0, 0.25, 3.0, -0.5, 0.0];
        let x = Tensor::<Autodiff<B>, 2>::from_data(TensorData::new(xs.to_vec(), [2, 3]), dev).require_grad();
        let y = square(x.clone(), 0.5);
        let w =
            Tensor::<Autodiff<B>, 2>::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3]), dev);
        let grads = (y.clone() * w).sum().backward();
        let dx = x.grad(&grads).expect("x has a gradient").into_data().to_vec::<f32>().unwrap();
        let y = y.into_data().to_vec::<f32>().unwrap();
        for (i, v) in xs.iter().enumerate() {
            assert!((y[i] - 0.5 * v * v).abs() < 1e-6, "y[{i}] = {}", y[i]);
            assert!((dx[i] - (i + 1) as f32 * v).abs() < 1e-5, "dx[{i}] = {}", dx[i]);
        }
    }

    #[test]
    fn square_flex() {
        check::<burn::backend::Flex>(&Default::default());
    }

    #[cfg(feature = "wgpu")]
    #[test]
    fn square_wgpu_fusion_and_kernels() {
        check::<burn::backend::Wgpu>(&Default::default());
        check::<CubeBackend<cubecl::wgpu::WgpuRuntime, f32, i32, u32>>(&Default::default());
    }
}
