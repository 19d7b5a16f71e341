//! Test helpers shared by the detect-decode, CIoU and BCE tests (deterministic inputs, error measures,
//! host ↔ device transfers, NaN-poisoned outputs).
#![allow(dead_code)]

use burn::tensor::{backend::Backend, DType, Shape, Tensor, TensorData, TensorPrimitive};
use burn_cubecl::{kernel::into_contiguous, tensor::CubeTensor, BoolElement, CubeBackend, CubeRuntime};

/// xorshift64* — deterministic inputs without a `rand` dependency.
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }
    /// `n` values uniform in `[-amp, amp)`.
    pub fn uniform(&mut self, n: usize, amp: f32) -> Vec<f32> {
        (0..n).map(|_| (self.unit() * 2.0 - 1.0) * amp).collect()
    }
}

pub(crate) fn round_to(x: Vec<f32>, dtype: DType) -> Vec<f32> {
    match dtype {
        DType::F16 => x.into_iter().map(|v| half::f16::from_f32(v).to_f32()).collect(),
        DType::BF16 => x.into_iter().map(|v| half::bf16::from_f32(v).to_f32()).collect(),
        _ => x,
    }
}

/// `max |got − want| / max(max |want|, floor)`; panics on a length mismatch or any non-finite value (NaN
/// poison left in an unwritten element fails here).
pub(crate) fn rel_err_floor(name: &str, got: &[f32], want: &[f64], floor: f64) -> f64 {
    assert_eq!(got.len(), want.len(), "{name}: length");
    if let Some(i) = got.iter().position(|v| !v.is_finite()) {
        panic!("{name}: non-finite value {} at flat index {i} (unwritten or overflow)", got[i]);
    }
    assert!(want.iter().all(|v| v.is_finite()), "{name}: non-finite reference");
    let scale = want.iter().fold(0.0f64, |a, &b| a.max(b.abs())).max(floor);
    let err = got.iter().zip(want).fold(0.0f64, |a, (&g, &w)| a.max((g as f64 - w).abs()));
    err / scale
}

/// Asserts `rel_err ≤ tol` (scale floor 1e-2) and returns the measured error.
pub(crate) fn assert_close(what: &str, got: &[f32], want: &[f64], tol: f64) -> f64 {
    let e = rel_err_floor(what, got, want, 1e-2);
    eprintln!("  {what}: rel err {e:.3e} (tol {tol:.0e})");
    assert!(e <= tol, "{what}: relative error {e:.3e} > {tol:.0e}");
    e
}

/// Relative tolerance by storage dtype.
pub(crate) fn tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2e-3,
        DType::BF16 => 2e-2,
        _ => 1e-5,
    }
}

pub(crate) fn to_vec<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().to_vec::<f32>().unwrap()
}

pub(crate) fn to_vec_f64<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

/// A tensor of `dtype` from f32 host values.
pub(crate) fn tensor<B: Backend, const D: usize>(
    data: &[f32],
    shape: [usize; D],
    dtype: DType,
    device: &B::Device,
) -> Tensor<B, D> {
    let t = Tensor::<B, D>::from_data(TensorData::new(data.to_vec(), shape), device);
    if t.dtype() == dtype {
        t
    } else {
        t.cast(dtype)
    }
}

/// `data` (row-major `[b, x, y]`) as a strided `[b, x, y]` view: stored as `[b, y, x]` and transposed with
/// `swap_dims(1, 2)`, so the last axis has stride `x` (the layout the strided-input tests feed the kernels).
pub(crate) fn transposed_view<B: Backend>(data: &[f32], [b, x, y]: [usize; 3], device: &B::Device) -> Tensor<B, 3> {
    let mut byx = vec![0.0f32; data.len()];
    for bi in 0..b {
        for xi in 0..x {
            for yi in 0..y {
                byx[(bi * y + yi) * x + xi] = data[(bi * x + xi) * y + yi];
            }
        }
    }
    Tensor::<B, 3>::from_data(TensorData::new(byx, [b, y, x]), device).swap_dims(1, 2)
}

pub(crate) type Cb<R, BT> = CubeBackend<R, f32, i32, BT>;

/// A tight device tensor for the raw launchers (CUDA may pitch `from_data` rows; `into_contiguous` fixes it).
pub(crate) fn upload<R: CubeRuntime, BT: BoolElement, const D: usize>(
    data: &[f32],
    shape: [usize; D],
    dtype: DType,
    device: &R::Device,
) -> CubeTensor<R> {
    into_contiguous(tensor::<Cb<R, BT>, D>(data, shape, dtype, device).into_primitive().tensor())
}

/// A tensor filled with NaN, built 1-D (never pitched) and viewed with `shape` and tight strides.
pub(crate) fn poisoned<R: CubeRuntime, BT: BoolElement, const D: usize>(
    shape: [usize; D],
    dtype: DType,
    device: &R::Device,
) -> CubeTensor<R> {
    let n = shape.iter().product::<usize>();
    let t = Tensor::<Cb<R, BT>, 1>::full([n], f32::NAN, device);
    let t: CubeTensor<R> = if t.dtype() == dtype { t } else { t.cast(dtype) }.into_primitive().tensor();
    CubeTensor::new_contiguous(t.client, t.device, Shape::new(shape), t.handle, t.dtype)
}

pub(crate) fn download<R: CubeRuntime, BT: BoolElement, const D: usize>(t: CubeTensor<R>) -> Vec<f32> {
    to_vec(Tensor::<Cb<R, BT>, D>::from_primitive(TensorPrimitive::Float(t)))
}

/// `data` (row-major `[rows, cols]`) on the device with a row pitch of `pitch ≥ cols` elements: a tight
/// `[rows, pitch]` buffer viewed as `[rows, cols]` with strides `[pitch, 1]` (what CUDA's `from_data` may
/// return; built by hand so every runtime sees pitched rows). The padding holds −7.
pub(crate) fn pitched_rows<R: CubeRuntime, BT: BoolElement>(
    data: &[f32],
    [rows, cols]: [usize; 2],
    pitch: usize,
    device: &R::Device,
) -> CubeTensor<R> {
    let mut padded = vec![-7.0f32; rows * pitch];
    for r in 0..rows {
        padded[r * pitch..r * pitch + cols].copy_from_slice(&data[r * cols..(r + 1) * cols]);
    }
    let mut t = upload::<R, BT, 2>(&padded, [rows, pitch], DType::F32, device);
    t.meta =
        Box::new(cubecl::zspace::metadata::Metadata::new(Shape::new([rows, cols]), cubecl::zspace::strides![pitch, 1]));
    t
}
