//! 3×3 convolutions of stride 1 and padding 1 by Winograd's minimal filtering F(2×2, 3×3)
//! (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016): each 2×2
//! block of the output costs 16 multiply-adds per input and output channel instead of 36.
//!
//! With `d` a 4×4 input tile (its 2×2 output block's receptive field), `g` a 3×3 kernel and
//! `Y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A`, summed over input channels, the 16 positions of the
//! transformed tiles are 16 independent matrix products, `M[ξ] = U[ξ] · V[ξ]`, with
//! `U[ξ]` the `[c_out × c_in]` transformed kernels and `V[ξ]` the `[c_in × tiles]`
//! transformed inputs. The transforms only add, subtract and halve, so the results match the
//! direct convolution to float rounding (catdog's tests compare them with ndarray's).
//!
//! Tiles are transformed and multiplied in blocks of whole tile rows small enough to stay in
//! the core's cache; several images share a block when theirs are small, so that the products
//! stay wide where the images are 8×8.

use alloc::vec;
use alloc::vec::Vec;
use core::mem::MaybeUninit;
use core::ops::Range;

use rayon::prelude::*;

use super::Element;
use super::gemm::{Matrix, gemm};

/// Input channels from which this beats im2col: the products here are only `c_in` deep
/// (im2col's are `9·c_in`), and catdog's first layer has 3.
pub(super) const MIN_CHANNELS: usize = 16;

/// The transformed tiles and products of one block take about this much memory, a core's L2
/// cache on the development machine: 2 MB made SmallCnn's inference 5 % faster than 1 MB and
/// 4 MB, and 512 kB 6 % slower (alternated in one process, batch 32, 64 px).
const BLOCK_BYTES: usize = 2 << 20;

/// A batch of `[c_in, h, w]` images convolved by `c_out` 3×3 kernels, stride 1, padding 1.
#[derive(Clone, Copy, Debug)]
pub(super) struct Dims {
    pub batch: usize,
    pub c_in: usize,
    pub c_out: usize,
    pub h: usize,
    pub w: usize,
}

impl Dims {
    fn tile_rows(&self) -> usize {
        self.h.div_ceil(2)
    }
    fn tile_cols(&self) -> usize {
        self.w.div_ceil(2)
    }
}

/// The 16 matrices `U[ξ] = G g Gᵀ`, each `[c_out × c_in]` stored column-major
/// (`u[(ξ·c_in + c)·c_out + k]`), from `kernel(out_channel, in_channel)`, a 3×3 kernel in
/// row-major order. Made
/// anew at every call (the weights change at every training step), on all threads: first
/// each kernel's 16 values together, then regrouped by position.
pub(super) fn transform_weights<T: Element>(
    c_out: usize,
    c_in: usize,
    kernel: impl Fn(usize, usize) -> [T; 9] + Sync,
) -> Vec<T> {
    let half = T::from(0.5).unwrap();
    // G·(a, b, c) for one column (or, applied again, one row) of a kernel.
    let g = |a: T, b: T, c: T| [a, (a + b + c) * half, (a - b + c) * half, c];
    let mut by_kernel = vec![T::zero(); 16 * c_in * c_out];
    by_kernel
        .par_chunks_mut(16)
        .enumerate()
        .for_each(|(kc, out)| {
            let w = kernel(kc / c_in, kc % c_in);
            let columns: [[T; 4]; 3] = core::array::from_fn(|j| g(w[j], w[3 + j], w[6 + j]));
            for (i, out) in out.chunks_exact_mut(4).enumerate() {
                out.copy_from_slice(&g(columns[0][i], columns[1][i], columns[2][i]));
            }
        });
    let mut u = vec![T::zero(); 16 * c_in * c_out];
    u.par_chunks_mut(c_out.max(1))
        .enumerate()
        .for_each(|(row, out)| {
            let (xi, c) = (row / c_in, row % c_in);
            for (k, out) in out.iter_mut().enumerate() {
                *out = by_kernel[(k * c_in + c) * 16 + xi];
            }
        });
    u
}

/// `y = conv3×3(x) + bias` with the kernels already transformed by [`transform_weights`].
pub(super) fn conv3x3<T: Element>(d: &Dims, x: &[T], u: &[T], bias: Option<&[T]>) -> Vec<T> {
    let (image_in, image_out) = (d.c_in * d.h * d.w, d.c_out * d.h * d.w);
    let len = d.batch * image_out;
    if len == 0 {
        return Vec::new();
    }
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let block_rows = (BLOCK_BYTES / (16 * size_of::<T>() * (d.c_in + d.c_out) * tile_cols)).max(1);
    // Whole images per task, as many as a block holds, in a multiple of the thread count.
    let threads = rayon::current_num_threads();
    let per_task = (block_rows / tile_rows).clamp(1, d.batch);
    let per_task = d
        .batch
        .div_ceil(d.batch.div_ceil(per_task).next_multiple_of(threads));
    let parallelism = if d.batch.div_ceil(per_task) >= threads {
        gemm::Parallelism::None
    } else {
        gemm::Parallelism::Rayon(0)
    };
    let block_rows = block_rows.min(per_task * tile_rows);
    let block_tiles = 16 * block_rows * tile_cols;
    // Each thread takes consecutive tasks with one scratch: made per task (rayon's
    // `for_each_init` makes one per job it splits off), zeroing it was 4 % of a training step.
    let per_thread = d.batch.div_ceil(per_task).div_ceil(threads) * per_task;
    let mut y = Vec::with_capacity(len);
    y.spare_capacity_mut()[..len]
        .par_chunks_mut(per_thread * image_out)
        .enumerate()
        .for_each(|(thread, y_thread)| {
            let mut scratch = Scratch::new(d, block_tiles);
            for (task, y_task) in y_thread.chunks_mut(per_task * image_out).enumerate() {
                let images = y_task.len() / image_out;
                let first_image = thread * per_thread + task * per_task;
                let x_task = &x[first_image * image_in..][..images * image_in];
                for first in (0..images * tile_rows).step_by(block_rows) {
                    let rows = first..(first + block_rows).min(images * tile_rows);
                    let n = rows.len() * tile_cols;
                    transform_input::<T>(d, x_task, rows.clone(), &mut scratch);
                    for xi in 0..16 {
                        gemm(
                            [d.c_out, n, d.c_in],
                            &mut scratch.m[xi * d.c_out * n..],
                            false,
                            Matrix {
                                data: &u[xi * d.c_in * d.c_out..],
                                row_stride: 1,
                                col_stride: d.c_out,
                            },
                            Matrix::rows(&scratch.v[xi * d.c_in * n..], n),
                            parallelism,
                        );
                    }
                    transform_output::<T>(d, rows, &mut scratch, bias, y_task);
                }
            }
        });
    // SAFETY: each task's blocks cover all tile rows of its images, and `transform_output`
    // writes every output value of the tile rows it is given.
    unsafe { y.set_len(len) };
    y
}

/// One thread's buffers: the transformed inputs `v` (`[16][c_in][n]`), the products `m`
/// (`[16][c_out][n]`), four input rows split into their even and odd padded columns and
/// their combinations, and the output transform's partial sums for one channel.
struct Scratch<T> {
    v: Vec<T>,
    m: Vec<T>,
    rows: Vec<T>,
    combined: Vec<T>,
    sums: Vec<T>,
}

impl<T: Element> Scratch<T> {
    fn new(d: &Dims, block_tiles: usize) -> Self {
        let halves = 8 * (d.tile_cols() + 1);
        Scratch {
            v: vec![T::zero(); block_tiles * d.c_in],
            m: vec![T::zero(); block_tiles * d.c_out],
            rows: vec![T::zero(); halves],
            combined: vec![T::zero(); halves],
            sums: vec![T::zero(); 12 * block_tiles / 16],
        }
    }
}

/// `Bᵀ d B` for every tile of the tile `rows` (counted over the task's images) and channel,
/// into `scratch.v`: column `(row − rows.start)·tile_cols + tile column` of each `V[ξ]`.
/// Every loop runs over contiguous columns, so that it is compiled into vector instructions
/// (for the CPU found at run time, with the `simd` feature).
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn transform_input<#[cfg(feature = "simd")] S: macerator::Simd, T: Element>(
    d: &Dims,
    x: &[T],
    rows: Range<usize>,
    scratch: &mut Scratch<T>,
) {
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let (plane, n, half) = (d.h * d.w, rows.len() * tile_cols, tile_cols + 1);
    let zero = T::zero();
    for (index, row) in rows.enumerate() {
        let (image, ty) = (row / tile_rows, row % tile_rows);
        for c in 0..d.c_in {
            let src = &x[(image * d.c_in + c) * plane..][..plane];
            // Input rows 2·ty − 1 to 2·ty + 2, each as its padded even columns (input columns
            // −1, 1, 3, …) then its odd ones (0, 2, 4, …).
            for (r, split) in scratch.rows.chunks_exact_mut(2 * half).enumerate() {
                let (even, odd) = split.split_at_mut(half);
                match (2 * ty + r).checked_sub(1).filter(|&y| y < d.h) {
                    Some(y) => deinterleave(&src[y * d.w..][..d.w], even, odd),
                    None => split.fill(zero),
                }
            }
            // Bᵀ d: the four rows combined, even and odd halves at once.
            let [d0, d1, d2, d3] = split4(&scratch.rows, 2 * half);
            let [e0, e1, e2, e3] = split4_mut(&mut scratch.combined, 2 * half);
            sub(e0, d0, d2);
            add(e1, d1, d2);
            sub(e2, d2, d1);
            sub(e3, d1, d3);
            // (Bᵀ d) B: padded columns 2·tx to 2·tx + 3 are even[tx], odd[tx], even[tx + 1]
            // and odd[tx + 1].
            for (i, split) in scratch.combined.chunks_exact(2 * half).enumerate() {
                let (even, odd) = split.split_at(half);
                let start = (i * 4 * d.c_in + c) * n + index * tile_cols;
                let [v0, v1, v2, v3] = strided4_mut(&mut scratch.v[start..], d.c_in * n, tile_cols);
                let (e, e_next, o, o_next) =
                    (&even[..tile_cols], &even[1..], &odd[..tile_cols], &odd[1..]);
                sub(v0, e, e_next);
                add(v1, o, e_next);
                sub(v2, e_next, o);
                sub(v3, o, o_next);
            }
        }
    }
}

/// Splits an input row into its padded even columns (a zero for column −1, then columns 1,
/// 3, …) and its odd ones (columns 0, 2, …), zeros after the row's end.
#[inline(always)]
fn deinterleave<T: Element>(row: &[T], even: &mut [T], odd: &mut [T]) {
    let pairs = row.len() / 2;
    assert!(odd.len() > pairs && even.len() > pairs);
    even[0] = T::zero();
    for j in 0..pairs {
        // SAFETY: j < pairs, so 2·j + 1 < row.len(), j < odd.len() and j + 1 < even.len() (the
        // assertion above); unchecked so that the loop is vectorised.
        unsafe {
            *odd.get_unchecked_mut(j) = *row.get_unchecked(2 * j);
            *even.get_unchecked_mut(j + 1) = *row.get_unchecked(2 * j + 1);
        }
    }
    odd[pairs..].fill(T::zero());
    even[pairs + 1..].fill(T::zero());
    if row.len() % 2 == 1 {
        odd[pairs] = row[row.len() - 1];
    }
}

/// `out = a + b` and `out = a − b`, value by value.
#[inline(always)]
fn add<T: Element>(out: &mut [T], a: &[T], b: &[T]) {
    out.iter_mut()
        .zip(a)
        .zip(b)
        .for_each(|((o, &a), &b)| *o = a + b);
}

#[inline(always)]
fn sub<T: Element>(out: &mut [T], a: &[T], b: &[T]) {
    out.iter_mut()
        .zip(a)
        .zip(b)
        .for_each(|((o, &a), &b)| *o = a - b);
}

/// `Aᵀ M A + bias` for every tile of the tile `rows` and output channel, written into the
/// task's output images `y` (the parts of 2×2 blocks past an odd edge are dropped). As in
/// [`transform_input`], every loop runs over contiguous values.
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn transform_output<'a, #[cfg(feature = "simd")] S: macerator::Simd, T: Element>(
    d: &Dims,
    rows: Range<usize>,
    scratch: &mut Scratch<T>,
    bias: Option<&'a [T]>,
    y: &mut [MaybeUninit<T>],
) {
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let (plane, n) = (d.h * d.w, rows.len() * tile_cols);
    let zero = T::zero();
    for k in 0..d.c_out {
        let b = bias.map_or(zero, |bias| bias[k]);
        let m: [&[T]; 16] = core::array::from_fn(|xi| &scratch.m[(xi * d.c_out + k) * n..][..n]);
        let mut sums = scratch.sums[..12 * n].chunks_exact_mut(n);
        let mut next = || sums.next().unwrap();
        // Aᵀ M: the first row of the 2×2 block in s0, the second in s1.
        let s0: [&mut [T]; 4] = core::array::from_fn(|j| {
            let s = next();
            combine(s, [m[j], m[4 + j], m[8 + j]], [1, 1], zero);
            s
        });
        let s1: [&mut [T]; 4] = core::array::from_fn(|j| {
            let s = next();
            combine(s, [m[4 + j], m[8 + j], m[12 + j]], [-1, -1], zero);
            s
        });
        // (Aᵀ M) A: left and right column of each row.
        let out: [&mut [T]; 4] = core::array::from_fn(|i| {
            let s = if i < 2 { &s0 } else { &s1 };
            let out = next();
            if i % 2 == 0 {
                combine(out, [&*s[0], &*s[1], &*s[2]], [1, 1], b);
            } else {
                combine(out, [&*s[1], &*s[2], &*s[3]], [-1, -1], b);
            }
            out
        });
        for (index, row) in rows.clone().enumerate() {
            let (image, ty) = (row / tile_rows, row % tile_rows);
            let y_plane = &mut y[(image * d.c_out + k) * plane..][..plane];
            let tiles = index * tile_cols..(index + 1) * tile_cols;
            for r in 0..2 {
                let oy = 2 * ty + r;
                if oy < d.h {
                    let (left, right) =
                        (&out[2 * r][tiles.clone()], &out[2 * r + 1][tiles.clone()]);
                    interleave(&mut y_plane[oy * d.w..][..d.w], left, right);
                }
            }
        }
    }
}

/// `out = a ± b ± c + plus`, the signs of `b` and `c` given as ±1.
#[inline(always)]
fn combine<T: Element>(out: &mut [T], [a, b, c]: [&[T]; 3], signs: [i8; 2], plus: T) {
    let zipped = out.iter_mut().zip(a).zip(b).zip(c);
    match signs {
        [1, 1] => zipped.for_each(|(((o, &a), &b), &c)| *o = a + b + c + plus),
        _ => zipped.for_each(|(((o, &a), &b), &c)| *o = a - b - c + plus),
    }
}

/// Writes `left[i]` and `right[i]` to columns `2i` and `2i + 1` of `dst`, as far as it goes.
#[inline(always)]
fn interleave<T: Element>(dst: &mut [MaybeUninit<T>], left: &[T], right: &[T]) {
    let pairs = dst.len() / 2;
    assert!(left.len() >= dst.len().div_ceil(2) && right.len() >= pairs);
    for i in 0..pairs {
        // SAFETY: i < pairs, so 2·i + 1 < dst.len() and i < left.len(), right.len() (the
        // assertion above); unchecked so that the loop is vectorised.
        unsafe {
            dst.get_unchecked_mut(2 * i).write(*left.get_unchecked(i));
            dst.get_unchecked_mut(2 * i + 1)
                .write(*right.get_unchecked(i));
        }
    }
    if dst.len() % 2 == 1 {
        dst[2 * pairs].write(left[pairs]);
    }
}

/// Four consecutive slices of `len` values.
#[inline(always)]
fn split4<T>(data: &[T], len: usize) -> [&[T]; 4] {
    let mut chunks = data.chunks_exact(len);
    core::array::from_fn(|_| chunks.next().unwrap())
}

#[inline(always)]
fn split4_mut<T>(data: &mut [T], len: usize) -> [&mut [T]; 4] {
    strided4_mut(data, len, len)
}

/// Four slices of `len` values, `stride` apart, the first at the start of `data`.
#[inline(always)]
fn strided4_mut<T>(data: &mut [T], stride: usize, len: usize) -> [&mut [T]; 4] {
    let (a, rest) = data.split_at_mut(stride);
    let (b, rest) = rest.split_at_mut(stride);
    let (c, rest) = rest.split_at_mut(stride);
    [
        &mut a[..len],
        &mut b[..len],
        &mut c[..len],
        &mut rest[..len],
    ]
}
