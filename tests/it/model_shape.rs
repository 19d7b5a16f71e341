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
