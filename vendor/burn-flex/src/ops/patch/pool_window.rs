//! 2D max pooling over any window without dilation, such as ResNet's 3×3 of stride 2 with
//! padding 1 after its first convolution, a plane per rayon task.
//!
//! Upstream burn-flex 0.22.1 runs every 2D max pool through its 3D pooling with indices,
//! working out each output's window with divisions and comparing value by value, also at
//! inference where no indices are needed: at 224 px and batch 32 that one pooling took a
//! sixth of ResNet-18's inference. Here, without indices, each output row first takes the
//! maximum of its window's input rows for the whole row at once (in vector instructions),
//! then each output the maximum of its window's columns of that; with indices, each window is
//! read in upstream's order from bounds worked out once per row and column, 16 whole windows
//! of a row side by side where the stride is 1 or 2. The results are
//! upstream's: NaN anywhere in a window gives NaN, with the index of its last NaN; ties give
//! the first maximum's index (row by row). Only the sign of a zero may differ where a window
//! holds both 0 and −0 and no indices are asked for.

use alloc::vec::Vec;
use core::mem::MaybeUninit;

use burn_backend::DType;
use burn_backend::ops::IntTensorOps;
use burn_std::{Bytes, IntDType, Shape};
use rayon::prelude::*;

use super::pool::Index;
use super::{assume_written, par_written};
use crate::{Flex, FlexTensor, Layout};

/// Whether this module computes this pooling of `x`: f32 `[batch, channels, h, w]`, no
/// dilation, no ceil mode, and padding at most half the window (as PyTorch requires), so
/// that every window holds at least one input value.
pub(crate) fn applies(
    x: &FlexTensor,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    ceil_mode: bool,
) -> bool {
    let shape = x.layout().shape();
    let fits = |axis: usize| {
        let side = shape[2 + axis];
        kernel[axis] > 0
            && stride[axis] > 0
            && 2 * padding[axis] <= kernel[axis]
            && side > 0
            && side + 2 * padding[axis] >= kernel[axis]
    };
    x.dtype() == DType::F32
        && shape.num_dims() == 4
        && dilation == [1, 1]
        && !ceil_mode
        && fits(0)
        && fits(1)
}

/// Sizes of one pooling.
#[derive(Clone, Copy)]
struct Window {
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    input: [usize; 2],
    output: [usize; 2],
}

impl Window {
    fn new(x: &Shape, kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Window {
        let input = [x[2], x[3]];
        let output = core::array::from_fn(|a| {
            (input[a] + 2 * padding[a] - kernel[a]) / stride[a] + 1
        });
        Window {
            kernel,
            stride,
            padding,
            input,
            output,
        }
    }

    /// The input positions `[lo, hi)` along `axis` in the window of output position `o`.
    fn range(&self, axis: usize, o: usize) -> (usize, usize) {
        let start = o * self.stride[axis];
        let lo = start.saturating_sub(self.padding[axis]);
        let hi = (start + self.kernel[axis] - self.padding[axis]).min(self.input[axis]);
        (lo, hi)
    }

    fn ranges(&self, axis: usize) -> Vec<(usize, usize)> {
        (0..self.output[axis]).map(|o| self.range(axis, o)).collect()
    }

    fn out_shape(&self, x: &Shape) -> Shape {
        Shape::from(alloc::vec![x[0], x[1], self.output[0], self.output[1]])
    }
}

/// The larger of the two, NaN winning (as upstream's comparison lets it).
#[inline(always)]
fn nan_max(max: f32, v: f32) -> f32 {
    if v > max || v.is_nan() { v } else { max }
}

/// The pooled tensor (see [`applies`]).
pub(crate) fn max_pool2d(
    x: FlexTensor,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
) -> FlexTensor {
    let x = x.into_contiguous();
    let shape = x.layout().shape().clone();
    let window = Window::new(&shape, kernel, stride, padding);
    let [h, w] = window.input;
    let [oh, ow] = window.output;
    let (rows, columns) = (window.ranges(0), window.ranges(1));
    let data: &[f32] = x.storage();
    let out_shape = window.out_shape(&shape);
    let out = par_written(out_shape.num_elements(), oh * ow, |i, out| {
        let plane = &data[i * h * w..][..h * w];
        let mut most = alloc::vec![0f32; w];
        for (out_row, &(y0, y1)) in out.chunks_exact_mut(ow).zip(&rows) {
            most.copy_from_slice(&plane[y0 * w..][..w]);
            for y in y0 + 1..y1 {
                for (m, &v) in most.iter_mut().zip(&plane[y * w..][..w]) {
                    *m = nan_max(*m, v);
                }
            }
            for (o, &(x0, x1)) in out_row.iter_mut().zip(&columns) {
                let window = &most[x0..x1];
                o.write(window[1..].iter().fold(window[0], |m, &v| nan_max(m, v)));
            }
        }
    });
    FlexTensor::new(
        Bytes::from_elems(out),
        Layout::contiguous(out_shape),
        DType::F32,
    )
}

/// The pooled tensor and, for each output, the position in its input plane (`y · w + x`)
/// that it came from: as i32 where `dtype` asks for it and every position fits, as i64
/// otherwise (as `pool::max_pool2d_2x2_with_indices`).
pub(crate) fn max_pool2d_with_indices(
    x: FlexTensor,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dtype: IntDType,
) -> (FlexTensor, FlexTensor) {
    let shape = x.layout().shape();
    if dtype == IntDType::I32 && shape[2].saturating_mul(shape[3]) <= i32::MAX as usize {
        with_indices::<i32>(x, kernel, stride, padding)
    } else {
        with_indices::<i64>(x, kernel, stride, padding)
    }
}

fn with_indices<I: Index>(
    x: FlexTensor,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
) -> (FlexTensor, FlexTensor) {
    let x = x.into_contiguous();
    let shape = x.layout().shape().clone();
    let plan = Plan::new(Window::new(&shape, kernel, stride, padding));
    let data: &[f32] = x.storage();
    let out_shape = plan.window.out_shape(&shape);
    let len = out_shape.num_elements();
    let [h, w] = plan.window.input;
    let [oh, ow] = plan.window.output;
    let (mut out, mut indices) = (Vec::with_capacity(len), Vec::with_capacity(len));
    out.spare_capacity_mut()[..len]
        .par_chunks_mut((oh * ow).max(1))
        .zip(indices.spare_capacity_mut()[..len].par_chunks_mut((oh * ow).max(1)))
        .enumerate()
        .for_each(|(i, (out, indices))| plan.pool(&data[i * h * w..][..h * w], out, indices));
    // SAFETY: each plane's task wrote all `oh · ow` values of both.
    let (out, indices) = unsafe {
        out.set_len(len);
        indices.set_len(len);
        (out, indices)
    };
    (
        FlexTensor::new(
            Bytes::from_elems(out),
            Layout::contiguous(out_shape.clone()),
            DType::F32,
        ),
        FlexTensor::new(
            Bytes::from_elems::<I>(indices),
            Layout::contiguous(out_shape),
            I::DTYPE,
        ),
    )
}

/// One pooling with indices worked out for every plane: each output row's and column's
/// window, and which columns' windows lie whole inside the input.
pub(super) struct Plan {
    window: Window,
    rows: Vec<(usize, usize)>,
    columns: Vec<(usize, usize)>,
    /// The output columns whose windows lie whole inside the input (consecutive ones).
    whole: core::ops::Range<usize>,
    /// Whether whole windows go `LANES` at a time: there are that many, and positions fit in
    /// u32.
    in_lanes: bool,
}

impl Plan {
    fn new(window: Window) -> Plan {
        let (rows, columns) = (window.ranges(0), window.ranges(1));
        let [h, w] = window.input;
        let is_whole = |&(x0, x1): &(usize, usize)| x1 - x0 == window.kernel[1];
        let first_whole = columns.iter().position(is_whole).unwrap_or(columns.len());
        let whole_count = columns[first_whole..]
            .iter()
            .take_while(|c| is_whole(c))
            .count();
        let whole = first_whole..first_whole + whole_count;
        let in_lanes = whole.len() >= LANES && u32::try_from(h * w).is_ok();
        Plan {
            window,
            rows,
            columns,
            whole,
            in_lanes,
        }
    }

    /// The plan for pooling `x` (see [`applies`]).
    pub fn of(x: &Shape, kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Plan {
        Plan::new(Window::new(x, kernel, stride, padding))
    }

    /// `[h, w]` of an input plane and of an output plane.
    pub fn sides(&self) -> [[usize; 2]; 2] {
        [self.window.input, self.window.output]
    }

    /// Pools one input `plane` into `out`, and each output's position in the plane
    /// (`y · w + x`) into `indices`, every value of both written.
    pub fn pool<I: Index>(
        &self,
        plane: &[f32],
        out: &mut [MaybeUninit<f32>],
        indices: &mut [MaybeUninit<I>],
    ) {
        let (kernel, stride) = (self.window.kernel, self.window.stride);
        let (w, ow) = (self.window.input[1], self.window.output[1]);
        let (columns, whole) = (&self.columns, &self.whole);
        let out_rows = out.chunks_exact_mut(ow).zip(indices.chunks_exact_mut(ow));
        for ((out, indices), &(y0, y1)) in out_rows.zip(&self.rows) {
            let mut ox = 0;
            while ox < ow {
                // Whole windows go `LANES` at a time; the last such group ends with the last
                // whole window, overlapping the one before (same values again).
                let lanes = self.in_lanes && whole.contains(&ox);
                let first = ox.min(whole.end.saturating_sub(LANES));
                let x0 = columns[first].0;
                let found = match stride[1] {
                    1 if lanes => lanes_max::<1>(plane, w, (y0, y1), x0, kernel[1]),
                    2 if lanes => lanes_max::<2>(plane, w, (y0, y1), x0, kernel[1]),
                    _ => {
                        let (max, at) = window_max(plane, w, (y0, y1), columns[ox]);
                        out[ox].write(max);
                        indices[ox].write(I::from_position(at));
                        ox += 1;
                        continue;
                    }
                };
                let (max, at) = found;
                for l in 0..LANES {
                    out[first + l].write(max[l]);
                    indices[first + l].write(I::from_position(at[l] as usize));
                }
                ox = first + LANES;
            }
        }
    }
}

/// The maximum of one window, input rows `y0..y1` and columns `x0..x1` of a `w` wide
/// `plane`, and its position (`y · w + x`), in upstream's order: row by row, a later value
/// taking over where greater or NaN.
#[inline(always)]
fn window_max(
    plane: &[f32],
    w: usize,
    (y0, y1): (usize, usize),
    (x0, x1): (usize, usize),
) -> (f32, usize) {
    let (mut max, mut at) = (plane[y0 * w + x0], y0 * w + x0);
    for y in y0..y1 {
        for (x, &v) in (x0..x1).zip(&plane[y * w + x0..y * w + x1]) {
            if v > max || v.is_nan() {
                (max, at) = (v, y * w + x);
            }
        }
    }
    (max, at)
}

/// Output columns pooled side by side by [`lanes_max`]: 16 floats fill an AVX-512 register.
const LANES: usize = 16;

/// [`window_max`] of [`LANES`] whole windows of one output row at once, `S` columns apart,
/// the first starting at column `x0`, each `kernel_w` wide: the same comparisons in the same
/// order, lane by lane, so that they run in vector instructions (the stride a constant, so
/// that the strided reads become shuffles). Positions as u32: the caller checks that they fit.
/// One output at a time, the 3×3 pool of stride 2 ResNet-18 trains with was scalar code with
/// a branch per value: 5 % of its training at batch 16 on a Zen 5 EPYC (perf). Each lane
/// keeps only the step of the window (`(y − y0)·kernel_w + kx`) its maximum came from, the
/// same for all lanes at each step, and the positions are made from it at the end: with the
/// position itself kept, a different value per lane at every step, the compiler vectorised
/// half of the lanes and left the others scalar (5 % of ResNet-18's training again).
#[inline(always)]
fn lanes_max<const S: usize>(
    plane: &[f32],
    w: usize,
    (y0, y1): (usize, usize),
    x0: usize,
    kernel_w: usize,
) -> ([f32; LANES], [u32; LANES]) {
    let span = S * (LANES - 1) + 1;
    let first = &plane[y0 * w + x0..][..span];
    let mut max: [f32; LANES] = core::array::from_fn(|l| first[S * l]);
    let mut from = [0u32; LANES];
    let mut step = 0u32;
    for y in y0..y1 {
        for kx in 0..kernel_w {
            let row = &plane[y * w + x0 + kx..][..span];
            let values: [f32; LANES] = core::array::from_fn(|l| row[S * l]);
            for l in 0..LANES {
                let v = values[l];
                let later = v > max[l] || v.is_nan();
                max[l] = if later { v } else { max[l] };
                from[l] = if later { step } else { from[l] };
            }
            step += 1;
        }
    }
    let kernel_w = kernel_w.max(1) as u32;
    let at = core::array::from_fn(|l| {
        let (dy, dx) = (from[l] / kernel_w, from[l] % kernel_w);
        ((y0 + dy as usize) * w + x0 + dx as usize + S * l) as u32
    });
    (max, at)
}

/// The gradient with respect to the pooled input `x` (see [`applies`]): each output's
/// gradient added at the position in its plane that `indices` names (overlapping windows,
/// as 3×3 of stride 2, can name a position more than once), zero where no window's maximum
/// lies; a plane per rayon task. Upstream zeroes the whole input-sized gradient on the
/// calling thread first (ResNet-18's 3×3 pool at 224 px and batch 32: 103 MB while the other
/// cores wait), then scatters plane by plane. Indices of any integer type: i32 and i64 as
/// they are, others cast to i64; one outside its plane is skipped, as upstream skips a
/// negative one.
pub(crate) fn max_pool2d_backward(
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
    let planes = shape[0] * shape[1];
    let plane = shape[2] * shape[3];
    let (grad, indices) = (grad.into_contiguous(), indices.into_contiguous());
    let grad: &[f32] = grad.storage();
    let indices: &[I] = indices.storage();
    let out_plane = grad.len() / planes.max(1);
    let dx = par_written(shape.num_elements(), plane, |i, dx| {
        dx.iter_mut().for_each(|v| {
            v.write(0.0);
        });
        // SAFETY: every value was just written.
        let dx = unsafe { assume_written(dx) };
        let grads = grad[i * out_plane..][..out_plane].iter();
        for (&g, &index) in grads.zip(&indices[i * out_plane..][..out_plane]) {
            if let Some(v) = usize::try_from(index.position())
                .ok()
                .and_then(|at| dx.get_mut(at))
            {
                *v += g;
            }
        }
    });
    FlexTensor::new(Bytes::from_elems(dx), Layout::contiguous(shape), DType::F32)
}
