//! Parameter counts of all five scales (ultralytics' summaries, both heads) and GFLOPs.

use burn::backend::Flex;
use yolo26_model::info::{count_params, gflops, gflops_per_layer};
use yolo26_model::{Scale, Yolo26Config};

#[test]
fn parameter_counts_equal_ultralytics() {
    let expected = [
        (Scale::N, 2_572_280usize),
        (Scale::S, 10_009_784),
        (Scale::M, 21_896_248),
        (Scale::L, 26_299_704),
        (Scale::X, 58_993_368),
    ];
    for (scale, n) in expected {
        let m = Yolo26Config::new(scale, 80).init::<Flex>(&Default::default());
        assert_eq!(count_params(&m), n, "yolo26{scale} parameters");
    }
}

#[test]
fn any_number_of_classes() {
    let m = Yolo26Config::new(Scale::N, 3).init::<Flex>(&Default::default());
    let out = m.forward(burn::tensor::Tensor::ones([1, 3, 64, 96], &Default::default()));
    assert_eq!(out.one2one.scores.dims(), [1, 3, 8 * 12 + 4 * 6 + 2 * 3]);
    assert_eq!(out.one2many.boxes.dims(), [1, 4, 8 * 12 + 4 * 6 + 2 * 3]);
}

#[test]
fn gflops_close_to_ultralytics() {
    // ultralytics' model.info() at 640 (unfused, both heads): n 6.2397, m 75.6351
    let m = Yolo26Config::new(Scale::N, 80).init::<Flex>(&Default::default());
    let g = gflops(&m, 640);
    println!("yolo26n GFLOPs {g:.4} per layer {:?}", gflops_per_layer(&m, 640).map(|x| (x * 1e3).round()));
    assert!((g - 6.2397).abs() < 0.001, "yolo26n GFLOPs {g}");
    let m = Yolo26Config::new(Scale::M, 80).init::<Flex>(&Default::default());
    let g = gflops(&m, 640);
    assert!((g - 75.6351).abs() < 0.01, "yolo26m GFLOPs {g}");
}

/// `batch_norm_nhwc` (statistics as means over the rows of the `[B·H·W, C]` matrix, in groups of rows) equals
/// Burn's `BatchNorm` on the permuted NCHW view: outputs, updated running statistics and gradients under autodiff
/// (training), outputs from the running statistics without autodiff. On Flex with several factorisations of the
/// 60 rows (one reduction, three, one over the last axis only) and the backend's own choice, and on wgpu (a CubeCL
/// backend: reductions in steps).
#[test]
fn batch_norm_nhwc_equals_burn_batch_norm() {
    use burn::backend::Autodiff;
    let dev = Default::default();
    for group in [Some([60, 1, 1]), Some([5, 3, 4]), Some([1, 1, 60]), Some([1, 60, 1]), None] {
        batch_norm_case::<Autodiff<Flex>>(&dev, group);
    }
    #[cfg(feature = "wgpu")]
    {
        use burn::backend::wgpu::{Wgpu, WgpuDevice};
        assert_eq!(kernels_cubecl::conv::row_stages::<Wgpu>(60, 7), [1, 2, 30]);
        batch_norm_case::<Autodiff<Wgpu>>(&WgpuDevice::DefaultDevice, Some([5, 3, 4]));
        batch_norm_case::<Autodiff<Wgpu>>(&WgpuDevice::DefaultDevice, None);
    }
}

fn batch_norm_case<A>(dev: &A::Device, group: Option<[usize; 3]>)
where
    A: burn::tensor::backend::AutodiffBackend + yolo26_model::YoloBackend,
    A::InnerBackend: yolo26_model::YoloBackend,
{
    use burn::module::{AutodiffModule, Param};
    use burn::nn::BatchNormConfig;
    use burn::tensor::{Distribution, Tensor};
    use kernels_cubecl::conv::Activation;
    use yolo26_model::nn::conv::{batch_norm_nhwc, batch_norm_nhwc_staged};
    let close = |a: Vec<f32>, b: Vec<f32>, what: &str| {
        assert_eq!(a.len(), b.len(), "{what}");
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{what}[{i}] (groups of {group:?}): {x} vs {y}");
        }
    };
    let vec = |t: Tensor<A, 1>| t.into_data().to_vec::<f32>().unwrap();
    let make = || {
        let mut bn = BatchNormConfig::new(7).with_epsilon(1e-3).with_momentum(0.03).init::<A>(dev);
        let p = |seed: f32| {
            Tensor::<A, 1>::from_floats([0.0f32, 1., 2., 3., 4., 5., 6.], dev).mul_scalar(0.37).add_scalar(seed).sin()
        };
        bn.gamma = Param::from_tensor(p(0.3).add_scalar(1.5));
        bn.beta = Param::from_tensor(p(1.1));
        bn.running_mean = burn::module::RunningState::new(p(2.0));
        bn.running_var = burn::module::RunningState::new(p(0.7).abs().add_scalar(0.2));
        bn
    };
    let ours_fwd = |bn: &burn::nn::BatchNorm<A>, x: Tensor<A, 4>| match group {
        Some(g) => batch_norm_nhwc_staged(bn, x, g, Activation::None),
        None => batch_norm_nhwc(bn, x, Activation::None),
    };
    let x = Tensor::<A, 4>::random([2, 5, 6, 7], Distribution::Normal(0.4, 2.0), dev);
    let r = Tensor::<A, 4>::random([2, 5, 6, 7], Distribution::Normal(0.0, 1.0), dev);
    let (ours, burn) = (make(), make());
    let (xo, xb) = (x.clone().require_grad(), x.clone().require_grad());
    let yo = ours_fwd(&ours, xo.clone());
    let yb = burn.forward(xb.clone().permute([0, 3, 1, 2])).permute([0, 2, 3, 1]);
    close(vec(yo.clone().flatten(0, 3)), vec(yb.clone().flatten(0, 3)), "train output");
    close(vec(ours.running_mean.value()), vec(burn.running_mean.value()), "running mean");
    close(vec(ours.running_var.value()), vec(burn.running_var.value()), "running var");
    let (go, gb) = ((yo * r.clone()).sum().backward(), (yb * r).sum().backward());
    let g = |t: &Tensor<A, 4>, grads| t.grad(grads).unwrap().flatten::<1>(0, 3).into_data().to_vec::<f32>().unwrap();
    close(g(&xo, &go), g(&xb, &gb), "dx");
    let gv = |p: &Param<Tensor<A, 1>>, grads| p.val().grad(grads).unwrap().into_data().to_vec::<f32>().unwrap();
    close(gv(&ours.gamma, &go), gv(&burn.gamma, &gb), "dgamma");
    close(gv(&ours.beta, &go), gv(&burn.beta, &gb), "dbeta");
    // inference: the running statistics (no autodiff)
    let (ours, burn) = (make().valid(), make().valid());
    let x = x.inner();
    let yo = match group {
        Some(g) => batch_norm_nhwc_staged(&ours, x.clone(), g, Activation::None),
        None => batch_norm_nhwc(&ours, x.clone(), Activation::None),
    }
    .flatten::<1>(0, 3);
    let yb = burn.forward(x.permute([0, 3, 1, 2])).permute([0, 2, 3, 1]).flatten::<1>(0, 3);
    close(yo.into_data().to_vec().unwrap(), yb.into_data().to_vec().unwrap(), "inference output");
}
