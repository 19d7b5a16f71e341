//! Output buffers of the Flex (CPU) kernels, built on rayon's pool.
use std::mem::MaybeUninit;

use burn::backend::flex::FlexTensor;

use rayon::prelude::*;

/// `n` values made in parallel chunks of `chunk` (the last one shorter): each chunk is filled with `value`, then
/// given to `f(state, chunk_index, chunk)` (`state` from `init`, as rayon's `for_each_init`). A `vec![value; n]`
/// fills the whole buffer on the calling thread while the pool waits (zeroing the conv outputs that way was 2 % of
/// a CPU forward, all of it serial); here the fill is parallel and each chunk is in cache for `f`.
pub(crate) fn par_filled<S>(
    n: usize,
    chunk: usize,
    value: f32,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize, &mut [f32]) + Sync + Send,
) -> Vec<f32> {
    let mut out: Vec<f32> = Vec::with_capacity(n);
    if n > 0 {
        out.spare_capacity_mut()[..n].par_chunks_mut(chunk.max(1)).enumerate().for_each_init(init, |s, (i, y)| {
            y.fill(MaybeUninit::new(value));
            // SAFETY: every element was just written; `MaybeUninit<f32>` has `f32`'s layout.
            let y = unsafe { &mut *(y as *mut [MaybeUninit<f32>] as *mut [f32]) };
            f(s, i, y);
        });
    }
    // SAFETY: the chunks cover `out[..n]`, and each was filled above.
    unsafe { out.set_len(n) };
    out
}

/// `t` itself when its values are one dense run of its buffer (canonical strides, any start offset: a slice along
/// the leading axes, a chunk of rows), else a contiguous copy. `FlexTensor::to_contiguous` also copies views with
/// an offset (1–2 % of a CPU forward: the chunk views of C3k2 and the weight rows of `forward_chunks`); readers go
/// through `as_slice`, which honours the offset.
pub(crate) fn dense(t: FlexTensor) -> FlexTensor {
    if t.layout().contiguous_offsets().is_some() {
        t
    } else {
        t.to_contiguous()
    }
}
