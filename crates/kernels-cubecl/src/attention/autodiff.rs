//! [`FlashAttentionBackend`] for [`Autodiff`]: the forward runs on the inner backend; a [`Backward`] step
//! keeps `q`, `k`, `v` (checkpointed node outputs) and the forward's `o` and `lse` (state), and calls the
//! inner backend's `flash_attention_backward` (the FA2 backward kernels on CubeCL backends).
//!
//! `lse` is returned as an untracked tensor (no gradient flows through it), and
//! `flash_attention_backward` on `Autodiff` is not itself differentiable (no double backward).
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    NodeId,
};
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::backend::FlashAttentionBackend;

#[derive(Debug)]
struct FlashAttentionBackward;

/// `(q, k, v)` checkpoint ids, the forward's `o` and `lse`, the scale.
type State<B> = (NodeId, NodeId, NodeId, FloatTensor<B>, FloatTensor<B>, f32);

impl<B: FlashAttentionBackend> Backward<B, 3> for FlashAttentionBackward {
    type State = State<B>;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let (q_id, k_id, v_id, o, lse, scale) = ops.state;
        let q = checkpointer.retrieve_node_output::<FloatTensor<B>>(q_id);
        let k = checkpointer.retrieve_node_output::<FloatTensor<B>>(k_id);
        let v = checkpointer.retrieve_node_output::<FloatTensor<B>>(v_id);
        let d_o = grads.consume::<B>(&ops.node);

        let (dq, dk, dv) = B::flash_attention_backward(q, k, v, o, lse, d_o, scale);

        let [q_node, k_node, v_node] = ops.parents;
        if let Some(node) = q_node {
            grads.register::<B>(node.id, dq);
        }
        if let Some(node) = k_node {
            grads.register::<B>(node.id, dk);
        }
        if let Some(node) = v_node {
            grads.register::<B>(node.id, dv);
        }
    }
}

impl<B: FlashAttentionBackend, C: CheckpointStrategy> FlashAttentionBackend for Autodiff<B, C> {
    fn flash_attention_forward(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        scale: f32,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let prep = FlashAttentionBackward
            .prepare::<C>([q.node.clone(), k.node.clone(), v.node.clone()])
            .compute_bound()
            .stateful();
        match prep {
            OpsKind::Tracked(mut prep) => {
                let q_id = prep.checkpoint(&q);
                let k_id = prep.checkpoint(&k);
                let v_id = prep.checkpoint(&v);
                let (o, lse) = B::flash_attention_forward(q.primitive, k.primitive, v.primitive, scale);
                let state = (q_id, k_id, v_id, o.clone(), lse.clone(), scale);
                let o = prep.finish(state, o);
                (o, FloatTensor::<Self>::new(lse))
            }
            OpsKind::UnTracked(prep) => {
                let (o, lse) = B::flash_attention_forward(q.primitive, k.primitive, v.primitive, scale);
                (prep.finish(o), FloatTensor::<Self>::new(lse))
            }
        }
    }

    fn flash_attention_backward(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        o: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        d_o: FloatTensor<Self>,
        scale: f32,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (dq, dk, dv) = B::flash_attention_backward(
            q.primitive,
            k.primitive,
            v.primitive,
            o.primitive,
            lse.primitive,
            d_o.primitive,
            scale,
        );
        // `AutodiffTensor` is not exported by name in 0.21; reach its `new` through the alias.
        (FloatTensor::<Self>::new(dq), FloatTensor::<Self>::new(dk), FloatTensor::<Self>::new(dv))
    }
}
