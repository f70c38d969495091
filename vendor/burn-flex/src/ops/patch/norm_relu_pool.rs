//! Training's batch norm → ReLU → max pool over any window [`super::pool_window`] takes
//! (ResNet's 3×3 of stride 2 with padding 1 after its first convolution), as one operation
//! with its own gradient.
//!
//! Apart, batch norm and ReLU write the network's largest activations (ResNet-18's first
//! convolution's output, 51 MB at 224 px and batch 16), the pool reads them, and on the way
//! back the pool writes an input-sized gradient that the ReLU's mask and batch norm's two
//! passes read again: about thirteen passes over that tensor per step. Here the forward pass
//! reads the input for the statistics and once more to normalise a plane at a time (kept in
//! cache) and pool it, and keeps for the gradient each window's maximum's position and the
//! input there; the gradient takes batch norm's sums from those alone (`Σ dy = Σ dp`,
//! `Σ dy·x̂ = Σ dp·x̂[max]`, each window's gradient landing on its maximum), and then writes
//! the input's gradient in one pass that reads the input, adding each window's gradient at
//! its maximum (overlapping windows may name a position more than once).
//!
//! The same values as the three apart, as burn-flex computes them: the statistics and the
//! normalised values are [`super::batch_norm`]'s, the window's maximum, its NaN and ties
//! [`super::pool_window`]'s. ReLU before the pool or after it gives the same output (ReLU
//! keeps the order of values) and the same gradient: it passes where the window's maximum is
//! not `≤ 0` (burn's rule), and lands on the same position, the first maximum (or the last
//! NaN) in the window.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use burn_backend::DType;
use burn_std::Shape;
use rayon::prelude::*;

use super::batch_norm::{affine, statistics};
use super::norm_pool::channel_sums;
use super::pool_window::{Plan, applies};
use super::{assume_written, narrow, par_written};
use crate::FlexTensor;

/// A window whose output ReLU set to zero: no gradient reaches its maximum.
const BLOCKED: i32 = -1;

/// The output, the batch's mean and biased variance per channel (for the running
/// statistics), and what the gradient needs.
pub struct NormReluPool {
    pub output: FlexTensor,
    pub mean: FlexTensor,
    pub variance: FlexTensor,
    pub saved: NormReluPoolSaved,
}

/// What [`batch_norm_relu_max_pool_backward`] needs from the forward pass.
#[derive(Clone, Debug)]
pub struct NormReluPoolSaved {
    /// The batch norm's input, `[batch, channels, h, w]`, contiguous f32.
    x: FlexTensor,
    gamma: Arc<Vec<f32>>,
    mean: Arc<Vec<f32>>,
    inv_std: Arc<Vec<f32>>,
    /// Per window: the position in its plane (`y · w + x`) of its maximum, or [`BLOCKED`].
    at: Arc<Vec<i32>>,
    /// Per window: the input at its maximum.
    peak: Arc<Vec<f32>>,
    /// The output's `[h, w]`.
    pooled: [usize; 2],
}

/// `max_pool(relu(batch_norm(x)))` with the batch's own statistics, for training: f32
/// `[batch, channels, h, w]`, a pool [`super::pool_window::applies`] to (no dilation or ceil
/// mode); `None` otherwise, for the caller to compose the three.
pub fn batch_norm_relu_max_pool(
    x: FlexTensor,
    gamma: FlexTensor,
    beta: FlexTensor,
    epsilon: f64,
    [kernel, stride, padding]: [[usize; 2]; 3],
) -> Option<NormReluPool> {
    let shape = x.layout().shape().clone();
    let f32 = [&x, &gamma, &beta].iter().all(|t| t.dtype() == DType::F32);
    if !f32 || shape.num_dims() != 4 || shape.num_elements() == 0 {
        return None;
    }
    let (batch, channels, h, w) = (shape[0], shape[1], shape[2], shape[3]);
    let per_channel = |t: &FlexTensor| t.layout().shape().num_elements() == channels;
    let fits = i32::try_from(h * w).is_ok();
    let pools = applies(&x, kernel, stride, padding, [1, 1], false);
    if !fits || !pools || !per_channel(&gamma) || !per_channel(&beta) {
        return None;
    }
    let (x, gamma, beta) = (
        x.to_contiguous(),
        gamma.to_contiguous(),
        beta.to_contiguous(),
    );
    let (data, gamma): (&[f32], &[f32]) = (x.storage(), gamma.storage());
    let (mean, variance) = statistics::<f32>(data, channels, h * w);
    let (scale, shift) = affine(gamma, beta.storage(), &mean, &variance, epsilon);
    let inv_std = variance
        .iter()
        .map(|&v| (v + epsilon as f32).sqrt().recip())
        .collect();

    let plan = Plan::of(&shape, kernel, stride, padding);
    let [_, [oh, ow]] = plan.sides();
    let windows = oh * ow;
    let len = batch * channels * windows;
    let (mut output, mut at, mut peak) = (
        Vec::with_capacity(len),
        Vec::with_capacity(len),
        Vec::with_capacity(len),
    );
    output.spare_capacity_mut()[..len]
        .par_chunks_mut(windows.max(1))
        .zip(at.spare_capacity_mut()[..len].par_chunks_mut(windows.max(1)))
        .zip(peak.spare_capacity_mut()[..len].par_chunks_mut(windows.max(1)))
        .zip(data.par_chunks(h * w))
        .enumerate()
        .for_each_init(
            || vec![0.0f32; h * w],
            |normalized, (i, (((output, at), peak), plane))| {
                let (scale, shift) = (scale[i % channels], shift[i % channels]);
                for (n, &v) in normalized.iter_mut().zip(plane) {
                    *n = v * scale + shift;
                }
                plan.pool::<i32>(normalized, output, at);
                // SAFETY: `pool` wrote every value of both.
                let (output, at) = unsafe { (assume_written(output), assume_written(at)) };
                for ((o, a), p) in output.iter_mut().zip(at.iter_mut()).zip(peak) {
                    let max = *o;
                    p.write(plane[*a as usize]);
                    let relu = if max.is_nan() || max > 0.0 { max } else { 0.0 };
                    *o = relu;
                    // ReLU's gradient is zero where its output is `≤ 0` (burn's rule).
                    if relu <= 0.0 {
                        *a = BLOCKED;
                    }
                }
            },
        );
    // SAFETY: each plane's task wrote all `oh · ow` values of the three.
    unsafe {
        output.set_len(len);
        at.set_len(len);
        peak.set_len(len);
    }
    let per_channel = Shape::new([channels]);
    Some(NormReluPool {
        output: narrow(output, Shape::new([batch, channels, oh, ow]), DType::F32),
        mean: narrow(mean.clone(), per_channel.clone(), DType::F32),
        variance: narrow(variance, per_channel, DType::F32),
        saved: NormReluPoolSaved {
            x,
            gamma: Arc::new(gamma.to_vec()),
            mean: Arc::new(mean),
            inv_std: Arc::new(inv_std),
            at: Arc::new(at),
            peak: Arc::new(peak),
            pooled: [oh, ow],
        },
    })
}

/// The gradients of [`batch_norm_relu_max_pool`] with respect to `x`, γ and β, from the
/// output's gradient.
pub fn batch_norm_relu_max_pool_backward(
    saved: &NormReluPoolSaved,
    output_grad: FlexTensor,
) -> [FlexTensor; 3] {
    let shape = saved.x.layout().shape().clone();
    let (batch, channels, h, w) = (shape[0], shape[1], shape[2], shape[3]);
    let windows = saved.pooled[0] * saved.pooled[1];
    let grad = output_grad.to_contiguous();
    let grad: &[f32] = grad.storage();
    let x: &[f32] = saved.x.storage();
    assert_eq!(
        grad.len(),
        batch * channels * windows,
        "batch norm, ReLU and pool backward: the gradient's shape is not the output's"
    );
    let (at, peak) = (&saved.at[..], &saved.peak[..]);
    let (gamma, mean, inv_std) = (&saved.gamma[..], &saved.mean[..], &saved.inv_std[..]);
    let sizes = [batch, channels, windows];
    let open = |a: i32| a != BLOCKED;
    let (beta_grad, gamma_grad) = channel_sums(grad, at, peak, mean, inv_std, sizes, open);
    // dx = γ/σ · (dy − mean(dy) − x̂ · mean(dy · x̂)), as batch norm's own gradient: the
    // terms without dy for every value, then γ/σ · dy added at each window's maximum.
    let count = (batch * h * w) as f32;
    let x_grad = par_written(x.len(), h * w, |i, out| {
        let c = i % channels;
        let scale = gamma[c] * inv_std[c];
        let mean_dy = beta_grad[c] / count;
        let projection = gamma_grad[c] / count * inv_std[c];
        let mean = mean[c];
        for (o, &x) in out.iter_mut().zip(&x[i * h * w..][..h * w]) {
            o.write(scale * (-mean_dy - (x - mean) * projection));
        }
        // SAFETY: every value was just written.
        let out = unsafe { assume_written(out) };
        let (grad, at) = (&grad[i * windows..][..windows], &at[i * windows..][..windows]);
        for (&g, &a) in grad.iter().zip(at) {
            if a != BLOCKED {
                out[a as usize] += scale * g;
            }
        }
    });
    let per_channel = Shape::new([channels]);
    [
        narrow(x_grad, shape, DType::F32),
        narrow(gamma_grad, per_channel.clone(), DType::F32),
        narrow(beta_grad, per_channel, DType::F32),
    ]
}
