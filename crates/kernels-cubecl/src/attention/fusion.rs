//! [`FlashAttentionBackend`] for [`Fusion`]: the op is registered as an opaque custom op in the lazy fusion
//! stream (pattern of `burn-vision`'s connected components). When the stream is flushed, the queued op's
//! `execute` fetches the inner backend's tensors from the handle container, calls the inner backend's
//! implementation (the CubeCL kernels for `Fusion<CubeBackend<..>>`) and registers the outputs.
//!
//! `CustomOpIr` has no scalar slot in Burn 0.21, so the softmax scale lives in the op struct (safe:
//! cached execution plans replay the queued op objects, not a re-built description).
use core::marker::PhantomData;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn::tensor::{DType, Shape};
use burn_fusion::{
    stream::{Operation, OperationStreams},
    Fusion, FusionBackend, FusionRuntime, FusionTensor,
};

use super::backend::FlashAttentionBackend;
use super::cube::check_shapes;

type Handles<B> = HandleContainer<<<B as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle>;

#[derive(Clone, Debug)]
struct FlashFwdOp<B> {
    desc: CustomOpIr,
    scale: f32,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + FlashAttentionBackend> Operation<B::FusionRuntime> for FlashFwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([q, k, v], [o, lse]) = self.desc.as_fixed();
        let q = handles.get_float_tensor::<B>(q);
        let k = handles.get_float_tensor::<B>(k);
        let v = handles.get_float_tensor::<B>(v);
        let (out, out_lse) = B::flash_attention_forward(q, k, v, self.scale);
        handles.register_float_tensor::<B>(&o.id, out);
        handles.register_float_tensor::<B>(&lse.id, out_lse);
    }
}

#[derive(Clone, Debug)]
struct FlashBwdOp<B> {
    desc: CustomOpIr,
    scale: f32,
    _b: PhantomData<B>,
}

impl<B: FusionBackend + FlashAttentionBackend> Operation<B::FusionRuntime> for FlashBwdOp<B> {
    fn execute(&self, handles: &mut Handles<B>) {
        let ([q, k, v, o, lse, d_o], [dq, dk, dv]) = self.desc.as_fixed();
        let q = handles.get_float_tensor::<B>(q);
        let k = handles.get_float_tensor::<B>(k);
        let v = handles.get_float_tensor::<B>(v);
        let o = handles.get_float_tensor::<B>(o);
        let lse = handles.get_float_tensor::<B>(lse);
        let d_o = handles.get_float_tensor::<B>(d_o);
        let (gq, gk, gv) = B::flash_attention_backward(q, k, v, o, lse, d_o, self.scale);
        handles.register_float_tensor::<B>(&dq.id, gq);
        handles.register_float_tensor::<B>(&dk.id, gk);
        handles.register_float_tensor::<B>(&dv.id, gv);
    }
}

fn dims3<R: FusionRuntime>(t: &FusionTensor<R>) -> [usize; 3] {
    t.shape.dims::<3>()
}

impl<B: FusionBackend + FlashAttentionBackend> FlashAttentionBackend for Fusion<B> {
    fn flash_attention_forward(
        q: FusionTensor<B::FusionRuntime>,
        k: FusionTensor<B::FusionRuntime>,
        v: FusionTensor<B::FusionRuntime>,
        scale: f32,
    ) -> (FusionTensor<B::FusionRuntime>, FusionTensor<B::FusionRuntime>) {
        let (qs, ks, vs) = (dims3(&q), dims3(&k), dims3(&v));
        check_shapes(&qs, &ks, &vs);
        let client = q.client.clone();
        let dtype = q.dtype;

        let streams = OperationStreams::with_inputs([&q, &k, &v]);
        let o = TensorIr::uninit(client.create_empty_handle(), Shape::new([qs[0], qs[1], vs[2]]), dtype);
        let lse = TensorIr::uninit(client.create_empty_handle(), Shape::new([qs[0], qs[1]]), DType::F32);
        let desc = CustomOpIr::new("flash_attention_forward", &[q.into_ir(), k.into_ir(), v.into_ir()], &[o, lse]);
        let [o, lse] = client
            .register(streams, OperationIr::Custom(desc.clone()), FlashFwdOp::<B> { desc, scale, _b: PhantomData })
            .outputs::<2>();
        (o, lse)
    }

    fn flash_attention_backward(
        q: FusionTensor<B::FusionRuntime>,
        k: FusionTensor<B::FusionRuntime>,
        v: FusionTensor<B::FusionRuntime>,
        o: FusionTensor<B::FusionRuntime>,
        lse: FusionTensor<B::FusionRuntime>,
        d_o: FusionTensor<B::FusionRuntime>,
        scale: f32,
    ) -> (FusionTensor<B::FusionRuntime>, FusionTensor<B::FusionRuntime>, FusionTensor<B::FusionRuntime>) {
        let (qs, ks, vs) = (dims3(&q), dims3(&k), dims3(&v));
        check_shapes(&qs, &ks, &vs);
        let client = q.client.clone();
        let dtype = q.dtype;

        let streams = OperationStreams::with_inputs([&q, &k, &v, &o, &lse, &d_o]);
        let dq = TensorIr::uninit(client.create_empty_handle(), Shape::new(qs), dtype);
        let dk = TensorIr::uninit(client.create_empty_handle(), Shape::new(ks), dtype);
        let dv = TensorIr::uninit(client.create_empty_handle(), Shape::new(vs), dtype);
        let desc = CustomOpIr::new(
            "flash_attention_backward",
            &[q.into_ir(), k.into_ir(), v.into_ir(), o.into_ir(), lse.into_ir(), d_o.into_ir()],
            &[dq, dk, dv],
        );
        let [dq, dk, dv] = client
            .register(streams, OperationIr::Custom(desc.clone()), FlashBwdOp::<B> { desc, scale, _b: PhantomData })
            .outputs::<3>();
        (dq, dk, dv)
    }
}
