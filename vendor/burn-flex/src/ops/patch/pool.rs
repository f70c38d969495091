//! 2×2 max pooling with stride 2 (no padding, no dilation), the pooling of SmallCnn and of
//! most small CNNs, as one pass over each pair of rows, a plane per rayon task.
//!
//! Upstream burn-flex 0.22.1 computes every 2D max pool through its general 3D pooling with
//! indices, with per-element window arithmetic, also at inference where no indices are
//! needed: there the first block's pooling cost more than its convolution. The results are
//! upstream's, NaN included: a window holding a NaN gives NaN and the index of its last NaN;
//! ties give the first maximum's index (row by row). The gradient is written once per input
//! value from its window's index, where upstream zeroes the whole input-sized gradient and
//! then scatters into it.

use alloc::vec;
use alloc::vec::Vec;
use core::mem::MaybeUninit;

use burn_backend::DType;
use burn_backend::ops::IntTensorOps;
use burn_std::{Bytes, IntDType, Shape};
use rayon::prelude::*;

use super::{Element, par_written};
use crate::{Flex, FlexTensor, Layout};

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
fn window_max<T: Element>(values: [T; 4]) -> (T, usize) {
    let (mut max, mut at) = (values[0], 0);
    for (i, &v) in values.iter().enumerate().skip(1) {
        if v > max || v.is_nan() {
            (max, at) = (v, i);
        }
    }
    (max, at)
}

/// `relu(max(window))`, both as burn-flex computes them (NaN stays NaN), for the layers that
/// pool and activate their convolution's output as it is written.
#[inline(always)]
pub(super) fn max_relu<T: Element>(values: [T; 4]) -> T {
    let max = window_max(values).0;
    if max.is_nan() || max > T::zero() {
        max
    } else {
        T::zero()
    }
}

/// `f` of every 2×2 window of `plane` (rows `w` wide), in upstream's order, into `out`
/// (rows `ow` wide): output row `r` pools the plane's rows `2r` and `2r + 1`; an odd last
/// column is left out. Writes every value of `out`.
#[inline(always)]
pub(super) fn pool_rows<T: Element, U>(
    plane: &[T],
    w: usize,
    ow: usize,
    out: &mut [MaybeUninit<U>],
    f: impl Fn([T; 4]) -> U,
) {
    assert!(ow > 0 && 2 * ow <= w && out.len() % ow == 0);
    for (r, out_row) in out.chunks_exact_mut(ow).enumerate() {
        let top = &plane[2 * r * w..][..2 * ow];
        let bottom = &plane[(2 * r + 1) * w..][..2 * ow];
        for ((o, t), b) in out_row
            .iter_mut()
            .zip(top.chunks_exact(2))
            .zip(bottom.chunks_exact(2))
        {
            o.write(f([t[0], t[1], b[0], b[1]]));
        }
    }
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
        pool_rows(&data[i * h * w..][..h * w], w, ow, out, |v| window_max(v).0);
    });
    FlexTensor::new(
        Bytes::from_elems(out),
        Layout::contiguous(shape),
        DType::F32,
    )
}

/// The integer types the indices are written in: flex's default, i32, and i64.
pub(crate) trait Index: burn_std::Element + bytemuck::Pod + Send + Sync {
    const DTYPE: DType;
    fn from_position(position: usize) -> Self;
    fn position(self) -> i64;
}

impl Index for i32 {
    const DTYPE: DType = DType::I32;
    fn from_position(position: usize) -> Self {
        position as i32
    }
    fn position(self) -> i64 {
        self.into()
    }
}

impl Index for i64 {
    const DTYPE: DType = DType::I64;
    fn from_position(position: usize) -> Self {
        position as i64
    }
    fn position(self) -> i64 {
        self
    }
}

/// The pooled tensor and, for each output, the position in its input plane (`y · w + x`)
/// that it came from, for the backward pass: as i32 where `dtype` asks for it (flex's
/// default, so what autodiff asks for) and every position fits, as i64 otherwise. Written as
/// i64 and cast to i32, the cast was one more pass.
pub(crate) fn max_pool2d_2x2_with_indices(
    x: FlexTensor,
    dtype: IntDType,
) -> (FlexTensor, FlexTensor) {
    let shape = x.layout().shape();
    if dtype == IntDType::I32 && shape[2].saturating_mul(shape[3]) <= i32::MAX as usize {
        pool_with_indices::<i32>(x)
    } else {
        pool_with_indices::<i64>(x)
    }
}

fn pool_with_indices<I: Index>(x: FlexTensor) -> (FlexTensor, FlexTensor) {
    let x = x.into_contiguous();
    let (shape, h, w, oh, ow) = geometry(&x);
    let data: &[f32] = x.storage();
    let len = shape.num_elements();
    // Each output plane zips with its input plane: all of them are there.
    assert_eq!(data.len(), len / (oh * ow) * h * w);
    let (mut out, mut indices) = (Vec::with_capacity(len), Vec::with_capacity(len));
    out.spare_capacity_mut()[..len]
        .par_chunks_mut(oh * ow)
        .zip(indices.spare_capacity_mut()[..len].par_chunks_mut(oh * ow))
        .zip(data.par_chunks(h * w))
        .for_each(|((out, indices), plane)| {
            // Zipped, not indexed: with bounds checks and the index looked up in a table of
            // the four positions, this loop was 9 % of a 64 px training step (perf).
            let rows = out.chunks_exact_mut(ow).zip(indices.chunks_exact_mut(ow));
            for (oy, (out, indices)) in rows.enumerate() {
                let (top, bottom) = (2 * oy * w, (2 * oy + 1) * w);
                let windows = (plane[top..][..2 * ow].chunks_exact(2))
                    .zip(plane[bottom..][..2 * ow].chunks_exact(2));
                for (ox, ((o, index), (t, b))) in
                    out.iter_mut().zip(indices).zip(windows).enumerate()
                {
                    let (max, which) = window_max([t[0], t[1], b[0], b[1]]);
                    o.write(max);
                    // Positions 0 and 1 of a window are on its top row, 2 and 3 below.
                    let row = if which < 2 { top } else { bottom };
                    index.write(I::from_position(row + 2 * ox + (which & 1)));
                }
            }
        });
    // SAFETY: each plane's task wrote all `oh · ow` values of both.
    unsafe {
        out.set_len(len);
        indices.set_len(len);
    }
    (
        FlexTensor::new(
            Bytes::from_elems(out),
            Layout::contiguous(shape.clone()),
            DType::F32,
        ),
        FlexTensor::new(
            Bytes::from_elems::<I>(indices),
            Layout::contiguous(shape),
            I::DTYPE,
        ),
    )
}

/// The gradient with respect to the pooled input (see [`applies`]): each window's output
/// gradient at the position `indices` names, zero at its three others and on the last row or
/// column that an odd size leaves out of every window. Indices of any integer type: i32 and
/// i64 as they are, others cast to i64.
pub(crate) fn max_pool2d_2x2_backward(
    x: &FlexTensor,
    grad: FlexTensor,
    indices: FlexTensor,
) -> FlexTensor {
    match indices.dtype() {
        DType::I32 => backward::<i32>(x, grad, indices),
        DType::I64 => backward::<i64>(x, grad, indices),
        _ => backward::<i64>(x, grad, Flex::int_cast(indices, IntDType::I64)),
    }
}

fn backward<I: Index>(x: &FlexTensor, grad: FlexTensor, indices: FlexTensor) -> FlexTensor {
    let shape = x.layout().shape().clone();
    let (h, w) = (shape[2], shape[3]);
    let (oh, ow) = (h / 2, w / 2);
    let (grad, indices) = (grad.into_contiguous(), indices.into_contiguous());
    let grad: &[f32] = grad.storage();
    let indices: &[I] = indices.storage();
    // Positions within a pair of rows, compared as i32: eight to a vector on AVX2.
    assert!(2 * w < i32::MAX as usize, "max_pool2d: rows too long");
    let dx = par_written(shape.num_elements(), h * w, |i, dx| {
        let (grad, indices) = (
            &grad[i * oh * ow..][..oh * ow],
            &indices[i * oh * ow..][..oh * ow],
        );
        let (windows, rest) = dx.split_at_mut(2 * oh * w);
        for rest in rest {
            rest.write(0.0);
        }
        // Each window's gradient and maximum's position (from the top row's start) twice,
        // once per column of the window, so that the loop writing the two rows compares
        // and selects column by column. Written window by window, as they were, it
        // branched on the maximum's random position, and ran at a quarter of the forward
        // pass's speed (SmallCnn's first block, batch 32, 64 px: 4.9 ms, now 1.4).
        let (mut spread, mut at) = (vec![0.0; 2 * ow], vec![0i32; 2 * ow]);
        for (oy, rows) in windows.chunks_exact_mut(2 * w).enumerate() {
            let top_start = (2 * oy * w) as i64;
            let windows = grad[oy * ow..][..ow].iter().zip(&indices[oy * ow..][..ow]);
            let pairs = spread.chunks_exact_mut(2).zip(at.chunks_exact_mut(2));
            for ((spread, at), (&g, &index)) in pairs.zip(windows) {
                spread.fill(g);
                at.fill((index.position() - top_start) as i32);
            }
            let (top, bottom) = rows.split_at_mut(w);
            let columns = top.iter_mut().zip(&mut *bottom).zip(spread.iter().zip(&at));
            for (column, ((top, bottom), (&g, &at))) in columns.enumerate() {
                let column = column as i32;
                top.write(if at == column { g } else { 0.0 });
                bottom.write(if at == column + w as i32 { g } else { 0.0 });
            }
            // An odd width's last column is in no window.
            for value in top[2 * ow..].iter_mut().chain(&mut bottom[2 * ow..]) {
                value.write(0.0);
            }
        }
    });
    FlexTensor::new(Bytes::from_elems(dx), Layout::contiguous(shape), DType::F32)
}
