//! [`NhwcBackend`] for `Flex` (CPU): f32 loops over contiguous channel rows, output rows in parallel (rayon);
//! other dtypes take the reference.
use burn::backend::flex::FlexTensor;
use burn::backend::Flex;
use burn::tensor::{DType, TensorData};

use super::{reference, NhwcBackend, PoolSpec};
use crate::flex_buf::{dense, par_filled};

impl NhwcBackend for Flex {
    fn max_pool2d_nhwc(x: FlexTensor, spec: PoolSpec) -> FlexTensor {
        if x.dtype() != DType::F32 {
            return reference::max_pool2d::<Self>(x, spec);
        }
        let [b, h, w, c] = dims4(&x);
        let [oh, ow] = spec.out_hw(h, w);
        let x = dense(x);
        let xs: &[f32] = x.as_slice().expect("contiguous f32");
        let out = par_filled(
            b * oh * ow * c,
            ow * c,
            f32::NEG_INFINITY,
            || (),
            |_, row, y| {
                let (bi, oy) = (row / oh, row % oh);
                for ky in 0..spec.kernel[0] {
                    let Some(iy) = tap(oy, ky, spec.stride[0], spec.padding[0], h) else { continue };
                    let src = &xs[(bi * h + iy) * w * c..][..w * c];
                    for (ox, dst) in y.chunks_exact_mut(c).enumerate() {
                        for kx in 0..spec.kernel[1] {
                            if let Some(ix) = tap(ox, kx, spec.stride[1], spec.padding[1], w) {
                                // NaN propagates as in PyTorch's max-pool (`v > m || v.is_nan()`)
                                for (m, &v) in dst.iter_mut().zip(&src[ix * c..(ix + 1) * c]) {
                                    *m = if v > *m || v.is_nan() { v } else { *m };
                                }
                            }
                        }
                    }
                }
            },
        );
        FlexTensor::from_data(TensorData::new(out, [b, oh, ow, c]))
    }

    fn cat_channels_nhwc(xs: Vec<FlexTensor>) -> FlexTensor {
        if xs.iter().any(|x| x.dtype() != DType::F32) {
            return reference::cat_channels::<Self>(xs);
        }
        let [b, h, w, _] = dims4(&xs[0]);
        let xs: Vec<FlexTensor> = xs.into_iter().map(dense).collect();
        let parts: Vec<(&[f32], usize)> =
            xs.iter().map(|x| (x.as_slice().expect("contiguous f32"), dims4(x)[3])).collect();
        let ct: usize = parts.iter().map(|p| p.1).sum();
        let pixels = b * h * w;
        // rows of 64 pixels per task
        let out = par_filled(
            pixels * ct,
            64 * ct,
            0.0,
            || (),
            |_, t, y| {
                let p0 = t * 64;
                for (i, dst) in y.chunks_exact_mut(ct).enumerate() {
                    let mut off = 0;
                    for &(src, ci) in &parts {
                        dst[off..off + ci].copy_from_slice(&src[(p0 + i) * ci..(p0 + i + 1) * ci]);
                        off += ci;
                    }
                }
            },
        );
        FlexTensor::from_data(TensorData::new(out, [b, h, w, ct]))
    }

    fn upsample2x_nhwc(x: FlexTensor) -> FlexTensor {
        if x.dtype() != DType::F32 {
            return reference::upsample2x::<Self>(x);
        }
        let [b, h, w, c] = dims4(&x);
        let x = dense(x);
        let xs: &[f32] = x.as_slice().expect("contiguous f32");
        let out = par_filled(
            b * 4 * h * w * c,
            2 * w * c,
            0.0,
            || (),
            |_, row, y| {
                let (bi, oy) = (row / (2 * h), row % (2 * h));
                let src = &xs[(bi * h + oy / 2) * w * c..][..w * c];
                for (ox, dst) in y.chunks_exact_mut(c).enumerate() {
                    dst.copy_from_slice(&src[(ox / 2) * c..(ox / 2 + 1) * c]);
                }
            },
        );
        FlexTensor::from_data(TensorData::new(out, [b, 2 * h, 2 * w, c]))
    }
}

fn dims4(x: &FlexTensor) -> [usize; 4] {
    let s = x.layout().shape();
    assert_eq!(s.num_dims(), 4, "NHWC op: expected a 4-D tensor, got {s:?}");
    [s[0], s[1], s[2], s[3]]
}

/// Input index of output index `o`, tap `k` (`o·stride + k − padding`), `None` in the padding.
#[inline(always)]
fn tap(o: usize, k: usize, stride: usize, padding: usize, n: usize) -> Option<usize> {
    (o * stride + k).checked_sub(padding).filter(|&i| i < n)
}
