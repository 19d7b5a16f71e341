//! The `Fusion<B>` side of every op, written once: a backend call registered as one opaque custom operation of
//! the fusion stream.
//!
//! An op's `Fusion` impl checks its shapes, names its outputs (shape, dtype) and passes a closure that runs the
//! inner backend's implementation on the inputs' primitives:
//!
//! ```ignore
//! let [loss] = custom_op::<B, 2, 1>("bce_with_logits_forward", [logits, targets], [(shape, dtype)],
//!     move |[x, t]| [Prim::Float(B::bce_with_logits_forward(x.float(), t.float()))]);
//! ```
//!
//! When the stream executes the operation, each input is fetched from the handle container as a float, int or
//! bool primitive according to its dtype, and each output is registered the same way. Scalar parameters (`k`,
//! configs, dtypes) travel captured in the closure.
use std::sync::Arc;

use burn::backend::ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};
use burn::tensor::ops::{BoolTensor, FloatTensor, IntTensor};
use burn::tensor::{DType, Shape};
use burn_fusion::{
    stream::{Operation, OperationStreams},
    FusionBackend, FusionRuntime, FusionTensor,
};

type Handles<B> = HandleContainer<<<B as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle>;

/// A tensor of the inner backend, of the kind its dtype says.
pub enum Prim<B: FusionBackend> {
    /// A float tensor.
    Float(FloatTensor<B>),
    /// An int tensor.
    Int(IntTensor<B>),
    /// A bool tensor.
    Bool(BoolTensor<B>),
}

impl<B: FusionBackend> Prim<B> {
    /// The float primitive. The kind follows the dtype the op declared, so a mismatch is a bug in the op.
    pub fn float(self) -> FloatTensor<B> {
        match self {
            Prim::Float(t) => t,
            _ => unreachable!("custom op: a float input declared with a non-float dtype"),
        }
    }

    /// The int primitive (see [`Prim::float`]).
    pub fn int(self) -> IntTensor<B> {
        match self {
            Prim::Int(t) => t,
            _ => unreachable!("custom op: an int input declared with a non-int dtype"),
        }
    }
}

fn fetch<B: FusionBackend>(handles: &mut Handles<B>, t: &TensorIr) -> Prim<B> {
    if t.dtype.is_float() {
        Prim::Float(handles.get_float_tensor::<B>(t))
    } else if t.dtype.is_bool() {
        Prim::Bool(handles.get_bool_tensor::<B>(t))
    } else {
        Prim::Int(handles.get_int_tensor::<B>(t))
    }
}

fn store<B: FusionBackend>(handles: &mut Handles<B>, t: &TensorIr, p: Prim<B>) {
    match p {
        Prim::Float(x) => handles.register_float_tensor::<B>(&t.id, x),
        Prim::Int(x) => handles.register_int_tensor::<B>(&t.id, x),
        Prim::Bool(x) => handles.register_bool_tensor::<B>(&t.id, x),
    }
}

type Exec<B, const I: usize, const O: usize> = Arc<dyn Fn([Prim<B>; I]) -> [Prim<B>; O] + Send + Sync>;

/// The operation the stream keeps: the IR description and the closure.
struct ClosureOp<B: FusionBackend, const I: usize, const O: usize> {
    desc: CustomOpIr,
    exec: Exec<B, I, O>,
}

impl<B: FusionBackend, const I: usize, const O: usize> core::fmt::Debug for ClosureOp<B, I, O> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClosureOp").field("desc", &self.desc).finish()
    }
}

impl<B: FusionBackend, const I: usize, const O: usize> Operation<B::FusionRuntime> for ClosureOp<B, I, O> {
    fn execute(&self, handles: &mut Handles<B>) {
        let (inputs, outputs) = self.desc.as_fixed::<I, O>();
        let prims = inputs.each_ref().map(|t| fetch::<B>(handles, t));
        for (t, p) in outputs.iter().zip((self.exec)(prims)) {
            store::<B>(handles, t, p);
        }
    }
}

/// Registers `name` as a custom operation of `inputs`' fusion stream with outputs of the given shapes and dtypes;
/// `exec` runs the inner backend on the inputs' primitives (in order) and returns the outputs' (in order).
pub fn custom_op<B: FusionBackend, const I: usize, const O: usize>(
    name: &'static str,
    inputs: [FusionTensor<B::FusionRuntime>; I],
    outputs: [(Shape, DType); O],
    exec: impl Fn([Prim<B>; I]) -> [Prim<B>; O] + Send + Sync + 'static,
) -> [FusionTensor<B::FusionRuntime>; O] {
    assert!(I > 0, "custom_op {name}: an op needs at least one input (it names the stream and the client)");
    let client = inputs[0].client.clone();
    let streams = OperationStreams::with_inputs(inputs.iter());
    let outputs = outputs.map(|(shape, dtype)| TensorIr::uninit(client.create_empty_handle(), shape, dtype));
    let inputs = inputs.map(|t| t.into_ir());
    let desc = CustomOpIr::new(name, &inputs, &outputs);
    client
        .register(streams, OperationIr::Custom(desc.clone()), ClosureOp::<B, I, O> { desc, exec: Arc::new(exec) })
        .outputs::<O>()
}

type ExecN<B, const O: usize> = Arc<dyn Fn(Vec<Prim<B>>) -> [Prim<B>; O] + Send + Sync>;

/// The operation the stream keeps for [`custom_op_n`] (any number of inputs).
struct ClosureOpN<B: FusionBackend, const O: usize> {
    desc: CustomOpIr,
    exec: ExecN<B, O>,
}

impl<B: FusionBackend, const O: usize> core::fmt::Debug for ClosureOpN<B, O> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClosureOpN").field("desc", &self.desc).finish()
    }
}

impl<B: FusionBackend, const O: usize> Operation<B::FusionRuntime> for ClosureOpN<B, O> {
    fn execute(&self, handles: &mut Handles<B>) {
        let prims = self.desc.inputs.iter().map(|t| fetch::<B>(handles, t)).collect();
        for (t, p) in self.desc.outputs.iter().zip((self.exec)(prims)) {
            store::<B>(handles, t, p);
        }
    }
}

/// [`custom_op`] for a list of inputs whose length is known only at run time (e.g. a concatenation).
pub fn custom_op_n<B: FusionBackend, const O: usize>(
    name: &'static str,
    inputs: Vec<FusionTensor<B::FusionRuntime>>,
    outputs: [(Shape, DType); O],
    exec: impl Fn(Vec<Prim<B>>) -> [Prim<B>; O] + Send + Sync + 'static,
) -> [FusionTensor<B::FusionRuntime>; O] {
    assert!(
        !inputs.is_empty(),
        "custom_op {name}: an op needs at least one input (it names the stream and the client)"
    );
    let client = inputs[0].client.clone();
    let streams = OperationStreams::with_inputs(inputs.iter());
    let outputs = outputs.map(|(shape, dtype)| TensorIr::uninit(client.create_empty_handle(), shape, dtype));
    let inputs: Vec<TensorIr> = inputs.into_iter().map(|t| t.into_ir()).collect();
    let desc = CustomOpIr::new(name, &inputs, &outputs);
    client
        .register(streams, OperationIr::Custom(desc.clone()), ClosureOpN::<B, O> { desc, exec: Arc::new(exec) })
        .outputs::<O>()
}
