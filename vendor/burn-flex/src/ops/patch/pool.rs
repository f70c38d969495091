//! 2×2 max pooling with stride 2 (no padding, no dilation), the pooling of SmallCnn and of
//! most small CNNs, as one pass over each pair of rows, a plane per rayon task.
//!
//! Upstream burn-flex 0.22.1 computes every 2D max pool through its general 3D pooling with
//! indices, with per-element window arithmetic, also at inference where no indices are
//! needed: there the first block's pooling cost more than its convolution. The results are
//! upstream's, NaN included: a window holding a NaN gives NaN and the index of its last NaN;
//! ties give the first maximum's index (row by row).

use alloc::vec;

use burn_backend::DType;
use burn_std::{Bytes, Shape};
use rayon::prelude::*;

use super::par_written;
use crate::{FlexTensor, Layout};

/// Whether the fast path computes this pooling of a `[batch, channels, h, w]` f32 tensor.
pub(crate) fn applies(
    x: &FlexTensor,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    ceil_mode: bool,
) -> bool {
    let shape = x.layout().shape();
    let (h, w) = (shape[2], shape[3]);
    x.dtype() == DType::F32
        && kernel == [2, 2]
        && stride == [2, 2]
        && padding == [0, 0]
        && dilation == [1, 1]
        && h >= 2
        && w >= 2
        // With ceil_mode, odd sizes get a last half window: upstream's case.
        && (!ceil_mode || (h % 2 == 0 && w % 2 == 0))
}

/// The window's values in upstream's order, and its maximum's position in that order.
#[inline(always)]
fn window_max(values: [f32; 4]) -> (f32, usize) {
    let (mut max, mut at) = (values[0], 0);
    for (i, &v) in values.iter().enumerate().skip(1) {
        if v > max || v.is_nan() {
            (max, at) = (v, i);
        }
    }
    (max, at)
}

/// Output shape and the input as a contiguous `[planes, h, w]` slice.
fn geometry(x: &FlexTensor) -> (Shape, usize, usize, usize, usize) {
    let shape = x.layout().shape();
    let (h, w) = (shape[2], shape[3]);
    let out = Shape::from(alloc::vec![shape[0], shape[1], h / 2, w / 2]);
    (out, h, w, h / 2, w / 2)
}

/// The pooled tensor (see [`applies`]).
pub(crate) fn max_pool2d_2x2(x: FlexTensor) -> FlexTensor {
    let x = x.into_contiguous();
    let (shape, h, w, oh, ow) = geometry(&x);
    let data: &[f32] = x.storage();
    let out = par_written(shape.num_elements(), oh * ow, |i, out| {
        let plane = &data[i * h * w..][..h * w];
        for (oy, out_row) in out.chunks_exact_mut(ow).enumerate() {
            let top = &plane[2 * oy * w..][..2 * ow];
            let bottom = &plane[(2 * oy + 1) * w..][..2 * ow];
            for ((o, t), b) in out_row
                .iter_mut()
                .zip(top.chunks_exact(2))
                .zip(bottom.chunks_exact(2))
            {
                o.write(window_max([t[0], t[1], b[0], b[1]]).0);
            }
        }
    });
    FlexTensor::new(Bytes::from_elems(out), Layout::contiguous(shape), DType::F32)
}

/// The pooled tensor and, for each output, the position in its input plane (`y · w + x`,
/// as i64) that it came from, for the backward pass.
pub(crate) fn max_pool2d_2x2_with_indices(x: FlexTensor) -> (FlexTensor, FlexTensor) {
    let x = x.into_contiguous();
    let (shape, h, w, oh, ow) = geometry(&x);
    let data: &[f32] = x.storage();
    let mut out = vec![0f32; shape.num_elements()];
    let mut indices = vec![0i64; shape.num_elements()];
    out.par_chunks_mut(oh * ow)
        .zip(indices.par_chunks_mut(oh * ow))
        .zip(data.par_chunks(h * w))
        .for_each(|((out, indices), plane)| {
            for oy in 0..oh {
                let (top, bottom) = (2 * oy * w, (2 * oy + 1) * w);
                for ox in 0..ow {
                    let x0 = 2 * ox;
                    let at = [top + x0, top + x0 + 1, bottom + x0, bottom + x0 + 1];
                    let (max, which) = window_max(at.map(|i| plane[i]));
                    out[oy * ow + ox] = max;
                    indices[oy * ow + ox] = at[which] as i64;
                }
            }
        });
    (
        FlexTensor::new(Bytes::from_elems(out), Layout::contiguous(shape.clone()), DType::F32),
        FlexTensor::new(Bytes::from_elems(indices), Layout::contiguous(shape), DType::I64),
    )
}
