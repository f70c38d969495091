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
//! The weight gradient is the same algorithm turned around, F(3×3, 2×2): with `e` a 2×2 block
//! of the output gradient, `A` the transpose of `Aᵀ`, and summed over tiles and images,
//! `dW = Gᵀ [(A e Aᵀ) ⊙ (Bᵀ d B)] G`, so the 16 products become `P[ξ] = E[ξ] · V[ξ]ᵀ`,
//! `[c_out × tiles] · [tiles × c_in]`, 16 multiply-adds per block and channel pair again.
//!
//! Tiles are transformed and multiplied in blocks of whole tile rows small enough to stay in
//! the core's cache; several images share a block when theirs are small, so that the products
//! stay wide where the images are 8×8.

extern crate std;

use alloc::vec;
use alloc::vec::Vec;
use core::cell::Cell;
use core::mem::MaybeUninit;
use core::ops::Range;

use rayon::prelude::*;

use super::Element;
use super::gemm::{Matrix, gemm};
use super::pool::max_relu;

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
    /// Tile rows per block, so that a block's transformed inputs and outputs (16 matrices
    /// each) fit in [`BLOCK_BYTES`].
    fn block_rows<T>(&self) -> usize {
        (BLOCK_BYTES / (16 * size_of::<T>() * (self.c_in + self.c_out) * self.tile_cols())).max(1)
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

/// What a forward convolution writes: its output, or that output max-pooled 2×2 (stride 2)
/// and then through ReLU, made as each block of it is computed instead of in two more passes
/// over the whole output (even sizes only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Output {
    Plain,
    PooledRelu,
}

impl Output {
    /// Values of one `[c_out, h, w]` output image.
    pub fn image_len(self, c_out: usize, h: usize, w: usize) -> usize {
        match self {
            Output::Plain => c_out * h * w,
            Output::PooledRelu => c_out * (h / 2) * (w / 2),
        }
    }
}

/// `y = conv3×3(x) + bias`, pooled as `output` says, with the kernels already transformed by
/// [`transform_weights`].
pub(super) fn conv3x3<T: Element>(
    d: &Dims,
    x: &[T],
    u: &[T],
    bias: Option<&[T]>,
    output: Output,
) -> Vec<T> {
    let (image_in, image_out) = (d.c_in * d.h * d.w, output.image_len(d.c_out, d.h, d.w));
    let len = d.batch * image_out;
    if len == 0 {
        return Vec::new();
    }
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let block_rows = d.block_rows::<T>();
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
    // Each thread takes consecutive tasks with its scratch.
    let per_thread = d.batch.div_ceil(per_task).div_ceil(threads) * per_task;
    let mut y = Vec::with_capacity(len);
    y.spare_capacity_mut()[..len]
        .par_chunks_mut(per_thread * image_out)
        .enumerate()
        .for_each(|(thread, y_thread)| {
            with_scratch(d, block_tiles, |mut scratch: Scratch<'_, T>| {
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
                        transform_output::<T>(d, rows, &mut scratch, bias, output, y_task);
                    }
                }
            })
        });
    // SAFETY: each task's blocks cover all tile rows of its images, and `transform_output`
    // writes every output value of the tile rows it is given.
    unsafe { y.set_len(len) };
    y
}

/// `dW` of the convolution [`conv3x3`] computes (`[c_out, c_in, 3, 3]`), from its input `x`
/// and its output's gradient `dy`. Each thread sums the products of its share of the images,
/// then the shares are added and transformed back.
pub(super) fn weight_grad3x3<T: Element>(d: &Dims, x: &[T], dy: &[T]) -> Vec<T> {
    let (image_in, image_out) = (d.c_in * d.h * d.w, d.c_out * d.h * d.w);
    let len = d.c_out * d.c_in * 9;
    if image_in == 0 || d.batch == 0 || d.c_out == 0 {
        return vec![T::zero(); len];
    }
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let block_rows = d.block_rows::<T>();
    let per_thread = d.batch.div_ceil(rayon::current_num_threads());
    let block_rows = block_rows.min(per_thread * tile_rows);
    let block_tiles = 16 * block_rows * tile_cols;
    let products = 16 * d.c_out * d.c_in;
    let p = x
        .par_chunks(per_thread * image_in)
        .zip(dy.par_chunks(per_thread * image_out))
        .map(|(x_thread, dy_thread)| {
            let mut p = vec![T::zero(); products];
            with_scratch(d, block_tiles, |mut scratch: Scratch<'_, T>| {
                let tiles = x_thread.len() / image_in * tile_rows;
                for first in (0..tiles).step_by(block_rows) {
                    let rows = first..(first + block_rows).min(tiles);
                    let n = rows.len() * tile_cols;
                    transform_input::<T>(d, x_thread, rows.clone(), &mut scratch);
                    transform_output_grad::<T>(d, dy_thread, rows, &mut scratch);
                    for xi in 0..16 {
                        gemm(
                            [d.c_out, d.c_in, n],
                            &mut p[xi * d.c_out * d.c_in..],
                            true,
                            Matrix::rows(&scratch.m[xi * d.c_out * n..], n),
                            Matrix::rows(&scratch.v[xi * d.c_in * n..], n).transposed(),
                            gemm::Parallelism::None,
                        );
                    }
                }
            });
            p
        })
        .reduce_with(|mut a, b| {
            a.iter_mut().zip(&b).for_each(|(a, &b)| *a += b);
            a
        })
        .unwrap_or_else(|| vec![T::zero(); products]);
    // Gᵀ P G for every kernel: Gᵀ on the columns of P, then on the rows of the result.
    let half = T::from(0.5).unwrap();
    let gt = |[a, b, c, e]: [T; 4]| [a + (b + c) * half, (b - c) * half, (b + c) * half + e];
    let mut dw = vec![T::zero(); len];
    dw.par_chunks_mut(9 * d.c_in)
        .enumerate()
        .for_each(|(k, dw_k)| {
            for (c, out) in dw_k.chunks_exact_mut(9).enumerate() {
                let at = |i: usize, j: usize| p[((i * 4 + j) * d.c_out + k) * d.c_in + c];
                let columns: [[T; 3]; 4] =
                    core::array::from_fn(|j| gt([0, 1, 2, 3].map(|i| at(i, j))));
                for (i, row) in out.chunks_exact_mut(3).enumerate() {
                    row.copy_from_slice(&gt(columns.map(|column| column[i])));
                }
            }
        });
    dw
}

/// One thread's buffers: the transformed inputs `v` (`[16][c_in][n]`), the products `m`
/// (`[16][c_out][n]`), one channel's gathered rows and their combinations (at most `[8][n]`
/// each), and the output transform's partial sums for one channel. Every value
/// is written before it is read, so what a previous call left there does not matter.
struct Scratch<'a, T> {
    v: &'a mut [T],
    m: &'a mut [T],
    rows: &'a mut [T],
    combined: &'a mut [T],
    sums: &'a mut [T],
}

impl<'a, T: Element> Scratch<'a, T> {
    fn lens(d: &Dims, block_tiles: usize) -> [usize; 5] {
        [
            block_tiles * d.c_in,
            block_tiles * d.c_out,
            8 * block_tiles / 16,
            8 * block_tiles / 16,
            12 * block_tiles / 16,
        ]
    }

    fn split(lens: [usize; 5], mut values: &'a mut [T]) -> Self {
        let [v, m, rows, combined, sums] = lens.map(|len| {
            let (part, rest) = core::mem::take(&mut values).split_at_mut(len);
            values = rest;
            part
        });
        Scratch {
            v,
            m,
            rows,
            combined,
            sums,
        }
    }
}

std::thread_local! {
    /// Each thread's scratch, kept from call to call (about [`BLOCK_BYTES`]): allocating and
    /// zeroing one per call made SmallCnn's inference 2 % slower at 64 px, batch 32
    /// (alternated in one process; no difference at 128 px).
    static BUFFER: Cell<Vec<u64>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` with this thread's scratch for blocks of `block_tiles` tiles.
fn with_scratch<T: Element>(d: &Dims, block_tiles: usize, f: impl FnOnce(Scratch<'_, T>)) {
    let lens = Scratch::<T>::lens(d, block_tiles);
    let len: usize = lens.iter().sum();
    let words = (len * size_of::<T>()).div_ceil(size_of::<u64>());
    // Taken out rather than borrowed: a thread waiting in a parallel gemm can start another
    // task of the same convolution, which then makes its own.
    let mut buffer = BUFFER.take();
    if buffer.len() < words {
        buffer.resize(words, 0);
    }
    let values: &mut [T] = bytemuck::cast_slice_mut(&mut buffer[..words]);
    f(Scratch::split(lens, &mut values[..len]));
    BUFFER.set(buffer);
}

/// `Bᵀ d B` for every tile of the tile `rows` (counted over the task's images) and channel,
/// into `scratch.v`: column `(row − rows.start)·tile_cols + tile column` of each `V[ξ]`.
/// The input rows of every tile are first gathered as their even and odd columns, in the
/// column order of `V`, so that the arithmetic runs over all `n` tiles of the block at once:
/// with 16-lane vectors (AVX-512) rows of 4 to 16 tiles mostly ran as scalar remainders.
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn transform_input<'s, #[cfg(feature = "simd")] S: macerator::Simd, T: Element>(
    d: &Dims,
    x: &[T],
    rows: Range<usize>,
    scratch: &mut Scratch<'s, T>,
) {
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let (plane, n) = (d.h * d.w, rows.len() * tile_cols);
    for c in 0..d.c_in {
        // `gathered[2·r + j]`: input row 2·ty − 1 + r, input column 2·tx + j, of every tile
        // (ty, tx), zero outside the image. A tile's other two columns, 2·tx − 1 and
        // 2·tx + 2, are its neighbours' j = 1 and j = 0.
        for (index, row) in rows.clone().enumerate() {
            let (image, ty) = (row / tile_rows, row % tile_rows);
            let src = &x[(image * d.c_in + c) * plane..][..plane];
            for r in 0..4 {
                let (even, odd) = scratch.rows[2 * r * n..][..2 * n].split_at_mut(n);
                let tiles = index * tile_cols..(index + 1) * tile_cols;
                let (even, odd) = (&mut even[tiles.clone()], &mut odd[tiles]);
                match (2 * ty + r).checked_sub(1).filter(|&y| y < d.h) {
                    Some(y) => split_columns(&src[y * d.w..][..d.w], even, odd),
                    None => {
                        even.fill(T::zero());
                        odd.fill(T::zero());
                    }
                }
            }
        }
        let gathered: [&[T]; 8] = core::array::from_fn(|i| &scratch.rows[i * n..][..n]);
        // Bᵀ d: `combined[2·i + j]` combines the four rows of column set j.
        for j in 0..2 {
            let [e0, e1, e2, e3] = strided4_mut(&mut scratch.combined[j * n..], 2 * n, n);
            let [d0, d1, d2, d3] = [0, 1, 2, 3].map(|r| gathered[2 * r + j]);
            sub(e0, d0, d2);
            add(e1, d1, d2);
            sub(e2, d2, d1);
            sub(e3, d1, d3);
        }
        // (Bᵀ d) B over the columns 2·tx − 1 to 2·tx + 2 of each combined row: the odd
        // column set shifted a tile right, the even set, the odd set, the even set shifted a
        // tile left; the shifts bring in zeros at each tile row's ends.
        for (i, e) in scratch.combined[..8 * n].chunks_exact(2 * n).enumerate() {
            let (even, odd) = e.split_at(n);
            let start = (i * 4 * d.c_in + c) * n;
            let [v0, v1, v2, v3] = strided4_mut(&mut scratch.v[start..], d.c_in * n, n);
            sub(&mut v0[1..], &odd[..n - 1], &odd[1..]);
            add(v1, even, odd);
            sub(v2, odd, even);
            sub(&mut v3[..n - 1], &even[..n - 1], &even[1..]);
            for first in (0..n).step_by(tile_cols) {
                let last = first + tile_cols - 1;
                v0[first] = -odd[first];
                v3[last] = even[last];
            }
        }
    }
}

/// `A e Aᵀ` for the output gradient's 2×2 block `e` of every tile of the tile `rows` and
/// output channel, into `scratch.m` laid out as `V` is in `scratch.v` (`[16][c_out][n]`).
/// Positions past an odd edge count as zeros. As in [`transform_input`], the blocks are
/// gathered first and the arithmetic runs over all `n` tiles at once.
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn transform_output_grad<'s, #[cfg(feature = "simd")] S: macerator::Simd, T: Element>(
    d: &Dims,
    dy: &[T],
    rows: Range<usize>,
    scratch: &mut Scratch<'s, T>,
) {
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let (plane, n) = (d.h * d.w, rows.len() * tile_cols);
    for k in 0..d.c_out {
        // The blocks' two rows, each as its even and its odd columns: e0, o0, e1, o1.
        for (index, row) in rows.clone().enumerate() {
            let (image, ty) = (row / tile_rows, row % tile_rows);
            let src = &dy[(image * d.c_out + k) * plane..][..plane];
            let [e0, o0, e1, o1] =
                strided4_mut(&mut scratch.rows[index * tile_cols..], n, tile_cols);
            for (r, (even, odd)) in [(e0, o0), (e1, o1)].into_iter().enumerate() {
                let y = 2 * ty + r;
                if y < d.h {
                    split_columns(&src[y * d.w..][..d.w], even, odd);
                } else {
                    even.fill(T::zero());
                    odd.fill(T::zero());
                }
            }
        }
        let [e0, o0, e1, o1] = split4(&scratch.rows[..4 * n], n);
        // A e: the rows e0, e0 + e1, e0 − e1 and −e1, each as even and odd columns.
        let [se, so, de, do_] = split4_mut(&mut scratch.combined[..4 * n], n);
        add(se, e0, e1);
        add(so, o0, o1);
        sub(de, e0, e1);
        sub(do_, o0, o1);
        let (ne, no) = scratch.combined[4 * n..6 * n].split_at_mut(n);
        neg(ne, e1);
        neg(no, o1);
        let [se, so, de, do_] = split4(&scratch.combined[..4 * n], n);
        let (ne, no) = scratch.combined[4 * n..6 * n].split_at(n);
        // (A e) Aᵀ: columns p, p + q, p − q and −q of each row (p even, q odd).
        for (i, (even, odd)) in [(e0, o0), (se, so), (de, do_), (ne, no)]
            .into_iter()
            .enumerate()
        {
            let start = (i * 4 * d.c_out + k) * n;
            let [m0, m1, m2, m3] = strided4_mut(&mut scratch.m[start..], d.c_out * n, n);
            m0.copy_from_slice(even);
            add(m1, even, odd);
            sub(m2, even, odd);
            neg(m3, odd);
        }
    }
}

/// Splits a row into its even columns (0, 2, …) and its odd ones (1, 3, …, a zero after an
/// odd-length row's end).
#[inline(always)]
fn split_columns<T: Element>(row: &[T], even: &mut [T], odd: &mut [T]) {
    let pairs = row.len() / 2;
    for ((e, o), pair) in even.iter_mut().zip(odd.iter_mut()).zip(row.chunks_exact(2)) {
        *e = pair[0];
        *o = pair[1];
    }
    if row.len() % 2 == 1 {
        even[pairs] = row[row.len() - 1];
        odd[pairs] = T::zero();
    }
}

/// `out = −a`, value by value.
#[inline(always)]
fn neg<T: Element>(out: &mut [T], a: &[T]) {
    out.iter_mut().zip(a).for_each(|(o, &a)| *o = -a);
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
/// task's output images `y` (the parts of 2×2 blocks past an odd edge are dropped), or with
/// [`Output::PooledRelu`] each block's ReLU'd maximum. The sums run over all `n` tiles of the
/// block; only the writes into the output rows go along each tile row.
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn transform_output<'a, 's, #[cfg(feature = "simd")] S: macerator::Simd, T: Element>(
    d: &Dims,
    rows: Range<usize>,
    scratch: &mut Scratch<'s, T>,
    bias: Option<&'a [T]>,
    output: Output,
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
            let tiles = index * tile_cols..(index + 1) * tile_cols;
            if output == Output::PooledRelu {
                // Even sizes: a tile's 2×2 block is one pooling window, a tile row one row.
                let pooled = &mut y[((image * d.c_out + k) * tile_rows + ty) * tile_cols..];
                let corners = [0, 1, 2, 3].map(|i| &out[i][tiles.clone()]);
                for (tx, value) in pooled[..tile_cols].iter_mut().enumerate() {
                    value.write(max_relu(corners.map(|corner| corner[tx])));
                }
                continue;
            }
            let y_plane = &mut y[(image * d.c_out + k) * plane..][..plane];
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
