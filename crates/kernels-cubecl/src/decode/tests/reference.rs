//! Reference path (`Flex`, `Autodiff<Flex>`) and the anchor grid.
use burn::backend::{Autodiff, Flex};

use super::*;

#[test]
fn decode_anchor_grid_matches_make_anchors() {
    // make_anchors([(2, 3), (1, 2)], [8, 16], 0.5): level by level, rows first, x fastest.
    let d = anchor_grid_data(&[(2, 3), (1, 2)], &[8.0, 16.0]);
    assert_eq!(d.shape.as_slice(), &[3, 8]);
    let v = d.to_vec::<f32>().unwrap();
    assert_eq!(&v[0..8], &[0.5, 1.5, 2.5, 0.5, 1.5, 2.5, 0.5, 1.5]);
    assert_eq!(&v[8..16], &[0.5, 0.5, 0.5, 1.5, 1.5, 1.5, 0.5, 0.5]);
    assert_eq!(&v[16..24], &[8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 16.0, 16.0]);
    // 640×640 input of a 3-level head: 8400 anchors, P3 first.
    let t: Tensor<Flex, 2> = anchor_grid(&[(80, 80), (40, 40), (20, 20)], &[8.0, 16.0, 32.0], &Default::default());
    assert_eq!(t.dims(), [3, 8400]);
    assert_eq!(t.dtype(), DType::F32);
    let v = to_vec(t);
    assert_eq!((v[6399], v[8400 + 6399], v[2 * 8400 + 6399]), (79.5, 79.5, 8.0));
    assert_eq!((v[6400], v[8400 + 6400], v[2 * 8400 + 6400]), (0.5, 0.5, 16.0));
    assert_eq!((v[8399], v[8400 + 8399], v[2 * 8400 + 8399]), (19.5, 19.5, 32.0));
}

#[test]
fn decode_reference_flex() {
    let device = Default::default();
    for (n, c) in small_cases().iter().enumerate() {
        for format in [BoxFormat::Xyxy, BoxFormat::Xywh] {
            check_forward::<Flex>(&device, c, format, 3000 + n as u64);
            check_autodiff::<Autodiff<Flex>>(&device, c, format, DType::F32, 3100 + n as u64);
        }
    }
}

#[test]
fn decode_reference_flex_f64() {
    // F64 stays F64 in the reference path.
    let device = Default::default();
    let c = &small_cases()[1];
    check_autodiff::<Autodiff<Flex>>(&device, c, BoxFormat::Xywh, DType::F64, 3200);
}
