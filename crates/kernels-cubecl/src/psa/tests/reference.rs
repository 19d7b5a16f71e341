//! The trait's default implementation (`Flex`): tensor rearrangements around the FA reference.
use burn::backend::{Autodiff, Flex};
use burn::tensor::DType;

use super::*;

#[test]
fn reference_psa_autodiff_flex_grads() {
    for (i, c) in CASES.iter().enumerate() {
        check_autodiff::<Autodiff<Flex>>(&Default::default(), c, DType::F32, 5000 + i as u64);
    }
}

#[test]
fn reference_psa_forward_flex() {
    for (i, c) in CASES.iter().enumerate() {
        check_forward::<Flex>(&Default::default(), c, DType::F32, 5100 + i as u64);
    }
}
