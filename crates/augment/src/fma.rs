//! Run-time detection of the x86-64 FMA instructions.
//!
//! OpenCV's 8-bit `warpAffine` / `cvtColor(COLOR_HSV2BGR)` kernels use fused multiply-adds (`v_fma`), so the exact
//! results need `f32::mul_add`. Without the `fma` target feature that is a libm call; the hot loops are therefore
//! compiled twice (generic and with `#[target_feature(enable = "fma")]`) and picked at run time. Both variants
//! compute the same bits: `mul_add` is an exactly rounded fused multiply-add either way.

/// Whether the CPU has FMA3 and SSE4.1 (`roundss` for `floor` / `round_ties_even`); always `false` off x86-64,
/// where the generic code is used as is.
#[inline]
pub(crate) fn has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("fma") && std::is_x86_feature_detected!("sse4.1")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the CPU also has AVX2 (wider vectors for the same per-lane arithmetic: same bits as [`has_fma`]'s code).
#[inline]
pub(crate) fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_fma() && std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
