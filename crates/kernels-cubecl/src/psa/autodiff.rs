//! [`PsaBackend`] for [`Autodiff`]: the forward runs on the inner backend; a [`Backward`] step keeps `qkv`
//! (checkpointed) and the forward's `out` and `lse` (state) and calls the inner backend's
//! `psa_attention_backward`. `lse` is returned untracked; no double backward.
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
    NodeId,
};
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::backend::PsaBackend;

#[derive(Debug)]
struct PsaAttentionBackward;

/// `qkv` checkpoint id, the forward's `out` and `lse`, `num_heads`, `key_dim`, `scale`.
type State<B> = (NodeId, FloatTensor<B>, FloatTensor<B>, usize, usize, f32);

impl<B: PsaBackend> Backward<B, 1> for PsaAttentionBackward {
    type State = State<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let (qkv_id, out, lse, num_heads, key_dim, scale) = ops.state;
        let qkv = checkpointer.retrieve_node_output::<FloatTensor<B>>(qkv_id);
        let d_out = grads.consume::<B>(&ops.node);
        let dqkv = B::psa_attention_backward(qkv, out, lse, d_out, num_heads, key_dim, scale);
        let [qkv_node] = ops.parents;
        if let Some(node) = qkv_node {
            grads.register::<B>(node.id, dqkv);
        }
    }
}

impl<B: PsaBackend, C: CheckpointStrategy> PsaBackend for Autodiff<B, C> {
    fn psa_attention_forward(
        qkv: FloatTensor<Self>,
        num_heads: usize,
        key_dim: usize,
        scale: f32,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let prep = PsaAttentionBackward.prepare::<C>([qkv.node.clone()]).compute_bound().stateful();
        match prep {
            OpsKind::Tracked(mut prep) => {
                let qkv_id = prep.checkpoint(&qkv);
                let (out, lse) = B::psa_attention_forward(qkv.primitive, num_heads, key_dim, scale);
                let state = (qkv_id, out.clone(), lse.clone(), num_heads, key_dim, scale);
                (prep.finish(state, out), FloatTensor::<Self>::new(lse))
            }
            OpsKind::UnTracked(prep) => {
                let (out, lse) = B::psa_attention_forward(qkv.primitive, num_heads, key_dim, scale);
                (prep.finish(out), FloatTensor::<Self>::new(lse))
            }
        }
    }

    fn psa_attention_backward(
        qkv: FloatTensor<Self>,
        out: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        d_out: FloatTensor<Self>,
        num_heads: usize,
        key_dim: usize,
        scale: f32,
    ) -> FloatTensor<Self> {
        let g = B::psa_attention_backward(
            qkv.primitive,
            out.primitive,
            lse.primitive,
            d_out.primitive,
            num_heads,
            key_dim,
            scale,
        );
        FloatTensor::<Self>::new(g)
    }
}
