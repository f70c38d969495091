//! 3×3 convolutions of stride 1 and padding 1 by Winograd's minimal filtering F(4×4, 3×3)
//! (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016): each 4×4
//! block of the output costs 36 multiply-adds per input and output channel instead of 144,
//! where F(2×2, 3×3), which this replaced, cost 64 (16 per 2×2 block).
//!
//! With `d` a 6×6 input tile (its 4×4 output block's receptive field), `g` a 3×3 kernel and
//! `Y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A`, summed over input channels, the 36 positions of the
//! transformed tiles are 36 independent matrix products, `M[ξ] = U[ξ] · V[ξ]`, with
//! `U[ξ]` the `[c_out × c_in]` transformed kernels and `V[ξ]` the `[c_in × tiles]`
//! transformed inputs. The transforms scale by at most 8 (`Aᵀ`) and 5 (`Bᵀ`), so the results
//! match the direct convolution to a few float roundings of the largest terms (catdog's tests
//! compare them with ndarray's).
//!
//! The weight gradient is the same algorithm turned around, F(3×3, 4×4): with `e` a 4×4
//! block of the output gradient, `A` the transpose of `Aᵀ`, and summed over tiles and images,
//! `dW = Gᵀ [(A e Aᵀ) ⊙ (Bᵀ d B)] G`, so the 36 products become `P[ξ] = E[ξ] · V[ξ]ᵀ`,
//! `[c_out × tiles] · [tiles × c_in]`, 36 multiply-adds per block and channel pair again.
//!
//! Tiles are transformed and multiplied in blocks of whole tile rows small enough to stay in
//! the core's cache; several images share a block when theirs are small, so that the products
//! stay wide where the images are 8×8.
//!
//! Where the images are so small and the channels so many that the kernels outweigh the tiles
//! (ResNet-18's 7×7 layers at batch 16), the whole batch is one block and the threads share
//! out the output channels instead ([`whole`]): each transforms only its own kernels, in a
//! buffer it then reads while it is still in cache, and the weight gradient's products are
//! summed over all tiles in one product, none left to add up across threads.

extern crate std;

use alloc::vec;
use alloc::vec::Vec;
use core::cell::Cell;
use core::mem::MaybeUninit;
use core::ops::Range;

use rayon::prelude::*;

use super::epilogue::Epilogue;
use super::gemm::{Matrix, gemm, gemm_into_strided, gemm_strided};
use super::pool::max_relu;
use super::{Element, assume_written};
use crate::ops::SendMutPtr;

/// Input channels from which this beats im2col: the products here are only `c_in` deep
/// (im2col's are `9·c_in`), and catdog's first layer has 3.
pub(super) const MIN_CHANNELS: usize = 16;

/// The transformed tiles and products of one block take about this much memory, a core's L2
/// cache on the development machine: 2 MB made SmallCnn's inference 5 % faster than 1 MB and
/// 4 MB, and 512 kB 6 % slower (alternated in one process, batch 32, 64 px, F(2×2, 3×3)).
const BLOCK_BYTES: usize = 2 << 20;

/// Tiles a block holds at least, whatever [`BLOCK_BYTES`] says: each block's 36 products
/// read all of the transformed kernels (36·c_in·c_out values, 36 MB at 512 channels), and
/// the weight gradient reads and writes as many sums, so a block of deep layers must give
/// each of them enough work. At 2 MB, ResNet-18's 512-channel layer at 7×7 made blocks of 12
/// tiles, rows too few for gemm's widest kernel (16 lanes × 4 on AVX-512), and streamed the
/// kernels from memory once per 12 tiles. 64 made its training 1.1–1.2× faster at batch 32;
/// 128 and 256 gained no more beyond the noise, and would change SmallCnn's blocks more.
const MIN_BLOCK_TILES: usize = 64;

/// The side of the output block a tile makes, and of the input tile it reads.
const BLOCK: usize = 4;
const TILE: usize = 6;
/// The positions of a transformed tile, one matrix product each.
const POSITIONS: usize = TILE * TILE;
/// Kernels transformed side by side, so that the kernels' transforms run in vectors (16
/// floats fill an AVX-512 register).
const LANES: usize = 16;
/// The rows of gemm's widest kernel on AVX-512: four vectors of 16 floats.
const WIDE_TILES: usize = 4 * LANES;

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
        self.h.div_ceil(BLOCK)
    }
    fn tile_cols(&self) -> usize {
        self.w.div_ceil(BLOCK)
    }
    /// Tile rows per block, so that a block's transformed inputs and outputs (36 matrices
    /// each) fit in [`BLOCK_BYTES`], but with [`MIN_BLOCK_TILES`] tiles at least; then
    /// rounded down to make the block's tiles a multiple of [`WIDE_TILES`], or else of
    /// [`LANES`], where up to twice as many rows do that. gemm runs its kernels down the
    /// tiles (it solves the product transposed), and a remainder runs in a narrower kernel
    /// or a partly empty one, after gemm has copied the whole block into panels. ResNet-18's
    /// 28×28 layers made blocks of 49 tiles (a 7×7 image); at 112 their forward and
    /// input-gradient convolutions took 7–9 % less time (batch 16, alternated step by step
    /// in one process, 2-core Zen 5).
    fn block_rows<T>(&self) -> usize {
        let tile_cols = self.tile_cols();
        let fits =
            BLOCK_BYTES / (POSITIONS * size_of::<T>() * (self.c_in + self.c_out) * tile_cols);
        let rows = fits.max(MIN_BLOCK_TILES.div_ceil(tile_cols)).max(1);
        // Rows whose tiles make a multiple of `tiles`.
        let step = |tiles: usize| tiles / gcd(tiles, tile_cols);
        [WIDE_TILES, LANES]
            .map(step)
            .into_iter()
            .find(|&step| step <= 2 * rows)
            .map_or(rows, |step| rows.max(step) / step * step)
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// `G·(a, b, c)` for one column (or, applied again, one row) of a 3×3 kernel, and `Gᵀ·p` for
/// one column (or row) of a 6×6 product, with
/// `G = [[1/4, 0, 0], [−1/6, −1/6, −1/6], [−1/6, 1/6, −1/6], [1/24, 1/12, 1/6],
/// [1/24, −1/12, 1/6], [0, 0, 1]]`.
struct KernelTransform<T> {
    quarter: T,
    sixth: T,
    twelfth: T,
    twenty_fourth: T,
}

impl<T: Element> KernelTransform<T> {
    fn new() -> Self {
        let c = |v: f64| T::from(v).unwrap();
        KernelTransform {
            quarter: c(0.25),
            sixth: c(1.0 / 6.0),
            twelfth: c(1.0 / 12.0),
            twenty_fourth: c(1.0 / 24.0),
        }
    }

    #[inline(always)]
    fn g(&self, [a, b, c]: [T; 3]) -> [T; TILE] {
        let (outer, middle) = (-(a + c) * self.sixth, b * self.sixth);
        let (ends, centre) = (a * self.twenty_fourth + c * self.sixth, b * self.twelfth);
        [
            a * self.quarter,
            outer - middle,
            outer + middle,
            ends + centre,
            ends - centre,
            c,
        ]
    }

    /// `G g Gᵀ` of the kernels `(k0 + l, c)` for `l < n` (zeros past `n`): `out[ξ][l]`.
    #[inline(always)]
    fn lanes(
        &self,
        k0: usize,
        n: usize,
        c: usize,
        kernel: &impl Fn(usize, usize) -> [T; 9],
    ) -> [[T; LANES]; POSITIONS] {
        // `w[i][l]`: value i of kernel (k0 + l, c).
        let mut w = [[T::zero(); LANES]; 9];
        for l in 0..n {
            for (i, v) in kernel(k0 + l, c).into_iter().enumerate() {
                w[i][l] = v;
            }
        }
        let mut out = [[T::zero(); LANES]; POSITIONS];
        for l in 0..LANES {
            let columns: [[T; TILE]; 3] =
                core::array::from_fn(|j| self.g([w[j][l], w[3 + j][l], w[6 + j][l]]));
            for i in 0..TILE {
                let row = self.g(columns.map(|column| column[i]));
                for (j, v) in row.into_iter().enumerate() {
                    out[i * TILE + j][l] = v;
                }
            }
        }
        out
    }

    #[inline(always)]
    fn gt(&self, [p0, p1, p2, p3, p4, p5]: [T; TILE]) -> [T; 3] {
        let (near, far) = (p1 + p2, p3 + p4);
        [
            p0 * self.quarter - near * self.sixth + far * self.twenty_fourth,
            (p2 - p1) * self.sixth + (p3 - p4) * self.twelfth,
            (far - near) * self.sixth + p5,
        ]
    }
}

/// The 36 matrices `U[ξ] = G g Gᵀ`, each `[c_out × c_in]` stored column-major
/// (`u[(ξ·c_in + c)·c_out + k]`), from `kernel(out_channel, in_channel)`, a 3×3 kernel in
/// row-major order. Made anew at every call (the weights change at every training step), on
/// all threads, [`LANES`] output channels of one input channel at a time: their kernels
/// gathered as 9 rows of lanes, the transform computed on whole rows in registers, and each
/// position's run of lanes written straight to its place in `u`. Until 2026-12-06 the
/// values were made by input channel, one value at a time into 36 arrays (the loop did not
/// run in vectors), and then copied into place by a second pass: together 16 % of
/// ResNet-18's training at batch 16 on a Zen 5 EPYC (perf), which transforms its 113 MB of
/// kernels twice a step (forward and input gradient).
pub(super) fn transform_weights<T: Element>(
    c_out: usize,
    c_in: usize,
    kernel: impl Fn(usize, usize) -> [T; 9] + Sync,
) -> Vec<T> {
    // Input channels per task: enough tasks for every thread, each reading its kernels'
    // cache lines while they are still in cache.
    const CHANNELS: usize = 32;
    let transform = KernelTransform::<T>::new();
    let len = POSITIONS * c_in * c_out;
    let mut u = Vec::with_capacity(len);
    let dst = SendMutPtr::new(u.spare_capacity_mut().as_mut_ptr());
    let (blocks, chunks) = (c_out.div_ceil(LANES), c_in.div_ceil(CHANNELS));
    (0..blocks * chunks).into_par_iter().for_each(|task| {
        let (k0, first) = (task % blocks * LANES, task / blocks * CHANNELS);
        let n = LANES.min(c_out - k0);
        for c in first..(first + CHANNELS).min(c_in) {
            let out = transform.lanes(k0, n, c, &kernel);
            for (xi, run) in out.iter().enumerate() {
                // SAFETY: `(xi·c_in + c)·c_out + k0 + n ≤ len`, and each task writes only
                // its own output channels `k0..k0 + n` of its own input channels, so no
                // value is written twice; together the tasks write every value of `u`.
                unsafe { store_run(run, dst.ptr_add((xi * c_in + c) * c_out + k0).cast(), n) };
            }
        }
    });
    // SAFETY: the tasks wrote all `len` values (see above).
    unsafe { u.set_len(len) };
    u
}

/// The first `n` values of `run` to `at`: a whole run as one value (two vector stores at
/// most), a partial one through [`copy_part`]. Copied with a length known only at run time,
/// every run was a call to memcpy (6 % of ResNet-18's training at batch 16 in
/// [`transform_weights`], 1.8 % in [`transform_kernels_into`]).
///
/// # Safety
/// `at` must be valid for `n` writes, `n ≤ LANES`.
#[inline(always)]
unsafe fn store_run<T: Copy>(run: &[T; LANES], at: *mut T, n: usize) {
    // SAFETY: as the caller vouches.
    unsafe {
        if n == LANES {
            at.cast::<[T; LANES]>().write_unaligned(*run);
        } else {
            copy_part(run, at, n);
        }
    }
}

/// The first `n` values of `run` to `at`, for the last, partial run of lanes: a function
/// of its own, so that the compiler keeps the whole runs' stores in [`store_run`] free of
/// memcpy calls.
///
/// # Safety
/// `at` must be valid for `n` writes, `n ≤ LANES`.
#[inline(never)]
unsafe fn copy_part<T: Copy>(run: &[T; LANES], at: *mut T, n: usize) {
    // SAFETY: as the caller vouches.
    unsafe { core::ptr::copy_nonoverlapping(run.as_ptr(), at, n) }
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

/// The 3×3 kernels of a convolution, as [`conv3x3`] takes them.
pub(super) enum Kernels<'a, T, F> {
    /// Transformed by [`transform_weights`] already.
    Transformed(&'a [T]),
    /// `kernel(out_channel, in_channel)`, a 3×3 kernel in row-major order (a closure the
    /// compiler sees through: behind `dyn`, a call per kernel made SmallCnn's training about
    /// 4 % slower).
    Raw(F),
}

/// `y = conv3×3(x) + bias`, pooled as `output` says.
pub(super) fn conv3x3<T: Element, F: Fn(usize, usize) -> [T; 9] + Sync>(
    d: &Dims,
    x: &[T],
    kernels: Kernels<'_, T, F>,
    bias: Option<&[T]>,
    output: Output,
    after: Epilogue<'_, T>,
) -> Vec<T> {
    let (image_in, image_out) = (d.c_in * d.h * d.w, output.image_len(d.c_out, d.h, d.w));
    let len = d.batch * image_out;
    if len == 0 {
        return Vec::new();
    }
    let raw = matches!(kernels, Kernels::Raw(_));
    if whole(d, if raw { 2 } else { WHOLE_RATIO }) {
        return conv3x3_whole(d, x, kernels, bias, output, after);
    }
    let made;
    let u = match kernels {
        Kernels::Transformed(u) => u,
        Kernels::Raw(kernel) => {
            made = transform_weights(d.c_out, d.c_in, kernel);
            &made
        }
    };
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    // A thread's share of the images in one run of blocks, which go on from one image into
    // the next, so that all blocks but the last are full: a task an image, as until
    // 2026-12-07, left ResNet-18's 56×56 layers blocks of 8 and 6 tile rows, and their
    // forward and input-gradient convolutions took 3–4 % longer (measured as above).
    let threads = rayon::current_num_threads();
    let per_thread = d.batch.div_ceil(threads);
    let parallelism = if d.batch.div_ceil(per_thread) >= threads {
        gemm::Parallelism::None
    } else {
        gemm::Parallelism::Rayon(0)
    };
    let block_rows = d.block_rows::<T>().min(per_thread * tile_rows);
    let block_tiles = POSITIONS * block_rows * tile_cols;
    let mut y = Vec::with_capacity(len);
    y.spare_capacity_mut()[..len]
        .par_chunks_mut(per_thread * image_out)
        .enumerate()
        .for_each(|(thread, y_thread)| {
            with_scratch(d, block_tiles, |mut scratch: Scratch<'_, T>| {
                let images = y_thread.len() / image_out;
                let first_image = thread * per_thread;
                let x_thread = &x[first_image * image_in..][..images * image_in];
                for first in (0..images * tile_rows).step_by(block_rows) {
                    let rows = first..(first + block_rows).min(images * tile_rows);
                    let n = rows.len() * tile_cols;
                    let Scratch {
                        v, rows: gathered, combined, ..
                    } = &mut scratch;
                    let at = Placement::block(d.c_in, n);
                    let channels = 0..d.c_in;
                    let (x, block) = (x_thread, rows.clone());
                    transform_input::<T>(d, x, block, channels, v, at, gathered, combined);
                    for xi in 0..POSITIONS {
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
                    let after = after.from(first_image * image_out);
                    let at = Placement::block(d.c_out, n);
                    let (m, sums) = (&*scratch.m, &mut *scratch.sums);
                    transform_output::<T>(d, rows, m, at, sums, bias, output, after, y_thread);
                }
            })
        });
    // SAFETY: each thread's blocks cover all tile rows of its images, and `transform_output`
    // writes every output value of the tile rows it is given.
    unsafe { y.set_len(len) };
    y
}

/// `dW` of the convolution [`conv3x3`] computes (`[c_out, c_in, 3, 3]`), from its input `x`
/// and its output's gradient `dy`. Each thread sums the products of its share of the images,
/// then the shares are added and transformed back. A thread's products lie kernel by kernel
/// (`p[(k·36 + ξ)·c_in + c]`), so that the last step reads each kernel's from one stretch of
/// memory; position by position (`[ξ][k][c]`), as until 2026-12-06, it read 36 runs far
/// apart for every 16 input channels (5.5 % of ResNet-18's training at batch 16, perf). The
/// first block's products are written rather than added to zeroed buffers.
pub(super) fn weight_grad3x3<T: Element>(d: &Dims, x: &[T], dy: &[T]) -> Vec<T> {
    let (image_in, image_out) = (d.c_in * d.h * d.w, d.c_out * d.h * d.w);
    let len = d.c_out * d.c_in * 9;
    if image_in == 0 || d.batch == 0 || d.c_out == 0 {
        return vec![T::zero(); len];
    }
    if whole(d, WHOLE_RATIO) {
        return weight_grad_whole(d, x, dy);
    }
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let block_rows = d.block_rows::<T>();
    let per_thread = d.batch.div_ceil(rayon::current_num_threads());
    let block_rows = block_rows.min(per_thread * tile_rows);
    let block_tiles = POSITIONS * block_rows * tile_cols;
    let products = POSITIONS * d.c_out * d.c_in;
    // Each thread's products; added up below as the kernels' transform reads them.
    let threads: Vec<Vec<T>> = x
        .par_chunks(per_thread * image_in)
        .zip(dy.par_chunks(per_thread * image_out))
        .map(|(x_thread, dy_thread)| {
            // Not zeroed first: the first block's products are written, the others added.
            let mut p = Vec::with_capacity(products);
            with_scratch(d, block_tiles, |mut scratch: Scratch<'_, T>| {
                let tiles = x_thread.len() / image_in * tile_rows;
                for first in (0..tiles).step_by(block_rows) {
                    let rows = first..(first + block_rows).min(tiles);
                    let n = rows.len() * tile_cols;
                    let Scratch {
                        v, m, rows: gathered, combined, ..
                    } = &mut scratch;
                    let at = Placement::block(d.c_in, n);
                    let (x, dy, all_in, all_out) = (x_thread, dy_thread, 0..d.c_in, 0..d.c_out);
                    transform_input::<T>(d, x, rows.clone(), all_in, v, at, gathered, combined);
                    let at = Placement::block(d.c_out, n);
                    transform_output_grad::<T>(d, dy, rows, all_out, m, at, gathered, combined);
                    for xi in 0..POSITIONS {
                        let shape = [d.c_out, d.c_in, n];
                        let (at, strides) = (xi * d.c_in, [POSITIONS * d.c_in, 1]);
                        let lhs = Matrix::rows(&scratch.m[xi * d.c_out * n..], n);
                        let rhs = Matrix::rows(&scratch.v[xi * d.c_in * n..], n).transposed();
                        let none = gemm::Parallelism::None;
                        if first == 0 {
                            let p = &mut p.spare_capacity_mut()[at..];
                            gemm_into_strided(shape, p, strides, lhs, rhs, none);
                        } else {
                            gemm_strided(shape, &mut p[at..], strides, true, lhs, rhs, none);
                        }
                    }
                    if first == 0 {
                        // SAFETY: the first block's 36 products wrote all `products` values.
                        unsafe { p.set_len(products) };
                    }
                }
            });
            // A thread given no tile rows (no images) adds nothing.
            p.resize(products, T::zero());
            p
        })
        .collect();
    // Gᵀ P G for every kernel: Gᵀ on the columns of P, then on the rows of the result, for
    // `LANES` input channels at a time, which lie side by side in every product matrix, so
    // that the arithmetic runs in vectors; the threads' products are added as they are read.
    // Until 2026-12-06 the threads' buffers were first added into one (a pass over 37 MB for
    // each 512-channel layer) and the transform gathered a kernel's 36 values one at a time.
    let transform = KernelTransform::<T>::new();
    let mut dw = vec![T::zero(); len];
    dw.par_chunks_mut(9 * d.c_in)
        .enumerate()
        .for_each(|(k, dw_k)| {
            let parts = threads.iter().map(|p| &p[k * POSITIONS * d.c_in..][..POSITIONS * d.c_in]);
            gradient_kernels(&transform, parts, d.c_in, dw_k);
        });
    dw
}

/// Where a transform puts (or finds) channel `c`'s position `ξ` of a run of tiles: at
/// `ξ·position + c·channel` in its buffer.
#[derive(Clone, Copy, Debug)]
struct Placement {
    position: usize,
    channel: usize,
}

impl Placement {
    /// A block of `n` tiles, position by position (`[36][channels][n]`), as gemm reads them.
    fn block(channels: usize, n: usize) -> Self {
        Placement {
            position: channels * n,
            channel: n,
        }
    }

    /// All `tiles` of the batch, channel by channel (`[channels][36][tiles]`), as the
    /// whole-batch path keeps them, so that a task's run of channels is one stretch.
    fn whole(tiles: usize) -> Self {
        Placement {
            position: tiles,
            channel: POSITIONS * tiles,
        }
    }
}

/// [`whole`] takes a convolution whose kernels (`c_in·c_out` of them) are this many times
/// its tiles' values (`tiles·(c_in + c_out)`) or more. On a 2-core Zen 5 EPYC, ResNet-18's
/// 7×7 layers (512 channels) at batch 16, where that ratio is 4, took 21 ms a layer a
/// training step instead of 37 (forward, input and weight gradients) and trained 1.1× faster
/// as a whole; at batch 32 (ratio 2) the weight gradient took 16.6 ms instead of 14.1, and
/// the 14×14 layers at batch 16 (ratio 0.5) made training 1.1× slower. Convolutions that
/// transform their kernels at every call (training's) take the path from a ratio of 2: at
/// batch 32 ResNet-18 then trained 1.05× faster (the weight gradient staying as it was).
const WHOLE_RATIO: usize = 4;

/// The transformed kernels a task of the whole-batch path makes at a time: 4.7 MB at 512
/// input channels and 64 output channels, which stay in the shared L3 cache while the task's
/// 36 products read them. With 16 output channels a task (1.2 MB, within a core's L2), the
/// weight gradient of ResNet-18's 7×7 layers took 13.3 ms instead of 7.0 at batch 16, each
/// task's products reading all of the transformed inputs again.
const WHOLE_KERNEL_BYTES: usize = 5 << 20;

/// Whether [`conv3x3`] and [`weight_grad3x3`] take the whole batch at once, output channels
/// spread over the threads, rather than images: where the images are small and the channels
/// many, as in ResNet-18's 7×7 layers, the kernels (36 transformed values each) are more
/// than the tiles, and each thread taking its images then transformed all of them, read them
/// all, and (for the weight gradient) wrote all of its own products, to be added up after.
fn whole(d: &Dims, ratio: usize) -> bool {
    let tiles = d.batch * d.tile_rows() * d.tile_cols();
    d.c_in * d.c_out >= ratio * tiles * (d.c_in + d.c_out)
}

/// Output channels a task of the whole-batch path takes: as many as [`WHOLE_KERNEL_BYTES`]
/// of transformed kernels hold, in a multiple of [`LANES`], the tasks a multiple of the
/// thread count.
fn whole_chunk<T>(c_in: usize, c_out: usize) -> usize {
    let most = (WHOLE_KERNEL_BYTES / (POSITIONS * size_of::<T>() * c_in.max(1)) / LANES).max(1);
    let tasks = c_out.div_ceil(most * LANES).next_multiple_of(rayon::current_num_threads());
    c_out.div_ceil(tasks).next_multiple_of(LANES)
}

/// One of the tile transforms below (`transform`, given a run of channels, its part of
/// `out`, and two buffers of `sets·tiles` values each for its gathered rows and their
/// combinations) for every tile of the batch and all `channels`, into `out` laid out as
/// [`Placement::whole`] says, on all threads, a run of channels each.
fn transform_whole<T: Element>(
    tiles: usize,
    channels: usize,
    sets: usize,
    out: &mut [T],
    transform: impl Fn(Range<usize>, &mut [T], &mut [T], &mut [T]) + Sync,
) {
    let per_task = channels.div_ceil(4 * rayon::current_num_threads()).max(1);
    out[..channels * POSITIONS * tiles]
        .par_chunks_mut(per_task * POSITIONS * tiles)
        .enumerate()
        .for_each_init(
            || vec![T::zero(); 2 * sets * tiles],
            |buffer, (task, out_task)| {
                let first = task * per_task;
                let (gathered, combined) = buffer.split_at_mut(sets * tiles);
                transform(first..(first + per_task).min(channels), out_task, gathered, combined);
            },
        );
}

/// [`conv3x3`] of the whole batch at once: the input's transform on all threads by input
/// channels, then the products by runs of output channels, each task transforming its own
/// kernels into a buffer that stays in its core's cache, then the output's transform by
/// images.
fn conv3x3_whole<T: Element, F: Fn(usize, usize) -> [T; 9] + Sync>(
    d: &Dims,
    x: &[T],
    kernels: Kernels<'_, T, F>,
    bias: Option<&[T]>,
    output: Output,
    after: Epilogue<'_, T>,
) -> Vec<T> {
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let tiles = d.batch * tile_rows * tile_cols;
    let at = Placement::whole(tiles);
    let len = (d.c_in + d.c_out) * POSITIONS * tiles;
    with_buffer(&WHOLE, len, |buffer: &mut [T]| {
        let (v, m) = buffer.split_at_mut(d.c_in * POSITIONS * tiles);
        let rows = 0..d.batch * tile_rows;
        transform_whole(tiles, d.c_in, 24, v, |channels, v, gathered, combined| {
            let rows = rows.clone();
            transform_input::<T>(d, x, rows, channels, v, at, gathered, combined);
        });
        products_whole(d, tiles, v, m, &kernels);
        output_whole(d, m, bias, output, after)
    })
}

/// The whole-batch path's products, `M[ξ] = U[ξ] · V[ξ]` by runs of output channels, each
/// task transforming its own kernels (where they are not kept) into a buffer that stays in
/// its core's cache while its 36 products read it.
fn products_whole<T: Element, F: Fn(usize, usize) -> [T; 9] + Sync>(
    d: &Dims,
    tiles: usize,
    v: &[T],
    m: &mut [T],
    kernels: &Kernels<'_, T, F>,
) {
    let chunk = whole_chunk::<T>(d.c_in, d.c_out);
    let transform = KernelTransform::<T>::new();
    m.par_chunks_mut(chunk * POSITIONS * tiles)
        .enumerate()
        .for_each_init(Vec::new, |buffer, (task, m_task)| {
            let (k0, n) = (task * chunk, m_task.len() / (POSITIONS * tiles));
            let (u, col_stride) = match kernels {
                Kernels::Transformed(u) => (&u[k0..], d.c_out),
                Kernels::Raw(kernel) => {
                    transform_kernels_into(&transform, k0..k0 + n, d.c_in, kernel, buffer);
                    (&buffer[..], n)
                }
            };
            for xi in 0..POSITIONS {
                gemm_strided(
                    [n, tiles, d.c_in],
                    &mut m_task[xi * tiles..],
                    [POSITIONS * tiles, 1],
                    false,
                    Matrix {
                        data: &u[xi * d.c_in * col_stride..],
                        row_stride: 1,
                        col_stride,
                    },
                    Matrix {
                        data: &v[xi * tiles..],
                        row_stride: POSITIONS * tiles,
                        col_stride: 1,
                    },
                    gemm::Parallelism::None,
                );
            }
        });
}

/// The whole-batch path's output transform from its products `m`, by images.
fn output_whole<T: Element>(
    d: &Dims,
    m: &[T],
    bias: Option<&[T]>,
    output: Output,
    after: Epilogue<'_, T>,
) -> Vec<T> {
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let at = Placement::whole(d.batch * tile_rows * tile_cols);
    let image_out = output.image_len(d.c_out, d.h, d.w);
    let len = d.batch * image_out;
    let per_task = d.batch.div_ceil(rayon::current_num_threads());
    let mut y = Vec::with_capacity(len);
    y.spare_capacity_mut()[..len]
        .par_chunks_mut(per_task * image_out)
        .enumerate()
        .for_each(|(task, y_task)| {
            let (first, images) = (task * per_task, y_task.len() / image_out);
            let rows = 0..images * tile_rows;
            let mut sums = vec![T::zero(); 40 * rows.len() * tile_cols];
            let m_task = &m[first * tile_rows * tile_cols..];
            let after = after.from(first * image_out);
            transform_output::<T>(d, rows, m_task, at, &mut sums, bias, output, after, y_task);
        });
    // SAFETY: the tasks' images cover the batch, and `transform_output` writes every output
    // value of the tile rows it is given.
    unsafe { y.set_len(len) };
    y
}

/// [`weight_grad3x3`] of the whole batch at once: the input's and the output gradient's
/// transforms on all threads by channels, then by runs of output channels the products,
/// summed over all tiles in one product each and turned into kernels while in cache.
fn weight_grad_whole<T: Element>(d: &Dims, x: &[T], dy: &[T]) -> Vec<T> {
    let tiles = d.batch * d.tile_rows() * d.tile_cols();
    let at = Placement::whole(tiles);
    let len = (d.c_in + d.c_out) * POSITIONS * tiles;
    with_buffer(&WHOLE, len, |buffer: &mut [T]| {
        let (v, e) = buffer.split_at_mut(d.c_in * POSITIONS * tiles);
        let rows = 0..d.batch * d.tile_rows();
        transform_whole(tiles, d.c_in, 24, v, |channels, v, gathered, combined| {
            let rows = rows.clone();
            transform_input::<T>(d, x, rows, channels, v, at, gathered, combined);
        });
        transform_whole(tiles, d.c_out, 16, e, |channels, e, gathered, combined| {
            let rows = rows.clone();
            transform_output_grad::<T>(d, dy, rows, channels, e, at, gathered, combined);
        });
        kernel_grads_whole(d, tiles, v, e)
    })
}

/// The whole-batch weight gradient from the transformed inputs `v` and output gradients
/// `e`: by runs of output channels, the products summed over all tiles, then turned into
/// kernels while in cache.
fn kernel_grads_whole<T: Element>(d: &Dims, tiles: usize, v: &[T], e: &[T]) -> Vec<T> {
    let chunk = whole_chunk::<T>(d.c_in, d.c_out);
    let transform = KernelTransform::<T>::new();
    let mut dw = vec![T::zero(); d.c_out * d.c_in * 9];
    dw.par_chunks_mut(chunk * d.c_in * 9)
        .enumerate()
        .for_each_init(Vec::new, |p, (task, dw_task)| {
            let (k0, n) = (task * chunk, dw_task.len() / (d.c_in * 9));
            // `p[(k·36 + ξ)·c_in + c]`, as in `weight_grad3x3`.
            p.resize(n * POSITIONS * d.c_in, T::zero());
            for xi in 0..POSITIONS {
                gemm_strided(
                    [n, d.c_in, tiles],
                    &mut p[xi * d.c_in..],
                    [POSITIONS * d.c_in, 1],
                    false,
                    Matrix {
                        data: &e[(k0 * POSITIONS + xi) * tiles..],
                        row_stride: POSITIONS * tiles,
                        col_stride: 1,
                    },
                    Matrix {
                        data: &v[xi * tiles..],
                        row_stride: 1,
                        col_stride: POSITIONS * tiles,
                    },
                    gemm::Parallelism::None,
                );
            }
            for (k, dw_k) in dw_task.chunks_exact_mut(9 * d.c_in).enumerate() {
                let part = &p[k * POSITIONS * d.c_in..][..POSITIONS * d.c_in];
                gradient_kernels(&transform, core::iter::once(part), d.c_in, dw_k);
            }
        });
    dw
}

/// The transformed kernels of the output channels `ks`, into `u` laid out as
/// [`transform_weights`] lays out all of them (`u[(ξ·c_in + c)·ks.len() + k − ks.start]`).
fn transform_kernels_into<T: Element>(
    transform: &KernelTransform<T>,
    ks: Range<usize>,
    c_in: usize,
    kernel: &impl Fn(usize, usize) -> [T; 9],
    u: &mut Vec<T>,
) {
    let width = ks.len();
    u.resize(POSITIONS * c_in * width, T::zero());
    for c in 0..c_in {
        for k0 in ks.clone().step_by(LANES) {
            let n = LANES.min(ks.end - k0);
            let out = transform.lanes(k0, n, c, kernel);
            for (xi, run) in out.iter().enumerate() {
                let at = &mut u[(xi * c_in + c) * width + k0 - ks.start..][..n];
                // SAFETY: `at` holds `n ≤ LANES` values.
                unsafe { store_run(run, at.as_mut_ptr(), n) };
            }
        }
    }
}

/// `dW` of one output channel (`[c_in, 3, 3]`) from its products `P` (`[36][c_in]`), summed
/// over `parts` (one per thread that made some).
fn gradient_kernels<'p, T: Element>(
    transform: &KernelTransform<T>,
    parts: impl Iterator<Item = &'p [T]> + Clone,
    c_in: usize,
    dw_k: &mut [T],
) {
    for c0 in (0..c_in).step_by(LANES) {
        let n = LANES.min(c_in - c0);
        let mut sums = [[T::zero(); LANES]; POSITIONS];
        for p in parts.clone() {
            for (xi, sum) in sums.iter_mut().enumerate() {
                let run = &p[xi * c_in + c0..][..n];
                for (s, &v) in sum.iter_mut().zip(run) {
                    *s += v;
                }
            }
        }
        // `out[o][l]`: value `o` of the 3×3 gradient of input channel `c0 + l`.
        let mut out = [[T::zero(); LANES]; 9];
        for l in 0..LANES {
            let at = |i: usize, j: usize| sums[i * TILE + j][l];
            let columns: [[T; 3]; TILE] =
                core::array::from_fn(|j| transform.gt(core::array::from_fn(|i| at(i, j))));
            for i in 0..3 {
                let row = transform.gt(columns.map(|column| column[i]));
                for j in 0..3 {
                    out[i * 3 + j][l] = row[j];
                }
            }
        }
        for (l, kernel) in dw_k[c0 * 9..].chunks_exact_mut(9).take(n).enumerate() {
            for (o, value) in kernel.iter_mut().enumerate() {
                *value = out[o][l];
            }
        }
    }
}

/// One thread's buffers: the transformed inputs `v` (`[36][c_in][n]`), the products `m`
/// (`[36][c_out][n]`), one channel's gathered rows and their combinations (at most `[24][n]`
/// each), and the output transform's partial sums for one channel (`[40][n]`). Every value
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
            24 * block_tiles / POSITIONS,
            24 * block_tiles / POSITIONS,
            40 * block_tiles / POSITIONS,
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
    /// The whole-batch path's transformed tiles and products, kept from call to call on the
    /// thread that calls it: 9.4 MB at ResNet-18's 7×7 layers, batch 16, zeroed afresh twice
    /// at each of the nine calls of a training step before (1.6 % of that step went to
    /// zeroing memory). [`whole`] bounds it by half the size of the layer's transformed
    /// kernels.
    static WHOLE: Cell<Vec<u64>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` with `len` values of the buffer `kept` holds for this thread, grown (and zeroed)
/// where it is too short; otherwise they are what the last call left there. Taken out rather
/// than borrowed: a thread waiting in a parallel section can start a task that needs one
/// too, which then makes its own.
fn with_buffer<T: Element, R>(
    kept: &'static std::thread::LocalKey<Cell<Vec<u64>>>,
    len: usize,
    f: impl FnOnce(&mut [T]) -> R,
) -> R {
    let words = (len * size_of::<T>()).div_ceil(size_of::<u64>());
    let mut buffer = kept.take();
    if buffer.len() < words {
        buffer.resize(words, 0);
    }
    let values: &mut [T] = bytemuck::cast_slice_mut(&mut buffer[..words]);
    let result = f(&mut values[..len]);
    kept.set(buffer);
    result
}

/// Runs `f` with this thread's scratch for blocks of `block_tiles` tiles.
fn with_scratch<T: Element>(d: &Dims, block_tiles: usize, f: impl FnOnce(Scratch<'_, T>)) {
    let lens = Scratch::<T>::lens(d, block_tiles);
    let len: usize = lens.iter().sum();
    with_buffer(&BUFFER, len, |values: &mut [T]| f(Scratch::split(lens, values)));
}

/// `Bᵀ d B` for every tile of the tile `rows` (counted over the task's images) and channel,
/// into `scratch.v`: column `(row − rows.start)·tile_cols + tile column` of each `V[ξ]`, with
/// `Bᵀ = [[4, 0, −5, 0, 1, 0], [0, −4, −4, 1, 1, 0], [0, 4, −4, −1, 1, 0],
/// [0, −2, −1, 2, 1, 0], [0, 2, −1, −2, 1, 0], [0, 4, 0, −5, 0, 1]]`.
/// The input rows of every tile are first gathered as four sets of columns (`4·tx + j`), in
/// the column order of `V`, so that the arithmetic runs over all `n` tiles of the block at
/// once: with 16-lane vectors (AVX-512) rows of a few tiles mostly ran as scalar remainders.
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn transform_input<#[cfg(feature = "simd")] S: macerator::Simd, T: Element>(
    d: &Dims,
    x: &[T],
    rows: Range<usize>,
    channels: Range<usize>,
    v: &mut [T],
    at: Placement,
    gathered_rows: &mut [T],
    combined: &mut [T],
) {
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let (plane, n) = (d.h * d.w, rows.len() * tile_cols);
    for c in channels.clone() {
        // `gathered[4·r + j]`: input row 4·ty − 1 + r, input column 4·tx + j, of every tile
        // (ty, tx), zero outside the image. A tile's other two columns, 4·tx − 1 and
        // 4·tx + 4, are its neighbours' j = 3 and j = 0.
        for (index, row) in rows.clone().enumerate() {
            let (image, ty) = (row / tile_rows, row % tile_rows);
            let src = &x[(image * d.c_in + c) * plane..][..plane];
            for r in 0..TILE {
                let start = 4 * r * n + index * tile_cols;
                let sets = strided_mut::<T, 4>(&mut gathered_rows[start..], n, tile_cols);
                match (BLOCK * ty + r).checked_sub(1).filter(|&y| y < d.h) {
                    Some(y) => split_columns(&src[y * d.w..][..d.w], sets),
                    None => sets.into_iter().for_each(|set| set.fill(T::zero())),
                }
            }
        }
        let gathered = split::<T, 24>(&gathered_rows[..24 * n], n);
        // Bᵀ d: `combined[4·i + j]` combines the six rows of column set j.
        for j in 0..4 {
            let [d0, d1, d2, d3, d4, d5] = core::array::from_fn(|r| gathered[4 * r + j]);
            let e = strided_mut::<T, 6>(&mut combined[j * n..], 4 * n, n);
            elementwise([d0, d1, d2, d3, d4, d5], e, input_transform);
        }
        // (Bᵀ d) B over the columns 4·tx − 1 to 4·tx + 4 of each combined row: the set j = 3
        // shifted a tile right (`left`), the four sets, the set j = 0 shifted a tile left
        // (`right`); the shifts bring in zeros at each tile row's ends.
        let [left, right] = strided_mut::<T, 2>(&mut gathered_rows[..], n, n);
        for (i, e) in combined[..24 * n].chunks_exact(4 * n).enumerate() {
            let [j0, j1, j2, j3] = split::<T, 4>(e, n);
            left[1..].copy_from_slice(&j3[..n - 1]);
            right[..n - 1].copy_from_slice(&j0[1..]);
            for first in (0..n).step_by(tile_cols) {
                left[first] = T::zero();
                right[first + tile_cols - 1] = T::zero();
            }
            let start = i * TILE * at.position + (c - channels.start) * at.channel;
            let out = strided_mut::<T, 6>(&mut v[start..], at.position, n);
            elementwise([&*left, j0, j1, j2, j3, &*right], out, input_transform);
        }
    }
}

/// `A e Aᵀ` for the output gradient's 4×4 block `e` of every tile of the tile `rows` and
/// output channel, into `scratch.m` laid out as `V` is in `scratch.v` (`[36][c_out][n]`).
/// Positions past an edge count as zeros. As in [`transform_input`], the blocks are gathered
/// first and the arithmetic runs over all `n` tiles at once.
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn transform_output_grad<#[cfg(feature = "simd")] S: macerator::Simd, T: Element>(
    d: &Dims,
    dy: &[T],
    rows: Range<usize>,
    channels: Range<usize>,
    m: &mut [T],
    at: Placement,
    gathered_rows: &mut [T],
    combined: &mut [T],
) {
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let (plane, n) = (d.h * d.w, rows.len() * tile_cols);
    for k in channels.clone() {
        // `e[4·r + j]`: row r of every block, column set j.
        for (index, row) in rows.clone().enumerate() {
            let (image, ty) = (row / tile_rows, row % tile_rows);
            let src = &dy[(image * d.c_out + k) * plane..][..plane];
            for r in 0..BLOCK {
                let start = 4 * r * n + index * tile_cols;
                let sets = strided_mut::<T, 4>(&mut gathered_rows[start..], n, tile_cols);
                let y = BLOCK * ty + r;
                if y < d.h {
                    split_columns(&src[y * d.w..][..d.w], sets);
                } else {
                    sets.into_iter().for_each(|set| set.fill(T::zero()));
                }
            }
        }
        let e = split::<T, 16>(&gathered_rows[..16 * n], n);
        // A e: its rows 1 to 4 (rows 0 and 5 are e's rows 0 and 3), each as its four column
        // sets, in `combined[4·(i − 1) + j]`.
        for j in 0..4 {
            let block_column = core::array::from_fn(|r| e[4 * r + j]);
            let a = strided_mut::<T, 4>(&mut combined[j * n..], 4 * n, n);
            elementwise(block_column, a, output_grad_middle);
        }
        let combined = split::<T, 16>(&combined[..16 * n], n);
        // (A e) Aᵀ: the same combinations of each row's column sets.
        for i in 0..TILE {
            let [j0, j1, j2, j3]: [&[T]; 4] = core::array::from_fn(|j| match i {
                0 => e[j],
                5 => e[12 + j],
                _ => combined[4 * (i - 1) + j],
            });
            let start = i * TILE * at.position + (k - channels.start) * at.channel;
            let [m0, m1, m2, m3, m4, m5] = strided_mut::<T, 6>(&mut m[start..], at.position, n);
            m0.copy_from_slice(j0);
            elementwise([j0, j1, j2, j3], [m1, m2, m3, m4], output_grad_middle);
            m5.copy_from_slice(j3);
        }
    }
}

/// Splits a row into its four sets of columns (`4·tx + j` for j = 0 to 3), with zeros past
/// the row's end in the last tile.
#[inline(always)]
fn split_columns<T: Element>(row: &[T], sets: [&mut [T]; 4]) {
    let whole = row.len() / BLOCK;
    let [c0, c1, c2, c3] = sets.map(|set| &mut set[..whole + usize::from(row.len() % BLOCK > 0)]);
    let quads = &row[..BLOCK * whole];
    for i in 0..whole {
        // SAFETY: `i < whole`, each set holds at least `whole` values and `quads` `4·whole`;
        // unchecked, and indexed rather than zipped, so that the loop is vectorised (as one
        // interleaved group of four loads), which the zipped chunks were not.
        unsafe {
            *c0.get_unchecked_mut(i) = *quads.get_unchecked(4 * i);
            *c1.get_unchecked_mut(i) = *quads.get_unchecked(4 * i + 1);
            *c2.get_unchecked_mut(i) = *quads.get_unchecked(4 * i + 2);
            *c3.get_unchecked_mut(i) = *quads.get_unchecked(4 * i + 3);
        }
    }
    let tail = &row[BLOCK * whole..];
    if !tail.is_empty() {
        for (j, set) in [c0, c1, c2, c3].into_iter().enumerate() {
            set[whole] = tail.get(j).copied().unwrap_or(T::zero());
        }
    }
}

/// `f` of the values at each position of `inputs`, written to the same position of
/// `outputs`, all in one pass (each input read once, the arithmetic in registers).
#[inline(always)]
fn elementwise<T: Element, const I: usize, const O: usize>(
    inputs: [&[T]; I],
    outputs: [&mut [T]; O],
    f: impl Fn([T; I]) -> [T; O],
) {
    let n = outputs.first().map_or(0, |o| o.len());
    let inputs = inputs.map(|input| &input[..n]);
    let mut outputs = outputs.map(|output| &mut output[..n]);
    for i in 0..n {
        // SAFETY: every input and output was cut to `n` values above and `i < n`; unchecked
        // so that the loop is vectorised.
        let values = f(inputs.map(|input| unsafe { *input.get_unchecked(i) }));
        for (output, value) in outputs.iter_mut().zip(values) {
            unsafe { *output.get_unchecked_mut(i) = value };
        }
    }
}

/// `Bᵀ·d` for one column (or row) of a tile.
#[inline(always)]
fn input_transform<T: Element>([d0, d1, d2, d3, d4, d5]: [T; TILE]) -> [T; TILE] {
    let (two, four, five) = (
        T::from(2).unwrap(),
        T::from(4).unwrap(),
        T::from(5).unwrap(),
    );
    let (outer, inner) = (d4 - four * d2, d3 - four * d1);
    let (near, far) = (d4 - d2, two * (d3 - d1));
    [
        four * d0 - five * d2 + d4,
        outer + inner,
        outer - inner,
        near + far,
        near - far,
        four * d1 - five * d3 + d5,
    ]
}

/// `Aᵀ·m` for one column (or row) of a product tile.
#[inline(always)]
fn output_transform<T: Element>([m0, m1, m2, m3, m4, m5]: [T; TILE]) -> [T; BLOCK] {
    let (two, four, eight) = (
        T::from(2).unwrap(),
        T::from(4).unwrap(),
        T::from(8).unwrap(),
    );
    let (sum, diff) = (m1 + m2, m1 - m2);
    let (sum_far, diff_far) = (m3 + m4, m3 - m4);
    [
        m0 + sum + sum_far,
        diff + two * diff_far,
        sum + four * sum_far,
        diff + eight * diff_far + m5,
    ]
}

/// Positions 1 to 4 of `A·e` for one column (or row) of an output-gradient block; position
/// 0 is `e0` and position 5 is `e3`.
#[inline(always)]
fn output_grad_middle<T: Element>([e0, e1, e2, e3]: [T; BLOCK]) -> [T; 4] {
    let (two, four, eight) = (
        T::from(2).unwrap(),
        T::from(4).unwrap(),
        T::from(8).unwrap(),
    );
    let (even, odd) = (e0 + e2, e1 + e3);
    let (even_far, odd_far) = (e0 + four * e2, two * e1 + eight * e3);
    [
        even + odd,
        even - odd,
        even_far + odd_far,
        even_far - odd_far,
    ]
}

/// `Aᵀ M A + bias` for every tile of the tile `rows` and output channel, with
/// `Aᵀ = [[1, 1, 1, 1, 1, 0], [0, 1, −1, 2, −2, 0], [0, 1, 1, 4, 4, 0], [0, 1, −1, 8, −8, 1]]`,
/// written into the task's output images `y` (the parts of 4×4 blocks past an edge are
/// dropped) and then through `after` row by row, or with [`Output::PooledRelu`] the ReLU'd
/// maximum of each of a block's four 2×2 windows. The sums run over all `n` tiles of the block; only the writes into the output
/// rows go along each tile row.
#[allow(clippy::extra_unused_type_parameters)]
#[cfg_attr(feature = "simd", macerator::with_simd)]
fn transform_output<'a, #[cfg(feature = "simd")] S: macerator::Simd, T: Element>(
    d: &Dims,
    rows: Range<usize>,
    m: &[T],
    at: Placement,
    sums: &mut [T],
    bias: Option<&'a [T]>,
    output: Output,
    after: Epilogue<'a, T>,
    y: &mut [MaybeUninit<T>],
) {
    let (tile_rows, tile_cols) = (d.tile_rows(), d.tile_cols());
    let (plane, n) = (d.h * d.w, rows.len() * tile_cols);
    let (pooled_h, pooled_w) = (d.h / 2, d.w / 2);
    for k in 0..d.c_out {
        let b = bias.map_or(T::zero(), |bias| bias[k]);
        let m: [&[T]; POSITIONS] =
            core::array::from_fn(|xi| &m[xi * at.position + k * at.channel..][..n]);
        let (s, out) = sums[..40 * n].split_at_mut(24 * n);
        // Aᵀ M: row i of the output block, column c of the tile, in `s[6·i + c]`.
        for c in 0..TILE {
            let [m0, m1, m2, m3, m4, m5] = core::array::from_fn(|r| m[TILE * r + c]);
            let s_rows = strided_mut::<T, 4>(&mut s[c * n..], TILE * n, n);
            elementwise([m0, m1, m2, m3, m4, m5], s_rows, output_transform);
        }
        // (Aᵀ M) A: row i, column j of the output block in `out[4·i + j]`.
        for (i, out_row) in out.chunks_exact_mut(BLOCK * n).enumerate() {
            let columns = split::<T, 6>(&s[TILE * i * n..], n);
            let out_row = strided_mut::<T, 4>(out_row, n, n);
            elementwise(columns, out_row, |m| output_transform(m).map(|v| v + b));
        }
        let out = split::<T, 16>(out, n);
        for (index, row) in rows.clone().enumerate() {
            let (image, ty) = (row / tile_rows, row % tile_rows);
            let tiles = index * tile_cols..(index + 1) * tile_cols;
            let at = |i: usize, j: usize| &out[BLOCK * i + j][tiles.clone()];
            if output == Output::PooledRelu {
                // Even sizes: a block's four 2×2 windows make two values in each of two rows.
                let pooled = &mut y[(image * d.c_out + k) * pooled_h * pooled_w..];
                for a in 0..2 {
                    let py = 2 * ty + a;
                    if py >= pooled_h {
                        break;
                    }
                    let window = |b: usize| {
                        let (i, j) = (2 * a, 2 * b);
                        [at(i, j), at(i, j + 1), at(i + 1, j), at(i + 1, j + 1)]
                    };
                    let (left, right) = (window(0), window(1));
                    let dst = &mut pooled[py * pooled_w..][..pooled_w];
                    for (tx, pair) in dst.chunks_mut(2).enumerate() {
                        pair[0].write(max_relu(left.map(|corner| corner[tx])));
                        if let Some(value) = pair.get_mut(1) {
                            value.write(max_relu(right.map(|corner| corner[tx])));
                        }
                    }
                }
                continue;
            }
            let y_plane = &mut y[(image * d.c_out + k) * plane..][..plane];
            for i in 0..BLOCK {
                let oy = BLOCK * ty + i;
                if oy < d.h {
                    let sets = core::array::from_fn(|j| at(i, j));
                    interleave(&mut y_plane[oy * d.w..][..d.w], sets);
                }
            }
            // The epilogue once over all of this image's rows in the block, which lie one after
            // another in its plane, when the last of them is written: row by row, the 7- and
            // 14-value rows of the deep layers ran mostly outside the vector loops.
            if row + 1 == rows.end || (row + 1) % tile_rows == 0 {
                let first_ty = rows.start.max(image * tile_rows) - image * tile_rows;
                let written = BLOCK * first_ty * d.w..(BLOCK * (ty + 1)).min(d.h) * d.w;
                let start = (image * d.c_out + k) * plane + written.start;
                // SAFETY: `interleave` wrote every row of `written` above, in this call or
                // for the earlier rows of this image in the block.
                let values = unsafe { assume_written(&mut y_plane[written]) };
                after.apply(start, values);
            }
        }
    }
}

/// Writes `sets[j][tx]` to column `4·tx + j` of `dst`, as far as it goes.
#[inline(always)]
fn interleave<T: Element>(dst: &mut [MaybeUninit<T>], sets: [&[T]; 4]) {
    let whole = dst.len() / BLOCK;
    let [a, b, c, e] = sets.map(|set| &set[..whole]);
    let (quads, rest) = dst.split_at_mut(BLOCK * whole);
    for i in 0..whole {
        // SAFETY: `i < whole`, each set holds at least `whole` values and `quads` `4·whole`;
        // unchecked and indexed so that the loop is vectorised, as in [`split_columns`].
        unsafe {
            quads.get_unchecked_mut(4 * i).write(*a.get_unchecked(i));
            quads
                .get_unchecked_mut(4 * i + 1)
                .write(*b.get_unchecked(i));
            quads
                .get_unchecked_mut(4 * i + 2)
                .write(*c.get_unchecked(i));
            quads
                .get_unchecked_mut(4 * i + 3)
                .write(*e.get_unchecked(i));
        }
    }
    for (j, value) in rest.iter_mut().enumerate() {
        value.write(sets[j][whole]);
    }
}

/// `K` consecutive slices of `len` values.
#[inline(always)]
fn split<T, const K: usize>(data: &[T], len: usize) -> [&[T]; K] {
    let mut chunks = data.chunks_exact(len);
    core::array::from_fn(|_| chunks.next().unwrap())
}

/// `K` slices of `len` values, `stride` apart, the first at the start of `data`.
#[inline(always)]
fn strided_mut<T, const K: usize>(mut data: &mut [T], stride: usize, len: usize) -> [&mut [T]; K] {
    core::array::from_fn(|i| {
        let rest = core::mem::take(&mut data);
        let (part, rest) = if i + 1 < K {
            rest.split_at_mut(stride)
        } else {
            (rest, &mut [][..])
        };
        data = rest;
        &mut part[..len]
    })
}

