//! Per-channel sums and means of an NHWC activation, i.e. column reductions of the row-major `[n, C]` matrix
//! (`n = B·H·W`): the convolution's bias gradient here, BatchNorm's batch statistics in the model.
//!
//! CubeCL's reductions run one unit (or plane) per output, so one reduction of 1.6 M rows to 16 columns is nearly
//! serial: on an H200, BatchNorm's transpose-then-reduce took 624 of 857 ms of GPU time in a yolo26n training step
//! at batch 16, and a two-step version still spent 92 ms in its second step, one 32-thread block walking 2,048 rows
//! (`ncu`, 2026-12-06). So on those backends the rows are seen as `[A1, A2, A3, C]` and reduced one axis at a
//! time: about 32k outputs in the first step, little data in the next ones. Autodiff's gradient of a `[1, 1, 1, C]`
//! broadcast sums the same axes in the same order, so the backward passes get the same shape of work. Flex walks
//! rows fast: there `[n, 1, 1, C]`, one reduction.

use burn::tensor::{backend::Backend, Tensor};

use super::Conv2dBackend;

/// Outputs of the first step (enough threads to fill a GPU).
const FIRST_STEP_OUTPUTS: usize = 32_768;
/// Rows left for the last step (one unit per channel walks them).
const LAST_STEP_ROWS: usize = 32;

/// `[A1, A2, A3]` with `A1·A2·A3 = n` for `n` rows of `c` channels (see the module doc): `[n, 1, 1]` where the
/// backend reduces rows fast ([`Conv2dBackend::ROW_REDUCTIONS_ARE_FAST`]), else `A3` the largest divisor of `n` up
/// to 32 and `A2` the largest divisor of `n / A3` up to `32768 / (c·A3)`.
pub fn row_stages<B: Conv2dBackend>(n: usize, c: usize) -> [usize; 3] {
    if B::ROW_REDUCTIONS_ARE_FAST || n == 0 {
        return [n, 1, 1];
    }
    let a3 = largest_divisor_at_most(n, LAST_STEP_ROWS);
    let rest = n / a3;
    let a2 = largest_divisor_at_most(rest, (FIRST_STEP_OUTPUTS / (c.max(1) * a3)).max(1));
    [rest / a2, a2, a3]
}

fn largest_divisor_at_most(n: usize, cap: usize) -> usize {
    (1..=cap.min(n)).rev().find(|d| n.is_multiple_of(*d)).unwrap_or(1)
}

/// `[A1, A2, A3, C] → [1, 1, 1, C]`: the sum (or, with `mean`, the mean: equal group sizes make the mean of means
/// the mean) over the first three axes, one after the other; axes of size 1 are not reduced.
pub fn reduce_rows<B: Backend>(t: Tensor<B, 4>, mean: bool) -> Tensor<B, 4> {
    (0..3).fold(t, |t, d| match t.dims()[d] {
        1 => t,
        _ if mean => t.mean_dim(d),
        _ => t.sum_dim(d),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The factorisation multiplies back to `n`, keeps the first step near 32k outputs and the last near 32 rows,
    /// and is `[n, 1, 1]` on Flex.
    #[cfg(feature = "wgpu")]
    #[test]
    fn row_stages_factor_the_rows() {
        type W = burn::backend::wgpu::CubeBackend<burn::backend::wgpu::WgpuRuntime, f32, i32, u32>;
        for (n, c) in [(16 * 320 * 320, 16), (16 * 20 * 20, 256), (1, 8), (7919, 3), (60, 7), (0, 4)] {
            let s = row_stages::<W>(n, c);
            assert_eq!(s[0] * s[1] * s[2], n, "{n} rows: {s:?}");
            assert_eq!(row_stages::<burn::backend::Flex>(n, c), [n, 1, 1]);
        }
        assert_eq!(row_stages::<W>(16 * 320 * 320, 16), [800, 64, 32]);
        assert_eq!(row_stages::<W>(16 * 20 * 20, 256), [50, 4, 32]);
        let t = Tensor::<burn::backend::Flex, 1>::from_floats(
            [1.0f32, 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12.],
            &Default::default(),
        );
        let x = t.reshape([3, 2, 1, 2]);
        assert_eq!(reduce_rows(x.clone(), false).into_data().to_vec::<f32>().unwrap(), [36.0, 42.0]);
        assert_eq!(reduce_rows(x, true).into_data().to_vec::<f32>().unwrap(), [6.0, 7.0]);
    }
}
