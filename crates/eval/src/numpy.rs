//! Bit-exact re-implementations of the few numpy 2.x routines the references use.
//!
//! Each function documents the numpy routine it mirrors. They are public so that callers can reproduce reference
//! numbers (e.g. when writing their own metrics), but they are small helpers, not a numpy port.

/// `np.spacing(1)` = machine epsilon of f64, used by pycocotools as `eps` in `tp / (fp + tp + eps)`.
pub const SPACING_1: f64 = f64::EPSILON;

/// `np.linspace(start, stop, num, endpoint=True)` with numpy's formula: `i * ((stop - start) / (num - 1)) + start`,
/// and the last element set to `stop` exactly.
pub fn linspace(start: f64, stop: f64, num: usize) -> Vec<f64> {
    match num {
        0 => Vec::new(),
        1 => vec![start],
        _ => {
            let step = (stop - start) / (num - 1) as f64;
            let mut v: Vec<f64> = (0..num).map(|i| i as f64 * step + start).collect();
            v[num - 1] = stop;
            v
        }
    }
}

/// numpy's pairwise summation (`DOUBLE_pairwise_sum`, used by `np.sum` / `np.add.reduce` / `np.mean` on a
/// contiguous float64 array): 8 accumulators for blocks up to 128 elements, recursive halving above.
pub fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut res = 0.0;
        for &x in a {
            res += x;
        }
        res
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - (n % 8) {
            for (j, rj) in r.iter_mut().enumerate() {
                *rj += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
    }
}

/// `np.mean(a)` for a 1-D float64 array: pairwise sum divided by the length (NaN for an empty slice, as numpy).
pub fn mean(a: &[f64]) -> f64 {
    pairwise_sum(a) / a.len() as f64
}

/// `np.searchsorted(a, v, side='left')` for a non-decreasing `a`: the first index `i` with `a[i] >= v`.
pub fn searchsorted_left(a: &[f64], v: f64) -> usize {
    a.partition_point(|&x| x < v)
}

/// `np.interp(x, xp, fp, left, right)` for one point, with numpy's `arr_interp` rules (`xp` non-decreasing):
/// `left` below `xp[0]`, `right` above `xp[-1]`, `fp[j]` where `xp[j] == x` or at the last point, otherwise
/// `slope * (x - xp[j]) + fp[j]` with the NaN fall-backs numpy applies. `xp` and `fp` must have the same, non-zero,
/// length.
pub fn interp1(x: f64, xp: &[f64], fp: &[f64], left: f64, right: f64) -> f64 {
    let n = xp.len();
    debug_assert!(n > 0 && n == fp.len());
    if x > xp[n - 1] {
        return right;
    }
    if x < xp[0] {
        return left;
    }
    // numpy's binary_search_with_guess returns the j with xp[j] <= x < xp[j+1] (the last j with xp[j] <= x).
    let j = xp.partition_point(|&v| v <= x) - 1;
    if j == n - 1 || xp[j] == x {
        return fp[j];
    }
    let slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
    let mut r = slope * (x - xp[j]) + fp[j];
    if r.is_nan() {
        r = slope * (x - xp[j + 1]) + fp[j + 1];
        if r.is_nan() && fp[j] == fp[j + 1] {
            r = fp[j];
        }
    }
    r
}

/// `np.interp(x, xp, fp, left, right)` for many points; `left`/`right` default to `fp[0]`/`fp[-1]` as in numpy.
pub fn interp(x: &[f64], xp: &[f64], fp: &[f64], left: Option<f64>, right: Option<f64>) -> Vec<f64> {
    let l = left.unwrap_or(fp[0]);
    let r = right.unwrap_or(fp[fp.len() - 1]);
    x.iter().map(|&v| interp1(v, xp, fp, l, r)).collect()
}

/// `np.trapezoid(y, x)`: pairwise sum of `(x[i+1] - x[i]) * (y[i+1] + y[i]) / 2.0`.
pub fn trapezoid(y: &[f64], x: &[f64]) -> f64 {
    let terms: Vec<f64> = (1..y.len()).map(|i| (x[i] - x[i - 1]) * (y[i] + y[i - 1]) / 2.0).collect();
    pairwise_sum(&terms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linspace_matches_numpy_values() {
        // np.linspace(.5, 0.95, 10)[5] == 0.75 exactly and [1] == 0.55 (repr 0.55); last is stop.
        let t = linspace(0.5, 0.95, 10);
        assert_eq!(t[5], 0.75);
        assert_eq!(t[9], 0.95);
        assert_eq!(t[0], 0.5);
        let r = linspace(0.0, 1.0, 101);
        assert_eq!(r[100], 1.0);
        assert_eq!(r[1], 0.01);
    }

    #[test]
    fn interp_edges() {
        let xp = [0.0, 1.0, 1.0, 2.0];
        let fp = [0.0, 1.0, 5.0, 6.0];
        assert_eq!(interp1(-1.0, &xp, &fp, 9.0, 7.0), 9.0);
        assert_eq!(interp1(3.0, &xp, &fp, 9.0, 7.0), 7.0);
        assert_eq!(interp1(1.0, &xp, &fp, 9.0, 7.0), 5.0); // last duplicate wins, as numpy
        assert_eq!(interp1(0.5, &xp, &fp, 9.0, 7.0), 0.5);
        assert_eq!(interp1(2.0, &xp, &fp, 9.0, 7.0), 6.0);
    }

    #[test]
    fn pairwise_sum_blocks() {
        let a: Vec<f64> = (0..1000).map(|i| (i as f64).sqrt()).collect();
        let naive: f64 = a.iter().sum();
        assert!((pairwise_sum(&a) - naive).abs() < 1e-9);
        assert_eq!(pairwise_sum(&[]), 0.0);
    }
}
