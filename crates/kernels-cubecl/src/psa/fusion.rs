//! [`PsaBackend`] for [`Fusion`]: forward and backward are opaque custom ops in the fusion stream (same
//! pattern as `crate::attention::fusion`); `num_heads`, `key_dim` and `scale` live in the op structs.
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn::tensor::{DType, Shape};
use burn_fusion::{
    stream::{Operation, OperationStreams},
    Fusion, FusionBackend, FusionRuntime, FusionTensor,
};

use super::backend::{psa_dims, PsaBackend};

type Handles<B> = HandleContainer<<<B as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle>;

#[derive(Clone, Debug)]
struct PsaFwdOp<B> {
    desc: CustomOpIr,
    num_heads: usize,
    key_dim: usize,
    scale: f32,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + PsaBackend> Operation<B::FusionRuntime> for PsaFwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([qkv], [out, lse]) = self.desc.as_fixed();
        let qkv = handles.get_float_tensor::<B>(qkv);
        let (o, l) = B::psa_attention_forward(qkv, self.num_heads, self.key_dim, self.scale);
        handles.register_float_tensor::<B>(&out.id, o);
        handles.register_float_tensor::<B>(&lse.id, l);
    }
}

#[derive(Clone, Debug)]
struct PsaBwdOp<B> {
    desc: CustomOpIr,
    num_heads: usize,
    key_dim: usize,
    scale: f32,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + PsaBackend> Operation<B::FusionRuntime> for PsaBwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([qkv, out, lse, d_out], [dqkv]) = self.desc.as_fixed();
        let qkv = handles.get_float_tensor::<B>(qkv);
        let out = handles.get_float_tensor::<B>(out);
        let lse = handles.get_float_tensor::<B>(lse);
        let d_out = handles.get_float_tensor::<B>(d_out);
        let g = B::psa_attention_backward(qkv, out, lse, d_out, self.num_heads, self.key_dim, self.scale);
        handles.register_float_tensor::<B>(&dqkv.id, g);
    }
}

impl<B: FusionBackend + PsaBackend> PsaBackend for Fusion<B> {
    fn psa_attention_forward(
        qkv: FusionTensor<B::FusionRuntime>,
        num_heads: usize,
        key_dim: usize,
        scale: f32,
    ) -> (FusionTensor<B::FusionRuntime>, FusionTensor<B::FusionRuntime>) {
        let [b, _, h, w] = qkv.shape.dims::<4>();
        let d = psa_dims(&[b, qkv.shape[1], h, w], num_heads, key_dim);
        let client = qkv.client.clone();
        let dtype = qkv.dtype;

        let streams = OperationStreams::with_inputs([&qkv]);
        let out = TensorIr::uninit(client.create_empty_handle(), Shape::new([b, 2 * d.c(), h, w]), dtype);
        let lse = TensorIr::uninit(client.create_empty_handle(), Shape::new([b * num_heads, h * w]), DType::F32);
        let desc = CustomOpIr::new("psa_attention_forward", &[qkv.into_ir()], &[out, lse]);
        let op = PsaFwdOp::<B> { desc: desc.clone(), num_heads, key_dim, scale, _b: PhantomData };
        let [out, lse] = client.register(streams, OperationIr::Custom(desc), op).outputs::<2>();
        (out, lse)
    }

    fn psa_attention_backward(
        qkv: FusionTensor<B::FusionRuntime>,
        out: FusionTensor<B::FusionRuntime>,
        lse: FusionTensor<B::FusionRuntime>,
        d_out: FusionTensor<B::FusionRuntime>,
        num_heads: usize,
        key_dim: usize,
        scale: f32,
    ) -> FusionTensor<B::FusionRuntime> {
        let shape = qkv.shape.clone();
        psa_dims(&shape.dims::<4>(), num_heads, key_dim);
        let client = qkv.client.clone();
        let dtype = qkv.dtype;

        let streams = OperationStreams::with_inputs([&qkv, &out, &lse, &d_out]);
        let dqkv = TensorIr::uninit(client.create_empty_handle(), shape, dtype);
        let desc = CustomOpIr::new(
            "psa_attention_backward",
            &[qkv.into_ir(), out.into_ir(), lse.into_ir(), d_out.into_ir()],
            &[dqkv],
        );
        let op = PsaBwdOp::<B> { desc: desc.clone(), num_heads, key_dim, scale, _b: PhantomData };
        let [dqkv] = client.register(streams, OperationIr::Custom(desc), op).outputs::<1>();
        dqkv
    }
}
