//! Depthwise 2D convolution (one group per channel and one kernel per group: the k×k filters
//! of EfficientNet and MobileNet) and both of its gradients, as direct loops over each
//! channel's plane, planes spread over the rayon threads.
//!
//! Upstream burn-flex 0.22.1 runs the forward pass as its 3D depthwise kernel, which writes
//! every output value once per kernel tap and, for a stride-2 "same" convolution, first copies
//! the input into a padded tensor; the gradients went through [`super::conv`]'s im2col and one
//! small matrix product per channel per image (at EfficientNet-Lite0's 1,152 channels of 7×7,
//! a 49 × 25 × 1 product each). Here every row of the input is first laid out padded and split
//! into its `stride` phases (`padded[j]` at `phase[j % stride][j / stride]`), so that each
//! kernel tap reads a contiguous run: `y[oy, ox] += w[ky, kx] · padded[oy·s + ky·d, ox·s + kx·d]`
//! is one vector multiply-add over the output row, whatever the stride, padding and dilation.
//! - forward: each output row starts as the bias and takes its `k_h · k_w` runs while in cache;
//! - input gradient: the same runs added into a padded, phased accumulator, then cropped;
//! - weight gradient: per channel, a dot product of each output-gradient row with each run,
//!   summed over the images.

use alloc::vec;
use alloc::vec::Vec;

use rayon::prelude::*;

use super::conv::Geometry;
use super::elementwise::zeroed;
use super::epilogue::Epilogue;
use super::{Element, assume_written};

/// Output values of a row that the forward pass sums in registers at a time: one AVX-512
/// vector of f32, two AVX2 ones. Adding each tap's run into the output row in memory, as
/// until 2026-12-06, loaded and stored every output once per tap (and compiled to 4-lane
/// vectors): the depthwise convolutions took over half of EfficientNet-Lite0's inference.
const BLOCK: usize = 16;

/// Output planes a task takes at least: the 7×7 planes of a network's last stages are 49
/// values, too little work to hand to a thread one at a time.
const MIN_TASK_VALUES: usize = 4096;

/// How one channel's plane is laid out padded and split into phases.
#[derive(Clone, Copy)]
struct Phased {
    stride: usize,
    dilation: usize,
    pad: usize,
    w_in: usize,
    /// Values of each phase of a row.
    phase_len: usize,
}

impl Phased {
    fn new(g: &Geometry) -> Phased {
        let (stride, dilation) = (g.stride[1], g.dilation[1]);
        // The padded row reaches as far as the last output's last tap.
        let reach = (g.w_out.max(1) - 1) * stride + (g.k_w - 1) * dilation + 1;
        Phased {
            stride,
            dilation,
            pad: g.pad[1],
            w_in: g.w_in,
            phase_len: reach.div_ceil(stride),
        }
    }

    /// Values of one phased row.
    fn row_len(&self) -> usize {
        self.stride * self.phase_len
    }

    /// Where kernel column `kx`'s run starts in a phased row; `w_out` values follow.
    fn run_start(&self, kx: usize) -> usize {
        let offset = kx * self.dilation;
        (offset % self.stride) * self.phase_len + offset / self.stride
    }

    /// Where each kernel column's run starts.
    fn run_starts(&self, k_w: usize) -> Vec<usize> {
        (0..k_w).map(|kx| self.run_start(kx)).collect()
    }

    /// For phase `r`, the positions `i` whose padded column `r + stride · i` is an input
    /// column (`pad ≤ r + stride · i < pad + w_in`), and the input column of the first.
    fn inside(&self, r: usize) -> (usize, usize, usize) {
        let s = self.stride;
        let lo = self.pad.saturating_sub(r).div_ceil(s);
        let hi = (self.pad + self.w_in).saturating_sub(r).div_ceil(s);
        let hi = hi.min(self.phase_len);
        let lo = lo.min(hi);
        (lo, hi, (r + s * lo).saturating_sub(self.pad))
    }

    /// `row` padded with zeros and split into phases, into `out`.
    fn lay_out<T: Element>(&self, row: &[T], out: &mut [T]) {
        for (r, phase) in out.chunks_exact_mut(self.phase_len.max(1)).enumerate() {
            let (lo, hi, first) = self.inside(r);
            phase[..lo].fill(T::zero());
            let inside = &mut phase[lo..hi];
            if self.stride == 1 {
                inside.copy_from_slice(&row[first..][..inside.len()]);
            } else {
                // Every `stride`-th value, as chunks: the compiler then gathers them in
                // vector shuffles, where indexing took them one at a time (a tenth of
                // EfficientNet-Lite0's inference went to laying out its stride-2 rows).
                let columns = row[first..].chunks(self.stride);
                assert!(columns.len() >= inside.len(), "depthwise: a row too short");
                for (value, column) in inside.iter_mut().zip(columns) {
                    *value = column[0];
                }
            }
            phase[hi..].fill(T::zero());
        }
    }

    /// The input row that the phased row `acc` stands for, into `row`.
    fn crop_into<T: Element>(&self, acc: &[T], row: &mut [T]) {
        for (r, phase) in acc.chunks_exact(self.phase_len.max(1)).enumerate() {
            let (lo, hi, first) = self.inside(r);
            let inside = &phase[lo..hi];
            if self.stride == 1 {
                row[first..][..inside.len()].copy_from_slice(inside);
            } else {
                let columns = row[first..].chunks_mut(self.stride);
                assert!(columns.len() >= inside.len(), "depthwise: a row too short");
                for (column, &value) in columns.zip(inside) {
                    column[0] = value;
                }
            }
        }
    }
}

/// For kernel row `ky`, the output rows whose input row `oy·s + ky·d − pad` lies inside the
/// image, and that input row for each.
fn rows(g: &Geometry, ky: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let (lo, hi) = g.valid_range(0, ky);
    (lo..hi).map(move |oy| (oy, oy * g.stride[0] + ky * g.dilation[0] - g.pad[0]))
}

/// `out[i] += w · run[i]`.
fn multiply_add<T: Element>(out: &mut [T], w: T, run: &[T]) {
    for (o, &r) in out.iter_mut().zip(run) {
        *o += w * r;
    }
}

/// `Σ a[i] · b[i]` over the shorter of the two, in eight partial sums that become vector lanes.
fn dot<T: Element>(a: &[T], b: &[T]) -> T {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut lanes = [T::zero(); 8];
    for (a, b) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for i in 0..8 {
            lanes[i] += a[i] * b[i];
        }
    }
    let done = n / 8 * 8;
    let tail = a[done..]
        .iter()
        .zip(&b[done..])
        .fold(T::zero(), |s, (&a, &b)| s + a * b);
    lanes.into_iter().fold(tail, |s, v| s + v)
}

/// `x`'s plane laid out row by row by [`Phased::lay_out`] into `phased`.
fn lay_out_plane<T: Element>(g: &Geometry, p: &Phased, plane: &[T], phased: &mut [T]) {
    let row_len = p.row_len();
    for (row, out) in plane
        .chunks_exact(g.w_in.max(1))
        .zip(phased.chunks_exact_mut(row_len.max(1)))
    {
        p.lay_out(row, out);
    }
}

/// Whether the convolution is depthwise: one group per input channel, one output channel per
/// group, more than one group (a single channel is an ordinary convolution).
pub(super) fn applies(g: &Geometry) -> bool {
    g.groups > 1 && g.groups == g.c_in && g.c_out == g.c_in
}

/// `y = depthwise(x, weight) + bias`.
pub(super) fn forward<T: Element>(
    g: &Geometry,
    x: &[T],
    weight: &[T],
    bias: Option<&[T]>,
    after: Epilogue<'_, T>,
) -> Vec<T> {
    let (plane_in, plane_out) = (g.h_in * g.w_in, g.out_plane());
    let len = g.batch * g.c_out * plane_out;
    let p = Phased::new(g);
    let taps = g.k_h * g.k_w;
    let starts = p.run_starts(g.k_w);
    // Per kernel row, the output rows whose input row lies inside the image.
    let valid: Vec<(usize, usize)> = (0..g.k_h).map(|ky| g.valid_range(0, ky)).collect();
    let row_len = p.row_len();
    let mut y = Vec::with_capacity(len);
    y.spare_capacity_mut()[..len]
        .par_chunks_mut(plane_out.max(1))
        .with_min_len(MIN_TASK_VALUES.div_ceil(plane_out.max(1)))
        .enumerate()
        .for_each_init(
            // `BLOCK` values beyond the last row: a block that runs past a row's end reads
            // there (or into the next row), into lanes that are never stored.
            || vec![T::zero(); g.h_in * row_len + BLOCK],
            |phased, (i, out)| {
                let c = i % g.c_out;
                let start = bias.map_or(T::zero(), |bias| bias[c]);
                lay_out_plane(g, &p, &x[i * plane_in..][..plane_in], phased);
                let kernel = &weight[c * taps..][..taps];
                for (oy, out_row) in out.chunks_exact_mut(g.w_out.max(1)).enumerate() {
                    for (b, out_block) in out_row.chunks_mut(BLOCK).enumerate() {
                        // The bias, then each tap in kernel order, as the sums were always
                        // made: the same values, kept in registers across the taps.
                        let mut acc = [start; BLOCK];
                        for (ky, &(lo, hi)) in valid.iter().enumerate() {
                            if oy < lo || oy >= hi {
                                continue;
                            }
                            let iy = oy * g.stride[0] + ky * g.dilation[0] - g.pad[0];
                            let row = &phased[iy * row_len + b * BLOCK..];
                            for (kx, &at) in starts.iter().enumerate() {
                                let w = kernel[ky * g.k_w + kx];
                                let run: &[T; BLOCK] = row[at..][..BLOCK].try_into().unwrap();
                                for i in 0..BLOCK {
                                    acc[i] += w * run[i];
                                }
                            }
                        }
                        // Value by value with constant indices: a slice of `acc` (a copy of
                        // `..n`, or of the whole array where the block is full) made the
                        // compiler keep it in memory and split the sums above into pieces.
                        let n = out_block.len();
                        for i in 0..BLOCK {
                            if i < n {
                                out_block[i].write(acc[i]);
                            }
                        }
                    }
                }
                // SAFETY: every row's blocks wrote all of its `w_out` values.
                let out = unsafe { assume_written(out) };
                after.apply(i * plane_out, out);
            },
        );
    // SAFETY: the loop wrote every plane, all `len` values.
    unsafe { y.set_len(len) };
    y
}

/// The input's gradient, from the output's.
pub(super) fn input_grad<T: Element>(g: &Geometry, weight: &[T], dy: &[T]) -> Vec<T> {
    if g.stride == [1, 1] && g.dilation == [1, 1] && g.pad[0] < g.k_h && g.pad[1] < g.k_w {
        // Without stride or dilation, `dx[i] = Σ_k w[k] · dy[i + pad − k]` is the forward
        // convolution of `dy` padded by `k − 1 − pad` with each kernel turned half a turn:
        // the forward pass's register-blocked sums, where the accumulator below loads and
        // stores every value once per tap.
        let taps = g.k_h * g.k_w;
        let turned: Vec<T> = weight
            .chunks_exact(taps.max(1))
            .flat_map(|kernel| kernel.iter().rev().copied())
            .collect();
        let transposed = Geometry {
            h_in: g.h_out,
            w_in: g.w_out,
            h_out: g.h_in,
            w_out: g.w_in,
            pad: [g.k_h - 1 - g.pad[0], g.k_w - 1 - g.pad[1]],
            ..*g
        };
        return forward(&transposed, dy, &turned, None, Epilogue::NONE);
    }
    let (plane_in, plane_out) = (g.h_in * g.w_in, g.out_plane());
    let p = Phased::new(g);
    let taps = g.k_h * g.k_w;
    let starts = p.run_starts(g.k_w);
    let mut dx = zeroed(g.batch * g.c_in * plane_in, T::zero());
    dx.par_chunks_mut(plane_in.max(1))
        .with_min_len(MIN_TASK_VALUES.div_ceil(plane_in.max(1)))
        .enumerate()
        .for_each_init(
            || vec![T::zero(); g.h_in * p.row_len()],
            |acc, (i, dx_plane)| {
                let c = i % g.c_in;
                acc.fill(T::zero());
                let dy_plane = &dy[i * plane_out..][..plane_out];
                let kernel = &weight[c * taps..][..taps];
                for ky in 0..g.k_h {
                    for (oy, iy) in rows(g, ky) {
                        let acc_row = &mut acc[iy * p.row_len()..][..p.row_len()];
                        let dy_row = &dy_plane[oy * g.w_out..][..g.w_out];
                        for kx in 0..g.k_w {
                            let run = &mut acc_row[starts[kx]..][..g.w_out];
                            multiply_add(run, kernel[ky * g.k_w + kx], dy_row);
                        }
                    }
                }
                for (row, acc_row) in dx_plane
                    .chunks_exact_mut(g.w_in.max(1))
                    .zip(acc.chunks_exact(p.row_len().max(1)))
                {
                    p.crop_into(acc_row, row);
                }
            },
        );
    dx
}

/// The kernels' gradient, from the input and the output's gradient, summed over the images.
pub(super) fn weight_grad<T: Element>(g: &Geometry, x: &[T], dy: &[T]) -> Vec<T> {
    let (plane_in, plane_out) = (g.h_in * g.w_in, g.out_plane());
    let p = Phased::new(g);
    let taps = g.k_h * g.k_w;
    let starts = p.run_starts(g.k_w);
    let mut dw = vec![T::zero(); g.c_out * taps];
    dw.par_chunks_mut(taps.max(1))
        .enumerate()
        .for_each_init(
            || vec![T::zero(); g.h_in * p.row_len()],
            |phased, (c, dw_c)| {
                for b in 0..g.batch {
                    let i = b * g.c_in + c;
                    lay_out_plane(g, &p, &x[i * plane_in..][..plane_in], phased);
                    let dy_plane = &dy[i * plane_out..][..plane_out];
                    for ky in 0..g.k_h {
                        for (oy, iy) in rows(g, ky) {
                            let row = &phased[iy * p.row_len()..][..p.row_len()];
                            let dy_row = &dy_plane[oy * g.w_out..][..g.w_out];
                            for kx in 0..g.k_w {
                                let run = &row[starts[kx]..][..g.w_out];
                                dw_c[ky * g.k_w + kx] += dot(dy_row, run);
                            }
                        }
                    }
                }
            },
        );
    dw
}
