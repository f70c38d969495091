//! A clamp to `[low, high]` (ReLU6 is `[0, 6]`) and its gradient, f32, as passes spread over
//! the rayon threads, in place where the tensor is its data's only owner.
//!
//! burn's `clamp` is upstream's single-threaded `unary_op` on flex at inference; while
//! training, burn's autodiff composes it from `clamp_max` and `clamp_min`, each a comparison
//! that makes a mask and a `mask_fill`, with two more `mask_fill`s on the way back: six passes
//! where these make two. The gradient is PyTorch's (`hardtanh_backward`): the output's
//! gradient where the input lay strictly between the bounds, zero elsewhere, found from the
//! clamped output (`low < y < high`).

use burn_backend::DType;
use rayon::prelude::*;

use super::{clamp, par_written};
use crate::{FlexTensor, Layout};

/// Values a task takes at least.
const CHUNK: usize = 1 << 16;

/// `f(value)` on every value of an f32 tensor, in place where it can be.
fn map_f32(x: FlexTensor, f: impl Fn(f32) -> f32 + Sync + Send) -> FlexTensor {
    let mut x = x.into_contiguous();
    if let Some(data) = x.try_storage_mut::<f32>() {
        data.par_chunks_mut(CHUNK)
            .for_each(|chunk| chunk.iter_mut().for_each(|v| *v = f(*v)));
        return x;
    }
    let data: &[f32] = x.storage();
    let out = par_written(data.len(), CHUNK, |i, chunk| {
        for (out, &v) in chunk.iter_mut().zip(&data[i * CHUNK..]) {
            out.write(f(v));
        }
    });
    tensor(out, &x)
}

/// `data` as an f32 tensor of `like`'s shape.
fn tensor(data: alloc::vec::Vec<f32>, like: &FlexTensor) -> FlexTensor {
    FlexTensor::new(
        burn_std::Bytes::from_elems(data),
        Layout::contiguous(like.layout().shape().clone()),
        DType::F32,
    )
}

/// `x` clamped to `[low, high]`: f32 only (`None` otherwise, for the caller to use burn's
/// `clamp`). A NaN stays NaN, as with burn's.
pub fn clamp_f32(x: FlexTensor, low: f32, high: f32) -> Option<FlexTensor> {
    if x.dtype() != DType::F32 || !(low <= high) {
        return None;
    }
    Some(map_f32(x, move |v| clamp(v, low, high)))
}

/// The input's gradient of [`clamp_f32`], from its output `y` and the output's gradient:
/// `grad` where `low < y < high`, zero elsewhere. f32 tensors of one shape only (`None`
/// otherwise).
pub fn clamp_backward_f32(
    y: &FlexTensor,
    grad: FlexTensor,
    low: f32,
    high: f32,
) -> Option<FlexTensor> {
    let same = y.layout().shape() == grad.layout().shape();
    if y.dtype() != DType::F32 || grad.dtype() != DType::F32 || !same {
        return None;
    }
    Some(masked(grad, y, move |y| y > low && y < high))
}

/// `grad` where `passes(y)`, zero elsewhere (f32 tensors of one shape): in place where
/// nothing else holds `grad`'s data. Also the masked gradient of `norm_clamp.rs`.
pub(super) fn masked(
    grad: FlexTensor,
    y: &FlexTensor,
    passes: impl Fn(f32) -> bool + Sync + Send,
) -> FlexTensor {
    let y = y.to_contiguous();
    let y: &[f32] = y.storage();
    let mut grad = grad.into_contiguous();
    if let Some(g) = grad.try_storage_mut::<f32>() {
        g.par_chunks_mut(CHUNK)
            .zip(y.par_chunks(CHUNK))
            .for_each(|(g, y)| {
                for (g, &y) in g.iter_mut().zip(y) {
                    if !passes(y) {
                        *g = 0.0;
                    }
                }
            });
        return grad;
    }
    let g: &[f32] = grad.storage();
    let out = par_written(g.len(), CHUNK, |i, chunk| {
        let (g, y) = (&g[i * CHUNK..], &y[i * CHUNK..]);
        for ((out, &g), &y) in chunk.iter_mut().zip(g).zip(y) {
            out.write(if passes(y) { g } else { 0.0 });
        }
    });
    tensor(out, &grad)
}
