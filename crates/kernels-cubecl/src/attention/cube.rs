//! [`FlashAttentionBackend`] for [`CubeBackend`]: allocates the outputs and launches the FA2 kernels.
//! One generic impl serves every CubeCL runtime (wgpu, CUDA, ...).
use burn::tensor::{DType, Shape};
use burn_cubecl::{
    kernel::into_contiguous, ops::numeric::empty_device_contiguous_dtype, tensor::CubeTensor, BoolElement, CubeBackend,
    CubeRuntime, FloatElement, IntElement,
};

use super::kernels::{
    backward_delta::launch_delta,
    backward_dkdv::launch_dkdv,
    backward_dq::launch_dq,
    backward_mma::{launch_dkdv_mma, launch_dq_mma},
    forward::launch_forward,
    forward_cmma::{cmma_supported, launch_forward_cmma},
    forward_mma::launch_forward_mma,
    mma::mma_supported,
    MAX_HEAD_DIM,
};
use super::{reference_backward, reference_forward, FlashAttentionBackend};

impl<R, F, I, BT> FlashAttentionBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn flash_attention_forward(
        q: CubeTensor<R>,
        k: CubeTensor<R>,
        v: CubeTensor<R>,
        scale: f32,
    ) -> (CubeTensor<R>, CubeTensor<R>) {
        if !kernel_supports(&q, &k, &v) {
            return reference_forward::<Self>(q, k, v, scale);
        }
        forward(q, k, v, scale)
    }

    fn flash_attention_backward(
        q: CubeTensor<R>,
        k: CubeTensor<R>,
        v: CubeTensor<R>,
        o: CubeTensor<R>,
        lse: CubeTensor<R>,
        d_o: CubeTensor<R>,
        scale: f32,
    ) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
        if !kernel_supports(&q, &k, &v) {
            return reference_backward::<Self>(q, k, v, o, lse, d_o, scale);
        }
        backward(q, k, v, o, lse, d_o, scale)
    }
}

/// Checks the shapes (panics on a mismatch, like a Burn op) and says whether the kernels handle them.
fn kernel_supports<R: CubeRuntime>(q: &CubeTensor<R>, k: &CubeTensor<R>, v: &CubeTensor<R>) -> bool {
    let (qs, ks, vs) = (q.meta.shape(), k.meta.shape(), v.meta.shape());
    check_shapes(&qs.dims::<3>(), &ks.dims::<3>(), &vs.dims::<3>());
    assert!(
        q.dtype == k.dtype && q.dtype == v.dtype,
        "flash attention: q, k, v dtypes differ ({:?}, {:?}, {:?})",
        q.dtype,
        k.dtype,
        v.dtype
    );
    let [_, _, dk] = qs.dims::<3>();
    let [_, _, dv] = vs.dims::<3>();
    dk <= MAX_HEAD_DIM && dv <= MAX_HEAD_DIM && dk > 0 && dv > 0
}

/// Shape rules of the op: `q: [BH, Nq, Dk]`, `k: [BH, Nk, Dk]`, `v: [BH, Nk, Dv]`, `Nk ≥ 1`.
pub(crate) fn check_shapes(q: &[usize; 3], k: &[usize; 3], v: &[usize; 3]) {
    assert!(
        q[0] == k[0] && q[0] == v[0] && q[2] == k[2] && k[1] == v[1] && k[1] > 0,
        "flash attention: expected q [BH, Nq, Dk], k [BH, Nk, Dk], v [BH, Nk, Dv] with Nk > 0, got {q:?}, {k:?}, {v:?}"
    );
}

fn empty<R: CubeRuntime>(like: &CubeTensor<R>, shape: Shape, dtype: DType) -> CubeTensor<R> {
    empty_device_contiguous_dtype(like.client.clone(), like.device.clone(), shape, dtype)
}

/// Kernel forward: contiguous inputs, fresh outputs `o` (dtype of `q`) and `lse` (F32). f16/bf16 with head
/// dims that are multiples of 16 run on tensor cores where the device has them
/// ([`super::kernels::forward_mma`] on CUDA sm_80+, else [`super::kernels::forward_cmma`]); everything
/// else runs the plain kernel.
pub fn forward<R: CubeRuntime>(
    q: CubeTensor<R>,
    k: CubeTensor<R>,
    v: CubeTensor<R>,
    scale: f32,
) -> (CubeTensor<R>, CubeTensor<R>) {
    let (q, k, v) = (into_contiguous(q), into_contiguous(k), into_contiguous(v));
    let [bh, nq, _] = q.meta.shape().dims::<3>();
    let [_, _, dv] = v.meta.shape().dims::<3>();
    let o = empty(&q, Shape::new([bh, nq, dv]), q.dtype);
    let lse = empty(&q, Shape::new([bh, nq]), DType::F32);
    let [_, _, dk] = q.meta.shape().dims::<3>();
    // the mma forward keeps the running max on unscaled scores: a positive scale only
    if mma_supported(&q, dk, dv) && scale > 0.0 && scale.is_finite() {
        launch_forward_mma(&q, &k, &v, &o, &lse, scale);
    } else if cmma_supported(&q, dk, dv) {
        launch_forward_cmma(&q, &k, &v, &o, &lse, scale);
    } else {
        launch_forward(&q, &k, &v, &o, &lse, scale);
    }
    (o, lse)
}

/// Kernel backward: `Δ = rowsum(dO ∘ O)`, then the dK/dV and dQ kernels (tensor-core versions from
/// [`super::kernels::backward_mma`] where [`mma_supported`] holds).
pub fn backward<R: CubeRuntime>(
    q: CubeTensor<R>,
    k: CubeTensor<R>,
    v: CubeTensor<R>,
    o: CubeTensor<R>,
    lse: CubeTensor<R>,
    d_o: CubeTensor<R>,
    scale: f32,
) -> (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>) {
    let (q, k, v) = (into_contiguous(q), into_contiguous(k), into_contiguous(v));
    assert_eq!(lse.dtype, DType::F32, "flash attention: lse must be F32");
    // An upstream gradient of another dtype is cast first (the cast's output may be pitched on CUDA, so
    // `into_contiguous` comes after it).
    let d_o = if d_o.dtype == q.dtype { d_o } else { burn_cubecl::kernel::cast(d_o, q.dtype) };
    let o = if o.dtype == q.dtype { o } else { burn_cubecl::kernel::cast(o, q.dtype) };
    let (o, d_o, lse) = (into_contiguous(o), into_contiguous(d_o), into_contiguous(lse));
    let [bh, nq, d_k] = q.meta.shape().dims::<3>();
    let [_, _, d_v] = v.meta.shape().dims::<3>();

    let delta = empty(&q, Shape::new([bh, nq]), DType::F32);
    launch_delta(&o, &d_o, &delta);

    let dq = empty(&q, q.meta.shape().clone(), q.dtype);
    let dk = empty(&q, k.meta.shape().clone(), q.dtype);
    let dv = empty(&q, v.meta.shape().clone(), q.dtype);
    if mma_supported(&q, d_k, d_v) {
        launch_dkdv_mma(&q, &k, &v, &d_o, &lse, &delta, &dk, &dv, scale);
        launch_dq_mma(&q, &k, &v, &d_o, &lse, &delta, &dq, scale);
    } else {
        launch_dkdv(&q, &k, &v, &d_o, &lse, &delta, &dk, &dv, scale);
        launch_dq(&q, &k, &v, &d_o, &lse, &delta, &dq, scale);
    }
    (dq, dk, dv)
}

#[cfg(test)]
/// Launch-level entry points with caller-provided outputs (the tests fill them with NaN first so that an
/// element the kernels forget to write fails the comparison).
pub mod raw {
    pub use super::super::kernels::{
        backward_delta::launch_delta,
        backward_dkdv::launch_dkdv,
        backward_dq::launch_dq,
        backward_mma::{launch_dkdv_mma, launch_dq_mma},
        forward::launch_forward,
        forward_cmma::{cmma_supported, launch_forward_cmma},
        forward_mma::launch_forward_mma,
        mma::mma_supported,
    };
}
