//! catdog's additions to burn-flex 0.22.1 (see `PATCHED.md`): convolution, its gradients and
//! batch normalisation as single passes over the data, where upstream composes them from
//! generic tensor operations.

pub(crate) mod adamw;
pub(crate) mod batch_norm;
pub(crate) mod clamp;
pub(crate) mod conv;
mod depthwise;
pub(crate) mod elementwise;
mod epilogue;
mod kernel_cache;
mod gemm;
pub(crate) mod norm_clamp;
pub(crate) mod norm_pool;
pub(crate) mod norm_relu_pool;
pub(crate) mod pool;
pub(crate) mod pool_window;
mod winograd;

use core::mem::MaybeUninit;

use burn_backend::DType;
use burn_std::{Bytes, Shape, bf16, f16};
use rayon::prelude::*;

use crate::ops::module::{cast_from_f32, cast_to_f32};
use crate::{FlexTensor, Layout};

/// The float types the kernels compute in (half precision is computed in f32).
pub(crate) trait Element:
    bytemuck::Pod
    + num_traits::Float
    + core::ops::AddAssign
    + burn_backend::Element
    + Send
    + Sync
    + 'static
{
}
impl Element for f32 {}
impl Element for f64 {}

/// A vector of `len` values made by `write` on parallel chunks of `chunk` values (the last
/// may be shorter), which must write every value of its chunk. Nothing is zeroed first: at
/// 64 px, zeroing outputs that are then overwritten took a tenth of inference.
pub(crate) fn par_written<T: Send>(
    len: usize,
    chunk: usize,
    write: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync + Send,
) -> alloc::vec::Vec<T> {
    let mut out = alloc::vec::Vec::with_capacity(len);
    out.spare_capacity_mut()[..len]
        .par_chunks_mut(chunk.max(1))
        .enumerate()
        .for_each(|(i, chunk)| write(i, chunk));
    // SAFETY: `write` initialised each of the `len` values, as its contract says.
    unsafe { out.set_len(len) };
    out
}

/// `chunk` as initialised values, once every one of them has been written.
///
/// # Safety
/// Every value of `chunk` must have been written.
pub(crate) unsafe fn assume_written<T>(chunk: &mut [MaybeUninit<T>]) -> &mut [T] {
    // SAFETY: MaybeUninit<T> has T's layout, and the caller has initialised every value.
    unsafe { &mut *(chunk as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// The tensor, contiguous, in the precision the kernels compute in: f16 and bf16 become f32.
pub(crate) fn widen(tensor: FlexTensor) -> FlexTensor {
    match tensor.dtype() {
        DType::F16 => cast_to_f32(tensor, f16::to_f32),
        DType::BF16 => cast_to_f32(tensor, bf16::to_f32),
        DType::F32 | DType::F64 => tensor.to_contiguous(),
        other => panic!("burn-flex: a float operation got a {other:?} tensor"),
    }
}

/// A kernel's result as a tensor of `dtype` (the dtype its inputs had before [`widen`]).
pub(crate) fn narrow<T: Element>(
    data: alloc::vec::Vec<T>,
    shape: Shape,
    dtype: DType,
) -> FlexTensor {
    let tensor = FlexTensor::new(
        Bytes::from_elems(data),
        Layout::contiguous(shape),
        T::dtype(),
    );
    match dtype {
        DType::F16 => cast_from_f32(tensor, f16::from_f32),
        DType::BF16 => cast_from_f32(tensor, bf16::from_f32),
        _ => tensor,
    }
}

/// `v` within `[low, high]`; comparisons with NaN are false, so NaN stays NaN
/// (as with burn's clamp and ReLU).
#[inline(always)]
pub(super) fn clamp<T: Element>(v: T, low: T, high: T) -> T {
    if v < low {
        low
    } else if v > high {
        high
    } else {
        v
    }
}

/// Every `stride`-th value of `from`, from the first, into `to` (`to.len()` of them): the
/// rows of a strided convolution's patches (`conv.rs`'s im2col: ResNet's 7×7 stem and
/// stride-2 layers; `depthwise.rs`: EfficientNet's stride-2 depthwise layers).
pub(super) fn copy_strided<T: Copy>(from: &[T], stride: usize, to: &mut [T]) {
    match stride {
        1 => to.copy_from_slice(&from[..to.len()]),
        2 => every::<T, 2>(from, to),
        s => every_nth(from, s, to),
    }
}

/// Every `S`-th value of `from`, from the first, into `to`. With `S` known to the compiler the
/// loop gathers them in vector shuffles. With a stride known only at run time it took them
/// one at a time: a tenth of EfficientNet-Lite0's inference, and more of its training, went to
/// laying out its stride-2 rows, and 8.6 % of ResNet-18's training (batch 16) to im2col's.
fn every<T: Copy, const S: usize>(from: &[T], to: &mut [T]) {
    let whole = to.len().min(from.len() / S);
    for (value, column) in to[..whole].iter_mut().zip(from.chunks_exact(S)) {
        *value = column[0];
    }
    every_nth(&from[whole * S..], S, &mut to[whole..]);
}

/// Every `stride`-th value of `from`, from the first, into `to`.
fn every_nth<T: Copy>(from: &[T], stride: usize, to: &mut [T]) {
    for (value, column) in to.iter_mut().zip(from.chunks(stride)) {
        *value = column[0];
    }
}

/// Partial sums kept side by side: one running sum is a chain of dependent additions, one
/// value per float adder's latency, which the compiler may not reorder into vector
/// instructions (float addition is not associative). With this many lanes the loop below
/// become vector additions, and the sums run as fast as memory delivers the values.
const LANES: usize = 32;

/// `Σ f(v, o)` over `values` zipped with `others`, each of the `N` sums in [`LANES`] parts.
pub(crate) fn lane_sums<T: Element, const N: usize>(
    values: &[T],
    others: &[T],
    f: impl Fn(T, T) -> [T; N],
) -> [T; N] {
    let mut lanes = [[T::zero(); LANES]; N];
    let pairs = values.chunks_exact(LANES).zip(others.chunks_exact(LANES));
    for (chunk, other) in pairs {
        for i in 0..LANES {
            let terms = f(chunk[i], other[i]);
            for (lanes, term) in lanes.iter_mut().zip(terms) {
                lanes[i] += term;
            }
        }
    }
    let done = values.len() / LANES * LANES;
    let mut sums = lanes.map(|lanes| lanes.into_iter().fold(T::zero(), |s, v| s + v));
    for (&v, &o) in values[done..].iter().zip(&others[done..]) {
        for (sum, term) in sums.iter_mut().zip(f(v, o)) {
            *sum += term;
        }
    }
    sums
}
