//! ultralytics `zeropower_via_newtonschulz5` (`optim/muon.py`): five quintic Newton–Schulz iterations that map a
//! matrix to (approximately) the orthogonal factor of its polar decomposition.

use burn::prelude::*;

/// `G [rows, cols]` → `X [rows, cols]`: `X = G/(‖G‖_F + 1e-7)`, transposed while `rows > cols`, then five times
/// `A = X·Xᵀ; B = b·A + c·A·A; X = a·X + B·X` with `(a, b, c) = (3.4445, −4.7750, 2.0315)`.
///
/// ultralytics runs this in bfloat16 (fp32 accumulation in the matmuls); here it runs in the tensor's own float
/// type (f32 in training), so results agree with ultralytics' to bf16 rounding (≈ 4e-3 relative), not bitwise.
/// ultralytics also batches same-width matrices with zero rows as padding, which does not change the result.
pub fn newton_schulz5<B: Backend>(g: Tensor<B, 2>) -> Tensor<B, 2> {
    const A: f64 = 3.4445;
    const B_: f64 = -4.7750;
    const C: f64 = 2.0315;
    let [rows, cols] = g.dims();
    let norm = g.clone().square().sum().sqrt().add_scalar(1e-7).reshape([1, 1]);
    let mut x = g / norm;
    let tall = rows > cols;
    if tall {
        x = x.transpose();
    }
    for _ in 0..5 {
        let a = x.clone().matmul(x.clone().transpose());
        let b = a.clone().mul_scalar(B_) + a.clone().matmul(a).mul_scalar(C);
        x = x.clone().mul_scalar(A) + b.matmul(x);
    }
    if tall {
        x = x.transpose();
    }
    x
}
