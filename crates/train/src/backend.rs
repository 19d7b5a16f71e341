//! [`TrainBackend`]: what the loss and the assigner need of a backend — the model's ops ([`YoloBackend`]: PSA
//! attention, top-k, box decode) plus the fused CIoU, box-loss, BCE-with-logits and one-hot BCE ops, the one-op loss branch and the task-aligned assigner of
//! `kernels-cubecl`. Blanket impl:
//! `Flex`, `Wgpu`, `Cuda`, `CubeBackend<R, ..>`, `Fusion<B>` and `Autodiff<B>` of those.
use kernels_cubecl::bbox_loss::BboxLossBackend;
use kernels_cubecl::bce::BceWithLogitsBackend;
use kernels_cubecl::bce_onehot::BceOneHotBackend;
use kernels_cubecl::ciou::CiouLossBackend;
use kernels_cubecl::tal::TalBackend;
use yolo26_model::YoloBackend;

use kernels_cubecl::branch_loss::BranchLossBackend;

/// A backend with every custom op the training losses use.
pub trait TrainBackend:
    YoloBackend
    + CiouLossBackend
    + BboxLossBackend
    + BceWithLogitsBackend
    + BceOneHotBackend
    + TalBackend
    + BranchLossBackend
{
}

impl<B> TrainBackend for B where
    B: YoloBackend
        + CiouLossBackend
        + BboxLossBackend
        + BceWithLogitsBackend
        + BceOneHotBackend
        + TalBackend
        + BranchLossBackend
{
}
