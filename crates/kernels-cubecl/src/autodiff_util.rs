//! The `Autodiff<B, C>` side of every op, written once: the forward runs on the inner backend and, when a parent
//! is tracked, one backward step is recorded that turns the output's gradient into the parents' gradients.
//!
//! ```ignore
//! let t = targets.primitive;                              // not differentiated: a plain inner tensor
//! differentiable::<B, C, _, 1>([logits], |[x]| {           // the parents, as inner tensors
//!     (B::bce_with_logits_forward(x.clone(), t.clone()), (x, t))   // the output, what the backward needs
//! }, |(x, t), d_loss, _needs| [Some(B::bce_with_logits_backward(x, t, d_loss))])
//! ```
//!
//! The state (inner-backend tensors — handles, cheap to clone — and scalars) is kept by the autodiff graph until
//! the backward pass, and dropped at once when no parent is tracked. `needs[i]` says whether parent `i` wants a gradient (an untracked input
//! need not be differentiated); a `None` gradient registers nothing. Ops whose backward needs a forward output
//! put it in the state (computed once, in the forward).
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

/// A backward step whose rule is a function.
type Rule<B, S, const N: usize> = fn(S, FloatTensor<B>, [bool; N]) -> [Option<FloatTensor<B>>; N];

struct Step<B: Backend, S, const N: usize> {
    rule: Rule<B, S, N>,
}

impl<B: Backend, S, const N: usize> core::fmt::Debug for Step<B, S, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Step")
    }
}

impl<B, S, const N: usize> Backward<B, N> for Step<B, S, N>
where
    B: Backend,
    S: Clone + Send + core::fmt::Debug + 'static,
{
    type State = S;

    fn backward(self, ops: Ops<S, N>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let d_out = grads.consume::<B>(&ops.node);
        let needs = ops.parents.each_ref().map(|p| p.is_some());
        for (parent, grad) in ops.parents.iter().zip((self.rule)(ops.state, d_out, needs)) {
            if let (Some(node), Some(grad)) = (parent, grad) {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

/// One differentiable output of the `parents`: `forward(inner parents)` computes it on the inner backend with the
/// state `rule` needs; `rule(state, d_out, needs)` gives each parent's gradient.
pub fn differentiable<B, C, S, const N: usize>(
    parents: [FloatTensor<Autodiff<B, C>>; N],
    forward: impl FnOnce([FloatTensor<B>; N]) -> (FloatTensor<B>, S),
    rule: Rule<B, S, N>,
) -> FloatTensor<Autodiff<B, C>>
where
    B: Backend,
    C: CheckpointStrategy,
    S: Clone + Send + core::fmt::Debug + 'static,
{
    let forward = |p| {
        let (out, state) = forward(p);
        (out, state, ())
    };
    differentiable_with::<B, C, S, (), N>(parents, forward, rule).0
}

/// [`differentiable`] for ops with more outputs than the differentiable one: `forward` also returns `extra`
/// (values that carry no gradient: statistics, indices, items), handed back next to the output.
pub fn differentiable_with<B, C, S, X, const N: usize>(
    parents: [FloatTensor<Autodiff<B, C>>; N],
    forward: impl FnOnce([FloatTensor<B>; N]) -> (FloatTensor<B>, S, X),
    rule: Rule<B, S, N>,
) -> (FloatTensor<Autodiff<B, C>>, X)
where
    B: Backend,
    C: CheckpointStrategy,
    S: Clone + Send + core::fmt::Debug + 'static,
{
    let nodes = parents.each_ref().map(|t| t.node.clone());
    let inner = parents.map(|t| t.primitive);
    match (Step::<B, S, N> { rule }).prepare::<C>(nodes).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let (out, state, extra) = forward(inner);
            (prep.finish(state, out), extra)
        }
        OpsKind::UnTracked(prep) => {
            let (out, _, extra) = forward(inner);
            (prep.finish(out), extra)
        }
    }
}

/// An inner-backend value as an untracked `Autodiff` tensor (an output that carries no gradient). The tensor type
/// of `Autodiff<B, C>` does not depend on the checkpoint strategy `C`.
pub fn constant<B: Backend>(t: FloatTensor<B>) -> FloatTensor<Autodiff<B>> {
    FloatTensor::<Autodiff<B>>::new(t)
}
