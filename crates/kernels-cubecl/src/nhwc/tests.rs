//! `Flex`'s loops against the reference (Burn's own ops on `Flex`): exact, since max and copies do no arithmetic.
use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use burn::tensor::{Tensor, TensorData};

use super::{cat_channels, float, max_pool2d, reference, tensor, upsample2x, PoolSpec};
use crate::test_util::Rng;

fn random(shape: [usize; 4], lo: f32, hi: f32, seed: u64) -> Tensor<Flex, 4> {
    let mut rng = Rng::new(seed);
    let n = shape.iter().product();
    Tensor::from_data(TensorData::new((0..n).map(|_| rng.range(lo, hi)).collect::<Vec<f32>>(), shape), &FlexDevice)
}

fn assert_same(got: Tensor<Flex, 4>, want: Tensor<Flex, 4>, what: &str) {
    assert_eq!(got.dims(), want.dims(), "{what}: shape");
    let (g, w) = (got.into_data().to_vec::<f32>().unwrap(), want.into_data().to_vec::<f32>().unwrap());
    assert!(g.iter().zip(&w).all(|(a, b)| a.to_bits() == b.to_bits()), "{what}: values differ");
}

#[test]
fn nhwc_flex_max_pool_equals_reference() {
    let specs = [
        ([5, 5], [1, 1], [2, 2]), // SPPF
        ([3, 3], [2, 2], [1, 1]),
        ([2, 2], [2, 2], [0, 0]),
        ([3, 1], [1, 2], [1, 0]),
    ];
    for (i, (kernel, stride, padding)) in specs.into_iter().enumerate() {
        let spec = PoolSpec { kernel, stride, padding };
        // all values negative: a padded tap must never win (padding is -inf, not 0)
        for (lo, hi) in [(-1.0, 1.0), (-5.0, -1.0)] {
            let x = random([2, 7, 9, 5], lo, hi, 10 + i as u64);
            let want = tensor(reference::max_pool2d::<Flex>(float(x.clone()), spec));
            assert_same(max_pool2d(x, spec), want, &format!("pool {spec:?}"));
        }
    }
    // a non-contiguous input (NHWC view of an NCHW tensor)
    let x = random([2, 6, 7, 8], -1.0, 1.0, 3).permute([0, 2, 3, 1]);
    let spec = PoolSpec { kernel: [5, 5], stride: [1, 1], padding: [2, 2] };
    let want = tensor(reference::max_pool2d::<Flex>(float(x.clone()), spec));
    assert_same(max_pool2d(x, spec), want, "pool of a permuted view");
}

#[test]
fn nhwc_flex_cat_and_upsample_equal_reference() {
    let a = random([2, 5, 3, 4], -1.0, 1.0, 1);
    let b = random([2, 3, 5, 6], -1.0, 1.0, 2).permute([0, 2, 1, 3]); // [2, 5, 3, 6], strided
    let c = random([2, 5, 3, 8], -1.0, 1.0, 3).narrow(3, 2, 3); // [2, 5, 3, 3], a channel slice
    let xs = vec![a, b, c];
    let want = tensor(reference::cat_channels::<Flex>(xs.iter().cloned().map(float).collect()));
    assert_same(cat_channels(xs), want, "cat");
    for x in [random([2, 3, 4, 5], -1.0, 1.0, 4), random([1, 4, 5, 3], -1.0, 1.0, 5).permute([0, 2, 1, 3])] {
        let want = tensor(reference::upsample2x::<Flex>(float(x.clone())));
        assert_same(upsample2x(x), want, "upsample");
    }
}
