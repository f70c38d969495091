//! 2D convolution and both of its gradients as im2col + gemm, images spread over the rayon
//! threads; deep 3×3 layers (forward pass and both gradients) go to [`winograd`].
//!
//! Upstream burn-flex 0.22.1 computes the weight gradient as a convolution whose kernel is the
//! whole output-gradient image, and the input gradient through `conv_transpose2d`; both took
//! longer than the forward pass. Here, with `cols(x_b,g)` the
//! `[c_in/groups · k_h · k_w, h_out · w_out]` matrix of the input patches of image `b`, group `g`:
//! - forward: `y_b,g = W_g · cols(x_b,g)`;
//! - input gradient: `dx_b,g = col2im(W_gᵀ · dy_b,g)`;
//! - weight gradient: `dW_g = Σ_b dy_b,g · cols(x_b,g)ᵀ`.
//!
//! Each thread reuses one patch buffer; padding (even or not), stride and dilation are handled
//! by the patch indexing.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;

use burn_backend::DType;
use burn_backend::ops::ConvOptions;
use burn_std::{Bytes, Shape};
use rayon::prelude::*;

use super::depthwise;
use super::elementwise::zeroed;
use super::epilogue::Epilogue;
use super::gemm::{Matrix, gemm_into_strided, gemm_strided};
use super::kernel_cache;
use super::pool::{max_relu, pool_rows};
use super::winograd::{self, Dims, Kernels, Output};
use super::{Element, assume_written, copy_strided, lane_sums, narrow, widen};
use crate::{FlexTensor, Layout};

/// The most bytes of patches one block of the patch matrix holds (all groups): the products
/// then read it from the L2 cache. Whole, ResNet-18's 7×7 stem made 7.4 MB an image, and the
/// products read it back from memory.
const PATCH_BLOCK_BYTES: usize = 1 << 20;

/// Shapes and options of one 2D convolution.
#[derive(Clone, Copy, Debug)]
pub(super) struct Geometry {
    pub(super) batch: usize,
    pub(super) c_in: usize,
    pub(super) h_in: usize,
    pub(super) w_in: usize,
    pub(super) c_out: usize,
    pub(super) k_h: usize,
    pub(super) k_w: usize,
    pub(super) groups: usize,
    pub(super) stride: [usize; 2],
    /// Padding before the first row and column (the end padding only shapes the output).
    pub(super) pad: [usize; 2],
    pub(super) dilation: [usize; 2],
    pub(super) h_out: usize,
    pub(super) w_out: usize,
}

impl Geometry {
    /// From `x [batch, c_in, h_in, w_in]`, `weight [c_out, c_in/groups, k_h, k_w]` and the
    /// output's spatial size.
    fn new(x: &Shape, weight: &Shape, options: &ConvOptions<2>, out: [usize; 2]) -> Geometry {
        Geometry {
            batch: x[0],
            c_in: x[1],
            h_in: x[2],
            w_in: x[3],
            c_out: weight[0],
            k_h: weight[2],
            k_w: weight[3],
            groups: options.groups,
            stride: options.stride,
            pad: options.padding_begin(),
            dilation: options.dilation,
            h_out: out[0],
            w_out: out[1],
        }
    }

    /// The output's spatial size for a forward convolution. A kernel that reaches further
    /// than the padded input is a caller's error, and panics as burn's shape checks do,
    /// instead of wrapping to a size of 2⁶⁴ − 1.
    fn output_size(x: &Shape, weight: &Shape, options: &ConvOptions<2>) -> [usize; 2] {
        core::array::from_fn(|axis| {
            let (begin, end) = options.padding[axis];
            let reach = options.dilation[axis] * (weight[2 + axis] - 1) + 1;
            let padded = x[2 + axis] + begin + end;
            assert!(
                padded >= reach,
                "conv2d: the kernel reaches {reach} along axis {}, more than the padded \
                 input's {padded}",
                2 + axis
            );
            (padded - reach) / options.stride[axis] + 1
        })
    }

    fn image_len(&self) -> usize {
        self.c_in * self.h_in * self.w_in
    }
    pub(super) fn out_plane(&self) -> usize {
        self.h_out * self.w_out
    }
    fn out_image_len(&self) -> usize {
        self.c_out * self.out_plane()
    }
    /// Rows of one group's patch matrix: (input channel, kernel row, kernel column).
    fn group_rows(&self) -> usize {
        self.c_in / self.groups * self.k_h * self.k_w
    }
    fn group_c_out(&self) -> usize {
        self.c_out / self.groups
    }

    /// A 1×1 convolution of stride 1 without padding: each image's patch matrix is the image
    /// itself (`[c_in, h · w]`), so the products read it where it lies instead of a copy.
    fn pointwise(&self) -> bool {
        let one = [self.k_h, self.k_w, self.stride[0], self.stride[1]] == [1, 1, 1, 1];
        let same = self.h_out == self.h_in && self.w_out == self.w_in;
        one && same && self.pad == [0, 0]
    }

    /// Output rows whose patches make one block of the patch matrix: as many as fit in
    /// [`PATCH_BLOCK_BYTES`], one at least; all of them where [`Self::pointwise`] (the
    /// patch matrix is the image, nothing is copied).
    fn block_rows<T>(&self) -> usize {
        let row_bytes = self.groups * self.group_rows() * self.w_out * size_of::<T>();
        match self.pointwise() {
            true => self.h_out,
            false => PATCH_BLOCK_BYTES / row_bytes.max(1),
        }
        .clamp(1, self.h_out.max(1))
    }

    /// An image's output rows, a block of [`Self::block_rows`] at a time.
    fn row_blocks<T>(&self) -> impl Iterator<Item = Range<usize>> + use<T> {
        let (rows, h_out) = (self.block_rows::<T>(), self.h_out);
        (0..h_out)
            .step_by(rows)
            .map(move |y| y..(y + rows).min(h_out))
    }

    /// A buffer for one block of the patch matrix; empty where [`Self::pointwise`] makes it
    /// needless.
    fn cols_buffer<T: Element>(&self) -> Vec<T> {
        match self.pointwise() {
            true => Vec::new(),
            false => {
                let block = self.block_rows::<T>() * self.w_out;
                vec![T::zero(); self.groups * self.group_rows() * block]
            }
        }
    }

    /// The patch matrix of `image`'s output rows `oys` (all groups' rows, `oys.len() · w_out`
    /// columns): the image itself where the convolution is pointwise, otherwise written into
    /// `cols` by [`Self::im2col`].
    fn patches<'a, T: Element>(
        &self,
        image: &'a [T],
        oys: Range<usize>,
        cols: &'a mut [T],
    ) -> Matrix<'a, T> {
        if self.pointwise() {
            return Matrix::rows(&image[oys.start * self.w_out..], self.out_plane());
        }
        self.im2col(image, oys.clone(), cols);
        Matrix::rows(cols, oys.len() * self.w_out)
    }

    /// For kernel offset `k` along `axis`: the output positions whose input position
    /// `o·stride + k·dilation − pad` lies inside the image.
    pub(super) fn valid_range(&self, axis: usize, k: usize) -> (usize, usize) {
        let (len_in, len_out) = [(self.h_in, self.h_out), (self.w_in, self.w_out)][axis];
        let (s, p) = (self.stride[axis], self.pad[axis]);
        let offset = k * self.dilation[axis];
        let lo = if offset >= p {
            0
        } else {
            (p - offset).div_ceil(s)
        };
        let hi = if len_in + p <= offset {
            0
        } else {
            ((len_in - 1 + p - offset) / s + 1).min(len_out)
        };
        (lo.min(hi), hi)
    }

    /// Calls `f(patch_row, out_y, run)` for each patch row and output row `out_y` of `oys`:
    /// `run` is `Some((input_offset, (x_lo, x_hi)))` where some of the row's pixels lie
    /// inside the image (output columns `x_lo..x_hi`, the first at `input_offset` in the
    /// image, the next `stride[1]` apart), `None` where all lie in the padding. Patch rows
    /// count over all groups.
    fn for_each_run(
        &self,
        oys: Range<usize>,
        mut f: impl FnMut(usize, usize, Option<(usize, (usize, usize))>),
    ) {
        for c in 0..self.c_in {
            for ky in 0..self.k_h {
                let (y_lo, y_hi) = self.valid_range(0, ky);
                for kx in 0..self.k_w {
                    let row = (c * self.k_h + ky) * self.k_w + kx;
                    let (x_lo, x_hi) = self.valid_range(1, kx);
                    for oy in oys.clone() {
                        if x_lo >= x_hi || !(y_lo..y_hi).contains(&oy) {
                            f(row, oy, None);
                            continue;
                        }
                        let in_x = x_lo * self.stride[1] + kx * self.dilation[1] - self.pad[1];
                        let in_y = oy * self.stride[0] + ky * self.dilation[0] - self.pad[0];
                        let offset = (c * self.h_in + in_y) * self.w_in + in_x;
                        f(row, oy, Some((offset, (x_lo, x_hi))));
                    }
                }
            }
        }
    }

    /// Writes the patches of `image`'s output rows `oys` into `cols` (all groups' rows, then
    /// `oys.len() · w_out` columns), zeros where a patch reaches into the padding: every
    /// value of the block is written.
    fn im2col<T: Element>(&self, image: &[T], oys: Range<usize>, cols: &mut [T]) {
        let (width, first, step) = (oys.len() * self.w_out, oys.start, self.stride[1]);
        self.for_each_run(oys, |row, oy, run| {
            let dst = &mut cols[row * width + (oy - first) * self.w_out..][..self.w_out];
            let Some((offset, (x_lo, x_hi))) = run else {
                dst.fill(T::zero());
                return;
            };
            dst[..x_lo].fill(T::zero());
            dst[x_hi..].fill(T::zero());
            copy_strided(&image[offset..], step, &mut dst[x_lo..x_hi]);
        });
    }

    /// Adds every entry of `cols`, the patch matrix of output rows `oys`, onto the input
    /// pixel its patch took it from.
    fn col2im_add<T: Element>(&self, cols: &[T], oys: Range<usize>, image: &mut [T]) {
        let (width, first, step) = (oys.len() * self.w_out, oys.start, self.stride[1]);
        self.for_each_run(oys, |row, oy, run| {
            let Some((offset, (x_lo, x_hi))) = run else {
                return;
            };
            let src = &cols[row * width + (oy - first) * self.w_out..][x_lo..x_hi];
            let dst = &mut image[offset..];
            if step == 1 {
                for (d, &s) in dst[..src.len()].iter_mut().zip(src) {
                    *d += s;
                }
            } else {
                for (i, &s) in src.iter().enumerate() {
                    dst[i * step] += s;
                }
            }
        });
    }

    /// The convolution as [`winograd`] computes it, where it gains: 3×3, stride 1, padding 1
    /// on every side, no dilation, no groups, `depth` (the input channels of the product,
    /// `c_in` forward and `c_out` for the input gradient) deep enough, and enough images.
    fn winograd(&self, depth: usize) -> Option<Dims> {
        let same = self.h_out == self.h_in && self.w_out == self.w_in;
        let three = [self.k_h, self.k_w, self.pad[0], self.pad[1]] == [3, 3, 1, 1];
        let plain = self.stride == [1, 1] && self.dilation == [1, 1] && self.groups == 1;
        // One image per thread at least: the kernels' transform is paid at every call, and a
        // single image made SmallCnn's inference twice as slow as im2col.
        let batch = self.batch >= rayon::current_num_threads();
        (batch && same && three && plain && depth >= winograd::MIN_CHANNELS).then_some(Dims {
            batch: self.batch,
            c_in: self.c_in,
            c_out: self.c_out,
            h: self.h_in,
            w: self.w_in,
        })
    }

    /// Images go to the threads one each when there are enough of them; otherwise gemm
    /// spreads each product over the threads itself.
    fn gemm_parallelism(&self) -> gemm::Parallelism {
        if self.batch >= rayon::current_num_threads() {
            gemm::Parallelism::None
        } else {
            gemm::Parallelism::Rayon(0)
        }
    }
}

/// `y = conv(x, weight) + bias`, pooled as `output` says (then with even output sizes), or
/// with `after` applied to each part as it is made (plain output only); `kernels` are the
/// weights as [`winograd_kernels`] transforms them, where the caller keeps them. The products
/// of each block of output rows ([`Geometry::row_blocks`]) are written into the output, and
/// the bias and `after` applied a plane at a time; a pooled image is made whole in a
/// per-thread buffer that starts as its bias, in cache, and pooled from there.
fn forward<T: Element>(
    g: &Geometry,
    x: &[T],
    weight: &[T],
    bias: Option<&[T]>,
    output: Output,
    after: Epilogue<'_, T>,
    kernels: Option<&[T]>,
) -> Vec<T> {
    debug_assert!(output == Output::Plain || after.is_none());
    if output == Output::Plain && depthwise::applies(g) {
        return depthwise::forward(g, x, weight, bias, after);
    }
    if let Some(d) = g.winograd(g.c_in) {
        let raw = |k: usize, c: usize| core::array::from_fn(|i| weight[(k * d.c_in + c) * 9 + i]);
        let kernels = match kernels {
            Some(u) => Kernels::Transformed(u),
            None => Kernels::Raw(raw),
        };
        return winograd::conv3x3(&d, x, kernels, bias, output, after);
    }
    let (rows, plane, c_out) = (g.group_rows(), g.out_plane(), g.group_c_out());
    let image_out = output.image_len(g.c_out, g.h_out, g.w_out);
    let len = g.batch * image_out;
    let mut y = Vec::with_capacity(len);
    let parallelism = g.gemm_parallelism();
    let image_len = g.image_len();
    let full_len = match output {
        Output::Plain => 0,
        Output::PooledRelu => g.out_image_len(),
    };
    // Indexed, not zipped with `x`'s chunks: an empty input image (no channels, or a zero
    // side with padding) must still get its bias written before `set_len`.
    y.spare_capacity_mut()[..len]
        .par_chunks_mut(image_out.max(1))
        .enumerate()
        .for_each_init(
            || (g.cols_buffer(), vec![T::zero(); full_len]),
            |(cols, full), (b, y_b)| {
                let x_b = &x[b * image_len..][..image_len];
                if output == Output::PooledRelu {
                    for (c, out) in full.chunks_mut(plane.max(1)).enumerate() {
                        out.fill(bias.map_or(T::zero(), |bias| bias[c]));
                    }
                }
                // The products of each block of output rows straight into the output (or the
                // full image to be pooled, which starts as the bias), a group at a time.
                for oys in g.row_blocks::<T>() {
                    let patches = g.patches(x_b, oys.clone(), cols);
                    let width = oys.len() * g.w_out;
                    for group in 0..g.groups {
                        let lhs = Matrix::rows(&weight[group * c_out * rows..], rows);
                        let rhs = patches.from_row(group * rows);
                        let at = group * c_out * plane + oys.start * g.w_out;
                        let shape = [c_out, width, rows];
                        match output {
                            Output::Plain => {
                                let dst = &mut y_b[at..];
                                gemm_into_strided(shape, dst, [plane, 1], lhs, rhs, parallelism);
                            }
                            Output::PooledRelu => {
                                let dst = &mut full[at..];
                                gemm_strided(shape, dst, [plane, 1], true, lhs, rhs, parallelism);
                            }
                        }
                    }
                }
                match output {
                    Output::Plain => {
                        // Then the bias and the epilogue a plane at a time while it is in
                        // cache: filling the output with the bias first for gemm to add to
                        // was a pass of its own over an image larger than the caches (a
                        // tenth of EfficientNet-Lite0's inference).
                        // SAFETY: each block's products wrote its `c_out · width` values of
                        // every group, and the blocks cover the output rows.
                        let image = unsafe { assume_written(&mut *y_b) };
                        for (c, out) in image.chunks_mut(plane.max(1)).enumerate() {
                            if let Some(bias) = bias {
                                out.iter_mut().for_each(|v| *v += bias[c]);
                            }
                            after.apply(b * image_out + c * plane, out);
                        }
                    }
                    Output::PooledRelu => pool_rows(full, g.w_out, g.w_out / 2, y_b, max_relu),
                }
            },
        );
    // SAFETY: the loop wrote all `len` values, one output image per chunk.
    unsafe { y.set_len(len) };
    y
}

/// The kernels of a convolution that Winograd's path takes, transformed for it.
fn winograd_kernels<T: Element>(d: &Dims, weight: &[T]) -> Vec<T> {
    winograd::transform_weights(d.c_out, d.c_in, |k, c| {
        core::array::from_fn(|i| weight[(k * d.c_in + c) * 9 + i])
    })
}

/// Where Winograd's path takes the convolution `g`: the transformed kernels of `weight`
/// (f32, contiguous), kept from call to call for the inference-only operations below.
fn kept_kernels(g: &Geometry, weight: &FlexTensor) -> Option<Arc<Vec<f32>>> {
    let d = g.winograd(g.c_in)?;
    Some(kernel_cache::transformed(weight, || {
        winograd_kernels(&d, weight.storage())
    }))
}

fn input_grad<T: Element>(g: &Geometry, weight: &[T], dy: &[T]) -> Vec<T> {
    if depthwise::applies(g) {
        return depthwise::input_grad(g, weight, dy);
    }
    // The input gradient of a 3×3, padding-1 convolution is the convolution of `dy` by the
    // kernels turned half a turn, input and output channels swapped.
    if let Some(d) = g.winograd(g.c_out) {
        let turned =
            |c: usize, k: usize| core::array::from_fn(|i| weight[(k * d.c_in + c) * 9 + 8 - i]);
        let swapped = Dims {
            c_in: d.c_out,
            c_out: d.c_in,
            ..d
        };
        let kernels = Kernels::Raw(turned);
        return winograd::conv3x3(&swapped, dy, kernels, None, Output::Plain, Epilogue::NONE);
    }
    let (rows, plane, c_out) = (g.group_rows(), g.out_plane(), g.group_c_out());
    let mut dx = zeroed(g.batch * g.image_len(), T::zero());
    let parallelism = g.gemm_parallelism();
    dx.par_chunks_mut(g.image_len().max(1))
        .zip(dy.par_chunks(g.out_image_len().max(1)))
        .for_each_init(
            || g.cols_buffer(),
            |cols, (dx_b, dy_b)| {
                // A pointwise convolution's patch matrix is the image: the products go there.
                let pointwise = g.pointwise();
                for oys in g.row_blocks::<T>() {
                    let width = oys.len() * g.w_out;
                    let (out, row_stride) = match pointwise {
                        true => (&mut dx_b[oys.start * g.w_out..], plane),
                        false => (&mut cols[..], width),
                    };
                    for group in 0..g.groups {
                        let dy = &dy_b[group * c_out * plane + oys.start * g.w_out..];
                        gemm_strided(
                            [rows, width, c_out],
                            &mut out[group * rows * row_stride..],
                            [row_stride, 1],
                            false,
                            Matrix::rows(&weight[group * c_out * rows..], rows).transposed(),
                            Matrix::rows(dy, plane),
                            parallelism,
                        );
                    }
                    if !pointwise {
                        g.col2im_add(cols, oys, dx_b);
                    }
                }
            },
        );
    dx
}

fn weight_grad<T: Element>(g: &Geometry, x: &[T], dy: &[T]) -> Vec<T> {
    if depthwise::applies(g) {
        return depthwise::weight_grad(g, x, dy);
    }
    if let Some(d) = g.winograd(g.c_in) {
        return winograd::weight_grad3x3(&d, x, dy);
    }
    let (rows, plane, c_out) = (g.group_rows(), g.out_plane(), g.group_c_out());
    let len = g.c_out * rows;
    let parallelism = g.gemm_parallelism();
    // Each thread sums the gradients of its share of the images, then the shares are added.
    let share = g.batch.div_ceil(rayon::current_num_threads()).max(1);
    let dw_t = x
        .par_chunks((share * g.image_len()).max(1))
        .zip(dy.par_chunks((share * g.out_image_len()).max(1)))
        .map(|(x_share, dy_share)| {
            // dW is summed column-major (`dw_t[row · c_out + out_channel]`): with a
            // row-major dW, gemm copied the patch matrix into panels at every image, reading
            // rows a plane apart (at 64 px 16 kB, the same L1 cache sets), and that copy was
            // a fifth of a training step. `dy_b` is read as it lies, gemm packing it; a
            // transposed copy made first, one value at a time, cost more (7 % of
            // EfficientNet-Lite0's training, 2026-12-06).
            let mut dw_t = vec![T::zero(); len];
            let mut cols = g.cols_buffer();
            let images = x_share.chunks(g.image_len().max(1));
            for (x_b, dy_b) in images.zip(dy_share.chunks(g.out_image_len().max(1))) {
                for oys in g.row_blocks::<T>() {
                    let patches = g.patches(x_b, oys.clone(), &mut cols);
                    let width = oys.len() * g.w_out;
                    for group in 0..g.groups {
                        let dy = &dy_b[group * c_out * plane + oys.start * g.w_out..];
                        gemm_strided(
                            [c_out, rows, width],
                            &mut dw_t[group * c_out..],
                            [1, g.c_out],
                            true,
                            Matrix::rows(dy, plane),
                            patches.from_row(group * rows).transposed(),
                            parallelism,
                        );
                    }
                }
            }
            dw_t
        })
        .reduce_with(|mut a, b| {
            a.iter_mut().zip(&b).for_each(|(a, &b)| *a += b);
            a
        });
    let mut dw = vec![T::zero(); len];
    if let Some(dw_t) = dw_t {
        transpose(&dw_t, [rows, g.c_out], &mut dw);
    }
    dw
}

/// `dst[j·rows + i] = src[i·cols + j]`: a row-major `[rows × cols]` matrix transposed, in
/// square tiles so that the rows read and the columns written stay in cache.
fn transpose<T: Copy>(src: &[T], [rows, cols]: [usize; 2], dst: &mut [T]) {
    const TILE: usize = 16;
    for i0 in (0..rows).step_by(TILE) {
        for j0 in (0..cols).step_by(TILE) {
            for i in i0..(i0 + TILE).min(rows) {
                let row = &src[i * cols..][j0..(j0 + TILE).min(cols)];
                for (j, &value) in (j0..).zip(row) {
                    dst[j * rows + i] = value;
                }
            }
        }
    }
}

/// Runs `kernel` on the two tensors' data in their compute precision (see [`widen`]).
fn run_float(
    tensors: [FlexTensor; 2],
    out_shape: Shape,
    kernel_f32: impl Fn(&[f32], &[f32]) -> Vec<f32>,
    kernel_f64: impl Fn(&[f64], &[f64]) -> Vec<f64>,
) -> FlexTensor {
    let dtype = tensors[0].dtype();
    let [a, b] = tensors.map(widen);
    match a.dtype() {
        DType::F64 => narrow(kernel_f64(a.storage(), b.storage()), out_shape, dtype),
        _ => narrow(kernel_f32(a.storage(), b.storage()), out_shape, dtype),
    }
}

/// Whether [`conv2d_f32`] computes this convolution itself: one group, or depthwise (one
/// group per channel); upstream's kernels take the others.
pub fn handles(x: &Shape, weight: &Shape, options: &ConvOptions<2>) -> bool {
    let depthwise = options.groups == x[1] && weight[0] == x[1] && weight[1] == 1;
    options.groups == 1 || depthwise
}

/// Forward convolution of `x` by `weight`, plus `bias`, all f32.
pub fn conv2d_f32(
    x: FlexTensor,
    weight: FlexTensor,
    bias: Option<FlexTensor>,
    options: &ConvOptions<2>,
) -> FlexTensor {
    let (x, weight) = (x.to_contiguous(), weight.to_contiguous());
    let (x_shape, w_shape) = (x.layout().shape(), weight.layout().shape());
    let out = Geometry::output_size(x_shape, w_shape, options);
    let g = Geometry::new(x_shape, w_shape, options, out);
    let bias = bias.map(|bias| bias.to_contiguous());
    let y = forward::<f32>(
        &g,
        x.storage(),
        weight.storage(),
        bias.as_ref().map(|bias| bias.storage()),
        Output::Plain,
        Epilogue::NONE,
        None,
    );
    let out_shape = Shape::from(vec![g.batch, g.c_out, out[0], out[1]]);
    FlexTensor::new(
        Bytes::from_elems(y),
        Layout::contiguous(out_shape),
        DType::F32,
    )
}

/// `clamp(conv2d(x, weight) + bias + add)`, with `add` (of the output's shape) and the clamp
/// each optional: a residual network's convolution → shortcut → ReLU, or a mobile network's
/// convolution → ReLU6, in one pass over the output instead of one pass each, applied to
/// each part of the output as it is made. The same values as the operations apart, except
/// that NaN stays NaN through the clamp (as burn's ReLU). f32, one group or depthwise;
/// `None` otherwise, or where `add`'s shape is not the output's, for the caller to compose
/// the operations.
pub fn conv2d_then(
    x: FlexTensor,
    weight: FlexTensor,
    bias: Option<FlexTensor>,
    options: &ConvOptions<2>,
    add: Option<FlexTensor>,
    clamp: Option<(f32, f32)>,
) -> Option<FlexTensor> {
    let f32 = [Some(&x), Some(&weight), bias.as_ref(), add.as_ref()]
        .into_iter()
        .flatten()
        .all(|t| t.dtype() == DType::F32);
    let (x_shape, w_shape) = (x.layout().shape(), weight.layout().shape());
    if !f32 || x_shape.num_dims() != 4 || w_shape.num_dims() != 4 {
        return None;
    }
    if !handles(x_shape, w_shape, options) {
        return None;
    }
    let out = Geometry::output_size(x_shape, w_shape, options);
    let g = Geometry::new(x_shape, w_shape, options, out);
    let out_shape = Shape::from(vec![g.batch, g.c_out, out[0], out[1]]);
    if add
        .as_ref()
        .is_some_and(|add| add.layout().shape() != &out_shape)
    {
        return None;
    }
    let (x, weight) = (x.to_contiguous(), weight.to_contiguous());
    let bias = bias.map(|bias| bias.to_contiguous());
    let add = add.map(|add| add.to_contiguous());
    let after = Epilogue {
        add: add.as_ref().map(|add| add.storage()),
        clamp,
    };
    let y = forward::<f32>(
        &g,
        x.storage(),
        weight.storage(),
        bias.as_ref().map(|bias| bias.storage()),
        Output::Plain,
        after,
        kept_kernels(&g, &weight).as_deref().map(Vec::as_slice),
    );
    Some(FlexTensor::new(
        Bytes::from_elems(y),
        Layout::contiguous(out_shape),
        DType::F32,
    ))
}

/// `relu(max_pool2d(conv2d(x, weight) + bias))` with a 2×2 pool of stride 2, the block of
/// most small CNNs at inference, in one pass over the convolution's output: each part of it
/// is pooled while still in cache, where the three operations apart write and read the
/// largest activations of the network twice more. The same values as the three apart (f32
/// only, even output sides, one group); `None` where those do not hold, for the caller to
/// compose them.
pub fn conv2d_max_pool2x2_relu(
    x: FlexTensor,
    weight: FlexTensor,
    bias: Option<FlexTensor>,
    options: &ConvOptions<2>,
) -> Option<FlexTensor> {
    let f32 = [Some(&x), Some(&weight), bias.as_ref()]
        .into_iter()
        .flatten()
        .all(|t| t.dtype() == DType::F32);
    let (x_shape, w_shape) = (x.layout().shape(), weight.layout().shape());
    if !f32 || options.groups != 1 || x_shape.num_dims() != 4 || w_shape.num_dims() != 4 {
        return None;
    }
    let out = Geometry::output_size(x_shape, w_shape, options);
    if out.iter().any(|&side| side < 2 || side % 2 == 1) {
        return None;
    }
    let g = Geometry::new(x_shape, w_shape, options, out);
    let (x, weight) = (x.to_contiguous(), weight.to_contiguous());
    let bias = bias.map(|bias| bias.to_contiguous());
    let y = forward::<f32>(
        &g,
        x.storage(),
        weight.storage(),
        bias.as_ref().map(|bias| bias.storage()),
        Output::PooledRelu,
        Epilogue::NONE,
        kept_kernels(&g, &weight).as_deref().map(Vec::as_slice),
    );
    let out_shape = Shape::from(vec![g.batch, g.c_out, out[0] / 2, out[1] / 2]);
    Some(FlexTensor::new(
        Bytes::from_elems(y),
        Layout::contiguous(out_shape),
        DType::F32,
    ))
}

/// Gradient of the loss with respect to `x`, given the output's gradient.
pub fn conv2d_x_backward(
    x: FlexTensor,
    weight: FlexTensor,
    output_grad: FlexTensor,
    options: &ConvOptions<2>,
) -> FlexTensor {
    let (x_shape, w_shape, dy_shape) = (
        x.layout().shape().clone(),
        weight.layout().shape().clone(),
        output_grad.layout().shape().clone(),
    );
    let g = Geometry::new(&x_shape, &w_shape, options, [dy_shape[2], dy_shape[3]]);
    run_float(
        [weight, output_grad],
        x_shape,
        |w, dy| input_grad(&g, w, dy),
        |w, dy| input_grad(&g, w, dy),
    )
}

/// Gradient of the loss with respect to `weight`, given the output's gradient.
pub fn conv2d_weight_backward(
    x: FlexTensor,
    weight: FlexTensor,
    output_grad: FlexTensor,
    options: &ConvOptions<2>,
) -> FlexTensor {
    let (x_shape, w_shape, dy_shape) = (
        x.layout().shape().clone(),
        weight.layout().shape().clone(),
        output_grad.layout().shape().clone(),
    );
    let g = Geometry::new(&x_shape, &w_shape, options, [dy_shape[2], dy_shape[3]]);
    run_float(
        [x, output_grad],
        w_shape,
        |x, dy| weight_grad(&g, x, dy),
        |x, dy| weight_grad(&g, x, dy),
    )
}

/// Gradient of the loss with respect to the bias: the output's gradient summed over images and
/// pixels, per channel. burn's generic version swaps the first two axes and reshapes, which made
/// flex copy the whole gradient into channel-major order first (5 % of a training step at 64 px).
pub fn conv2d_bias_backward(output_grad: FlexTensor) -> FlexTensor {
    let shape = output_grad.layout().shape().clone();
    let (batch, channels) = (shape[0], shape[1]);
    let plane = shape.num_elements() / (batch * channels).max(1);
    let dtype = output_grad.dtype();
    let dy = widen(output_grad);
    let out = Shape::new([channels]);
    match dy.dtype() {
        DType::F64 => narrow(bias_grad::<f64>(dy.storage(), channels, plane), out, dtype),
        _ => narrow(bias_grad::<f32>(dy.storage(), channels, plane), out, dtype),
    }
}

fn bias_grad<T: Element>(dy: &[T], channels: usize, plane: usize) -> Vec<T> {
    (0..channels)
        .into_par_iter()
        .map(|c| {
            let images = dy.chunks_exact((channels * plane).max(1));
            let runs = images.map(|image| &image[c * plane..][..plane]);
            runs.fold(T::zero(), |sum, run| {
                sum + lane_sums(run, run, |v, _| [v])[0]
            })
        })
        .collect()
}
