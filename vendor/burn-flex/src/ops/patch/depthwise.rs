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
//! - input gradient: without stride or dilation, the forward pass over the output gradient;
//!   otherwise each phased input row made a block at a time from the runs that reach it,
//!   then cropped;
//! - weight gradient: per channel, each output-gradient row times each run, summed over the
//!   rows and the images (in registers for 3- and 5-wide kernels).

use alloc::vec;
use alloc::vec::Vec;
use core::mem::MaybeUninit;

use rayon::prelude::*;

use super::conv::Geometry;
use super::epilogue::Epilogue;
use super::{Element, assume_written, copy_strided};

/// Output values of a row that the forward pass sums in registers at a time: one AVX-512
/// vector of f32, two AVX2 ones. Adding each tap's run into the output row in memory, as
/// until 2026-12-06, loaded and stored every output once per tap (and compiled to 4-lane
/// vectors): the depthwise convolutions took over half of EfficientNet-Lite0's inference.
const BLOCK: usize = 16;

/// Output planes a task takes at least: the 7×7 planes of a network's last stages are 49
/// values, too little work to hand to a thread one at a time.
const MIN_TASK_VALUES: usize = 4096;

/// How one channel's plane is laid out padded and split into phases: `rows` padded rows,
/// `top` of zeros above the image's first and zeros below its last, each row padded and split.
#[derive(Clone, Copy)]
struct Phased {
    stride: usize,
    dilation: usize,
    pad: usize,
    w_in: usize,
    /// Values of each phase of a row.
    phase_len: usize,
    top: usize,
    h_in: usize,
    /// Padded rows, as far down as the last output row's last tap reaches.
    rows: usize,
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
            top: g.pad[0],
            h_in: g.h_in,
            rows: (g.h_out.max(1) - 1) * g.stride[0] + (g.k_h - 1) * g.dilation[0] + 1,
        }
    }

    /// Values of a laid-out plane, with `BLOCK` more: a block of a row's last values reads
    /// up to `BLOCK` beyond it (into the next row, or past the last), into lanes never used.
    fn plane_len(&self) -> usize {
        self.rows * self.row_len() + BLOCK
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

    /// The input row that the phased row `acc` stands for, into `row`, every value written:
    /// zero in the columns past the last output's last tap, which no output reaches.
    fn crop_into<T: Element>(&self, acc: &[T], row: &mut [MaybeUninit<T>]) {
        let covered = (self.stride * self.phase_len).saturating_sub(self.pad);
        for value in row.iter_mut().skip(covered) {
            value.write(T::zero());
        }
        for (r, phase) in acc.chunks_exact(self.phase_len.max(1)).enumerate() {
            let (lo, hi, first) = self.inside(r);
            let inside = &phase[lo..hi];
            let columns = row[first..].chunks_mut(self.stride);
            assert!(columns.len() >= inside.len(), "depthwise: a row too short");
            for (column, &value) in columns.zip(inside) {
                column[0].write(value);
            }
        }
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

/// One channel's plane laid out by [`Phased`], in a buffer that a thread keeps from plane to
/// plane. Its zeros (the padding rows and columns, and the `BLOCK` past the end) are the same
/// for every plane of a convolution, so they are written once, when the buffer is made, and
/// each plane writes only its own values: laying out the whole padded plane, zeros included,
/// with each phase's bounds worked out again for every row, took an eighth of
/// EfficientNet-Lite0's training, most of it on 7×7 and 14×14 planes where the bookkeeping
/// outweighs the copy.
struct PhasedPlane<T> {
    values: Vec<T>,
    /// Per phase: where its input columns start in a phased row, how many, and the input
    /// column of the first ([`Phased::inside`]); phases without any left out.
    runs: Vec<(usize, usize, usize)>,
    stride: usize,
    w_in: usize,
    row_len: usize,
    /// The laid-out row that the image's first row goes to (rows of zeros above it).
    top: usize,
    /// Image rows laid out: those below the last laid-out row are never read.
    rows_in: usize,
}

impl<T: Element> PhasedPlane<T> {
    fn new(p: &Phased) -> Self {
        let runs = (0..p.stride)
            .map(|r| (r, p.inside(r)))
            .filter(|(_, (lo, hi, _))| hi > lo)
            .map(|(r, (lo, hi, first))| (r * p.phase_len + lo, hi - lo, first))
            .collect();
        PhasedPlane {
            values: vec![T::zero(); p.plane_len()],
            runs,
            stride: p.stride,
            w_in: p.w_in,
            row_len: p.row_len(),
            top: p.top,
            rows_in: p.h_in.min(p.rows.saturating_sub(p.top)),
        }
    }

    /// Lays out `plane` (`h_in` rows of `w_in`), overwriting the last one laid out.
    fn lay_out(&mut self, plane: &[T]) -> &[T] {
        let rows = plane.chunks_exact(self.w_in.max(1)).take(self.rows_in);
        for (iy, row) in rows.enumerate() {
            let out = &mut self.values[(self.top + iy) * self.row_len..][..self.row_len];
            for &(at, len, first) in &self.runs {
                let (from, to) = (&row[first..], &mut out[at..][..len]);
                assert!(
                    from.len() > (len - 1) * self.stride,
                    "depthwise: a row too short"
                );
                copy_strided(from, self.stride, to);
            }
        }
        &self.values
    }
}

/// `a · b + c`, in one instruction where the CPU has one (and one rounding); apart otherwise,
/// where a fused multiply-add would be a library call.
#[inline(always)]
fn mul_add<T: Element>(a: T, b: T, c: T) -> T {
    if cfg!(any(target_feature = "fma", target_arch = "aarch64")) {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// Whether the convolution is depthwise: one group per input channel, one output channel per
/// group, more than one group (a single channel is an ordinary convolution).
pub(super) fn applies(g: &Geometry) -> bool {
    g.groups > 1 && g.groups == g.c_in && g.c_out == g.c_in
}

/// The first `out.len()` (at most `BLOCK`) of `acc` into `out`: value by value with constant
/// indices, since a slice of `acc` (a copy of `..n`, or of the whole array where the block is
/// full) made the compiler keep the sums in memory and split the loops that make them.
#[inline(always)]
fn store<T: Element>(out: &mut [MaybeUninit<T>], acc: &[T; BLOCK]) {
    let n = out.len();
    for l in 0..BLOCK {
        if l < n {
            out[l].write(acc[l]);
        }
    }
}

/// `y = depthwise(x, weight) + bias`.
pub(super) fn forward<T: Element>(
    g: &Geometry,
    x: &[T],
    weight: &[T],
    bias: Option<&[T]>,
    after: Epilogue<'_, T>,
) -> Vec<T> {
    match g.k_w {
        3 => forward_kw::<T, 3>(g, x, weight, bias, after),
        5 => forward_kw::<T, 5>(g, x, weight, bias, after),
        _ => forward_kw::<T, 0>(g, x, weight, bias, after),
    }
}

/// [`forward`] for kernels `KW` wide, or any width where `KW` is 0. With the width known to
/// the compiler (EfficientNet's 3 and 5) the taps of a kernel row are unrolled, without a
/// loop's count and bounds checked at every tap: a sixth of the forward pass's time went to
/// that loop.
fn forward_kw<T: Element, const KW: usize>(
    g: &Geometry,
    x: &[T],
    weight: &[T],
    bias: Option<&[T]>,
    after: Epilogue<'_, T>,
) -> Vec<T> {
    let k_w = if KW > 0 { KW } else { g.k_w };
    debug_assert_eq!(k_w, g.k_w);
    let (plane_in, plane_out) = (g.h_in * g.w_in, g.out_plane());
    let len = g.batch * g.c_out * plane_out;
    let p = Phased::new(g);
    let taps = g.k_h * k_w;
    let starts = p.run_starts(k_w);
    let starts = &starts[..k_w];
    let row_len = p.row_len();
    // Where kernel row `ky` of output row `oy` starts in the laid-out plane.
    let row_at = |oy: usize, ky: usize| (oy * g.stride[0] + ky * g.dilation[0]) * row_len;
    let mut y = Vec::with_capacity(len);
    y.spare_capacity_mut()[..len]
        .par_chunks_mut(plane_out.max(1))
        .with_min_len(MIN_TASK_VALUES.div_ceil(plane_out.max(1)))
        .enumerate()
        .for_each_init(
            || PhasedPlane::new(&p),
            |plane, (i, out)| {
                let c = i % g.c_out;
                let start = bias.map_or(T::zero(), |bias| bias[c]);
                let phased = plane.lay_out(&x[i * plane_in..][..plane_in]);
                let kernel = &weight[c * taps..][..taps];
                // Two output rows at a time, each block's two sums in registers: every tap
                // then takes one weight for two independent chains of multiply-adds (one
                // chain waited on each addition before the next tap's).
                let mut rows = out.chunks_exact_mut(g.w_out.max(1)).enumerate();
                while let Some((oy, row0)) = rows.next() {
                    let mut row1 = rows.next().map(|(_, row)| row);
                    // Without a second row the second sums are made again from the first's
                    // input and not stored.
                    let oy1 = if row1.is_some() { oy + 1 } else { oy };
                    for b in 0..g.w_out.div_ceil(BLOCK) {
                        // The bias, then each tap in kernel order.
                        let (mut acc0, mut acc1) = ([start; BLOCK], [start; BLOCK]);
                        for (ky, kernel_row) in kernel.chunks_exact(k_w).enumerate() {
                            let in0 = &phased[row_at(oy, ky) + b * BLOCK..];
                            let in1 = &phased[row_at(oy1, ky) + b * BLOCK..];
                            for (&w, &at) in kernel_row.iter().zip(starts) {
                                let run0: &[T; BLOCK] = in0[at..][..BLOCK].try_into().unwrap();
                                let run1: &[T; BLOCK] = in1[at..][..BLOCK].try_into().unwrap();
                                for l in 0..BLOCK {
                                    acc0[l] = mul_add(w, run0[l], acc0[l]);
                                    acc1[l] = mul_add(w, run1[l], acc1[l]);
                                }
                            }
                        }
                        store(&mut row0[b * BLOCK..], &acc0);
                        if let Some(row1) = row1.as_deref_mut() {
                            store(&mut row1[b * BLOCK..], &acc1);
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
    input_grad_gathered(g, weight, dy)
}

/// [`input_grad`] with a stride or dilation: each input row is made phase by phase in the
/// layout of [`Phased`], a block of `BLOCK` values at a time, each value the sum over the
/// kernel taps that reach it of `w · dy`, in registers and written once; then the row is
/// cropped out of it. Adding every tap's run into an accumulator in memory, as until
/// 2026-12-06, loaded and stored each value once per tap.
fn input_grad_gathered<T: Element>(g: &Geometry, weight: &[T], dy: &[T]) -> Vec<T> {
    let (plane_in, plane_out) = (g.h_in * g.w_in, g.out_plane());
    let p = Phased::new(g);
    let taps = g.k_h * g.k_w;
    let (s, d) = (p.stride, p.dilation);
    // Per phase, the kernel columns whose runs lie in it, and how far into it each starts:
    // output column `ox` reaches position `ox + q` of phase `kx · d mod s`.
    let by_phase: Vec<Vec<(usize, usize)>> = (0..s)
        .map(|r| {
            (0..g.k_w)
                .filter(|kx| kx * d % s == r)
                .map(|kx| (kx, kx * d / s))
                .collect()
        })
        .collect();
    // Output-gradient rows with `margin` zeros before them and enough after, so that each
    // block reads `dy[i − q]` for its positions `i` without looking where `i − q` falls.
    let margin = (g.k_w - 1) * d / s;
    let padded_w = margin + p.phase_len + BLOCK;
    let blocks = p.phase_len.div_ceil(BLOCK);
    // Not zeroed first: every value is written once, by `crop_into` (a pass over the input's
    // size, the largest tensor of a stride-2 layer, saved).
    let len = g.batch * g.c_in * plane_in;
    let mut dx = Vec::with_capacity(len);
    dx.spare_capacity_mut()[..len]
        .par_chunks_mut(plane_in.max(1))
        .with_min_len(MIN_TASK_VALUES.div_ceil(plane_in.max(1)))
        .enumerate()
        .for_each_init(
            || {
                (
                    vec![T::zero(); g.h_out * padded_w],
                    // `BLOCK` beyond the row: a phase's last block runs into the next phase
                    // (made after it) or past the end.
                    vec![T::zero(); p.row_len() + BLOCK],
                    Vec::with_capacity(g.k_h),
                )
            },
            |(dy_rows, acc, reaching), (i, dx_plane)| {
                let c = i % g.c_in;
                let kernel = &weight[c * taps..][..taps];
                let dy_plane = &dy[i * plane_out..][..plane_out];
                for (row, padded) in dy_plane
                    .chunks_exact(g.w_out.max(1))
                    .zip(dy_rows.chunks_exact_mut(padded_w))
                {
                    padded[margin..][..g.w_out].copy_from_slice(row);
                }
                for (iy, dx_row) in dx_plane.chunks_exact_mut(g.w_in.max(1)).enumerate() {
                    // The kernel rows that reach input row `iy`, and the output row of each.
                    reaching.clear();
                    reaching.extend((0..g.k_h).filter_map(|ky| {
                        let t = (iy + g.pad[0]).checked_sub(ky * g.dilation[0])?;
                        let oy = t / g.stride[0];
                        (t % g.stride[0] == 0 && oy < g.h_out).then_some((ky, oy))
                    }));
                    for (r, columns) in by_phase.iter().enumerate() {
                        for blk in 0..blocks {
                            let mut sums = [T::zero(); BLOCK];
                            for &(ky, oy) in reaching.iter() {
                                let at = oy * padded_w + margin + blk * BLOCK;
                                for &(kx, q) in columns {
                                    let w = kernel[ky * g.k_w + kx];
                                    let run: &[T; BLOCK] =
                                        dy_rows[at - q..][..BLOCK].try_into().unwrap();
                                    for l in 0..BLOCK {
                                        sums[l] = mul_add(w, run[l], sums[l]);
                                    }
                                }
                            }
                            let out = &mut acc[r * p.phase_len + blk * BLOCK..][..BLOCK];
                            for l in 0..BLOCK {
                                out[l] = sums[l];
                            }
                        }
                    }
                    p.crop_into(&acc[..p.row_len()], dx_row);
                }
            },
        );
    // SAFETY: every plane's rows were each written whole by `crop_into`, all `len` values.
    unsafe { dx.set_len(len) };
    dx
}

/// The kernels' gradient, from the input and the output's gradient, summed over the images.
pub(super) fn weight_grad<T: Element>(g: &Geometry, x: &[T], dy: &[T]) -> Vec<T> {
    match g.k_w {
        3 => weight_grad_blocked::<T, 3>(g, x, dy),
        5 => weight_grad_blocked::<T, 5>(g, x, dy),
        _ => weight_grad_by_dots(g, x, dy),
    }
}

/// [`weight_grad`] for kernels `KW` wide: each kernel row's `KW` sums are kept as `BLOCK`
/// lanes each in registers while a block of an output-gradient row meets the `KW` runs of its
/// input row, and added across the lanes at the end. A dot product per tap and row, as
/// [`weight_grad_by_dots`] makes them, was a scalar loop on the 7×7 and 14×14 planes of
/// EfficientNet's last stages, where a row is shorter than a vector.
fn weight_grad_blocked<T: Element, const KW: usize>(g: &Geometry, x: &[T], dy: &[T]) -> Vec<T> {
    debug_assert_eq!(g.k_w, KW);
    let (plane_in, plane_out) = (g.h_in * g.w_in, g.out_plane());
    let p = Phased::new(g);
    let row_len = p.row_len();
    let starts: [usize; KW] = core::array::from_fn(|kx| p.run_start(kx));
    // Output-gradient rows padded with zeros to whole blocks: the lanes past a row's end
    // multiply the input there by zero.
    let blocks = g.w_out.div_ceil(BLOCK);
    let padded_w = blocks * BLOCK;
    let mut dw = vec![T::zero(); g.c_out * g.k_h * KW];
    dw.par_chunks_mut((g.k_h * KW).max(1))
        .enumerate()
        .for_each_init(
            || {
                (
                    PhasedPlane::new(&p),
                    vec![T::zero(); g.h_out * padded_w],
                    vec![[[T::zero(); BLOCK]; KW]; g.k_h],
                )
            },
            |(plane, dy_rows, sums), (c, dw_c)| {
                sums.fill([[T::zero(); BLOCK]; KW]);
                for b in 0..g.batch {
                    let i = b * g.c_in + c;
                    let phased = plane.lay_out(&x[i * plane_in..][..plane_in]);
                    let dy_plane = &dy[i * plane_out..][..plane_out];
                    for (row, padded) in dy_plane
                        .chunks_exact(g.w_out.max(1))
                        .zip(dy_rows.chunks_exact_mut(padded_w.max(1)))
                    {
                        padded[..g.w_out].copy_from_slice(row);
                    }
                    for (ky, sum) in sums.iter_mut().enumerate() {
                        let mut acc = *sum;
                        // Every output row: the rows of zeros above and below the image add
                        // nothing.
                        for oy in 0..g.h_out {
                            let row = &phased[(oy * g.stride[0] + ky * g.dilation[0]) * row_len..];
                            let dy_row = &dy_rows[oy * padded_w..][..padded_w];
                            for (blk, d) in dy_row.chunks_exact(BLOCK).enumerate() {
                                let d: &[T; BLOCK] = d.try_into().unwrap();
                                let row = &row[blk * BLOCK..];
                                for kx in 0..KW {
                                    let run: &[T; BLOCK] =
                                        row[starts[kx]..][..BLOCK].try_into().unwrap();
                                    for l in 0..BLOCK {
                                        acc[kx][l] = mul_add(d[l], run[l], acc[kx][l]);
                                    }
                                }
                            }
                        }
                        *sum = acc;
                    }
                }
                for (dw, lanes) in dw_c.iter_mut().zip(sums.iter().flatten()) {
                    *dw = lanes.iter().fold(T::zero(), |s, &v| s + v);
                }
            },
        );
    dw
}

/// [`weight_grad`] for any kernel: per channel, a dot product of each output-gradient row with
/// each run, summed over the images.
fn weight_grad_by_dots<T: Element>(g: &Geometry, x: &[T], dy: &[T]) -> Vec<T> {
    let (plane_in, plane_out) = (g.h_in * g.w_in, g.out_plane());
    let p = Phased::new(g);
    let taps = g.k_h * g.k_w;
    let starts = p.run_starts(g.k_w);
    let mut dw = vec![T::zero(); g.c_out * taps];
    dw.par_chunks_mut(taps.max(1)).enumerate().for_each_init(
        || PhasedPlane::new(&p),
        |plane, (c, dw_c)| {
            for b in 0..g.batch {
                let i = b * g.c_in + c;
                let phased = plane.lay_out(&x[i * plane_in..][..plane_in]);
                let dy_plane = &dy[i * plane_out..][..plane_out];
                for ky in 0..g.k_h {
                    for oy in 0..g.h_out {
                        let iy = oy * g.stride[0] + ky * g.dilation[0];
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
