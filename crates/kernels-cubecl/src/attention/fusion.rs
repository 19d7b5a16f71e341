//! [`FlashAttentionBackend`] for [`Fusion`]: the op is registered as an opaque custom op in the lazy fusion
//! stream (pattern of `burn-vision`'s connected components, written once in `crate::fusion_util`). When the
//! stream is flushed, the op fetches the inner backend's tensors, calls the inner backend's implementation (the
//! CubeCL kernels for `Fusion<CubeBackend<..>>`) and registers the outputs. The softmax scale travels in the
//! op's closure (`CustomOpIr` has no scalar slot in Burn 0.21).
use burn::tensor::{DType, Shape};
use burn_fusion::{Fusion, FusionBackend, FusionTensor};

use super::cube::check_shapes;
use super::FlashAttentionBackend;
use crate::fusion_util::{custom_op, Prim};

type T<B> = FusionTensor<<B as FusionBackend>::FusionRuntime>;

impl<B: FusionBackend + FlashAttentionBackend> FlashAttentionBackend for Fusion<B> {
    fn flash_attention_forward(q: T<B>, k: T<B>, v: T<B>, scale: f32) -> (T<B>, T<B>) {
        let [qs, ks, vs] = [&q, &k, &v].map(|t| t.shape.dims::<3>());
        check_shapes(&qs, &ks, &vs);
        let outs = [(Shape::new([qs[0], qs[1], vs[2]]), q.dtype), (Shape::new([qs[0], qs[1]]), DType::F32)];
        let [o, lse] = custom_op::<B, 3, 2>("flash_attention_forward", [q, k, v], outs, move |[q, k, v]| {
            let (o, lse) = B::flash_attention_forward(q.float(), k.float(), v.float(), scale);
            [Prim::Float(o), Prim::Float(lse)]
        });
        (o, lse)
    }

    fn flash_attention_backward(
        q: T<B>,
        k: T<B>,
        v: T<B>,
        o: T<B>,
        lse: T<B>,
        d_o: T<B>,
        scale: f32,
    ) -> (T<B>, T<B>, T<B>) {
        let [qs, ks, vs] = [&q, &k, &v].map(|t| t.shape.dims::<3>());
        check_shapes(&qs, &ks, &vs);
        let dtype = q.dtype;
        let outs = [(Shape::new(qs), dtype), (Shape::new(ks), dtype), (Shape::new(vs), dtype)];
        let inputs = [q, k, v, o, lse, d_o];
        let [dq, dk, dv] = custom_op::<B, 6, 3>("flash_attention_backward", inputs, outs, move |[q, k, v, o, l, g]| {
            let (dq, dk, dv) =
                B::flash_attention_backward(q.float(), k.float(), v.float(), o.float(), l.float(), g.float(), scale);
            [Prim::Float(dq), Prim::Float(dk), Prim::Float(dv)]
        });
        (dq, dk, dv)
    }
}
