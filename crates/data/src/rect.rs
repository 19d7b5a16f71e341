//! Rectangular batches: ultralytics `BaseDataset.set_rectangle` (8.4.190, `ultralytics/data/base.py`).

/// Result of [`set_rectangle`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RectBatches {
    /// Dataset indices sorted by aspect ratio `h / w` (ultralytics `irect = ar.argsort()`; the dataset's order after
    /// `set_rectangle` is `order[0], order[1], ...`).
    pub order: Vec<usize>,
    /// Batch shape `[h, w]` of every batch (ultralytics `batch_shapes`).
    pub batch_shapes: Vec<[usize; 2]>,
    /// Batch index of every position in `order` (ultralytics `batch`): `position / batch_size`.
    pub batch_of: Vec<usize>,
}

/// Ultralytics `set_rectangle` for images of shapes `[h, w]`: sort by `ar = h / w` (numpy's default quicksort
/// `argsort`; ties are ordered by index here, numpy's order of exact ties may differ), then per batch of
/// `batch_size` consecutive images `shape = [maxi, 1]` if `maxi < 1`, `[1, 1 / mini]` if `mini > 1`, else
/// `[1, 1]`, and `batch_shape = ceil(shape * imgsz / stride + pad) * stride` (f64 as numpy).
pub fn set_rectangle(shapes: &[[u32; 2]], imgsz: usize, batch_size: usize, stride: usize, pad: f64) -> RectBatches {
    let n = shapes.len();
    let bs = batch_size.max(1);
    let ar: Vec<f64> = shapes.iter().map(|s| s[0] as f64 / s[1] as f64).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| ar[a].total_cmp(&ar[b]));
    let nb = n.div_ceil(bs);
    let batch_shapes = (0..nb)
        .map(|i| {
            let ari = &order[i * bs..((i + 1) * bs).min(n)];
            let mini = ari.iter().map(|&k| ar[k]).fold(f64::INFINITY, f64::min);
            let maxi = ari.iter().map(|&k| ar[k]).fold(f64::NEG_INFINITY, f64::max);
            let s = if maxi < 1.0 {
                [maxi, 1.0]
            } else if mini > 1.0 {
                [1.0, 1.0 / mini]
            } else {
                [1.0, 1.0]
            };
            s.map(|v| ((v * imgsz as f64 / stride as f64 + pad).ceil() as usize) * stride)
        })
        .collect();
    RectBatches { order, batch_shapes, batch_of: (0..n).map(|i| i / bs).collect() }
}
