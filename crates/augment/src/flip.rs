//! `RandomFlip` (horizontal / vertical) and `Format`'s channel swap.

use crate::Sample;

/// Horizontal flip of a sample, in place: `np.fliplr(img)` and `Instances.fliplr(w)`: `x1' = w - x2`,
/// `x2' = w - x1` (ultralytics flips the `xywh` centre, `x' = w - x`; the same box up to f32 rounding).
pub fn flip_lr(s: &mut Sample) {
    let w = s.img.width() as usize;
    let stride = w * 3;
    for row in s.img.chunks_exact_mut(stride) {
        // pixel x <-> pixel w - 1 - x: the left half against the right half walked from its end (an odd
        // middle pixel stays)
        let (left, right) = row.split_at_mut(w / 2 * 3);
        for (a, b) in left.chunks_exact_mut(3).zip(right[w % 2 * 3..].rchunks_exact_mut(3)) {
            a.swap_with_slice(b);
        }
    }
    let wf = w as f32;
    for b in &mut s.boxes {
        *b = [wf - b[2], b[1], wf - b[0], b[3]];
    }
}

/// Vertical flip of a sample, in place: `np.flipud(img)` and `Instances.flipud(h)`: `y1' = h - y2`, `y2' = h - y1`.
pub fn flip_ud(s: &mut Sample) {
    let (w, h) = (s.img.width() as usize, s.img.height() as usize);
    let stride = w * 3;
    let buf: &mut [u8] = &mut s.img;
    for y in 0..h / 2 {
        let (top, bottom) = buf.split_at_mut((h - 1 - y) * stride);
        top[y * stride..(y + 1) * stride].swap_with_slice(&mut bottom[..stride]);
    }
    let hf = h as f32;
    for b in &mut s.boxes {
        *b = [b[0], hf - b[3], b[2], hf - b[1]];
    }
}

/// Swap the first and third channel of every pixel (RGB ↔ BGR; `Format._format_img`'s `img[::-1]` on CHW).
pub fn swap_rb(img: &mut image::RgbImage) {
    for px in img.chunks_exact_mut(3) {
        px.swap(0, 2);
    }
}
