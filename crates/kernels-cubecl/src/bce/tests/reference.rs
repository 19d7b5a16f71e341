//! Reference path: `Flex`, `Autodiff<Flex>`.
use burn::backend::{Autodiff, Flex};

use super::*;

#[test]
fn bce_reference_flex() {
    let device = Default::default();
    check_forward::<Flex>(&device, 9000);
    check_autodiff::<Autodiff<Flex>>(&device, [2, 37, 5], DType::F32, 9100);
    check_autodiff::<Autodiff<Flex>>(&device, [1, 1, 1], DType::F32, 9101);
}
