//! Training's batch norm → 2×2 max-pool (stride 2) → ReLU, SmallCnn's block after its
//! convolution, as one operation with its own gradient.
//!
//! Apart, the three write the normalised activations, read them to pool, and on the way back
//! write an input-sized pool gradient that batch norm then reads twice (its two sums, then
//! its output): about eleven passes over the block's largest tensor per step, the most of any
//! part of a 64 px training step after the convolutions. Here the forward pass reads the
//! input for the statistics and once more to normalise and pool it, and keeps for the
//! gradient a quarter-sized record of each window's maximum (its position, and the input
//! there); the gradient takes batch norm's sums from that record alone (each window's
//! gradient lands on its maximum, so `Σ dy = Σ dp` and `Σ dy·x̂ = Σ dp·x̂[max]`) and then
//! reads the input once to write the input's gradient.
//!
//! The same values as the three apart, as burn-flex computes them: the statistics and the
//! normalised values are [`super::batch_norm`]'s, the window's maximum and its NaN and ties
//! [`super::pool`]'s, and ReLU's gradient passes where the output is not `≤ 0` (burn's).

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use burn_backend::DType;
use burn_std::Shape;
use rayon::prelude::*;

use super::batch_norm::{affine, statistics};
use super::{LANES, narrow, par_written};
use crate::FlexTensor;

/// A window whose output ReLU set to zero: no gradient reaches any of its four values.
const BLOCKED: u8 = 4;

/// The output, the batch's mean and biased variance per channel (for the running
/// statistics), and what the gradient needs.
pub struct NormPoolRelu {
    pub output: FlexTensor,
    pub mean: FlexTensor,
    pub variance: FlexTensor,
    pub saved: NormPoolSaved,
}

/// What [`batch_norm_max_pool2x2_relu_backward`] needs from the forward pass.
#[derive(Clone, Debug)]
pub struct NormPoolSaved {
    /// The batch norm's input, `[batch, channels, h, w]`, contiguous f32.
    x: FlexTensor,
    gamma: Arc<Vec<f32>>,
    mean: Arc<Vec<f32>>,
    inv_std: Arc<Vec<f32>>,
    /// Per window: the position (0..4, row by row) of its maximum, or [`BLOCKED`].
    at: Arc<Vec<u8>>,
    /// Per window: the input at its maximum.
    peak: Arc<Vec<f32>>,
}

/// `relu(max_pool2x2(batch_norm(x)))` with the batch's own statistics, for training: f32,
/// `[batch, channels, h, w]` with even sides; `None` otherwise, for the caller to compose the
/// three.
pub fn batch_norm_max_pool2x2_relu(
    x: FlexTensor,
    gamma: FlexTensor,
    beta: FlexTensor,
    epsilon: f64,
) -> Option<NormPoolRelu> {
    let shape = x.layout().shape().clone();
    let f32 = [&x, &gamma, &beta].iter().all(|t| t.dtype() == DType::F32);
    if !f32 || shape.num_dims() != 4 || shape.num_elements() == 0 {
        return None;
    }
    let (batch, channels, h, w) = (shape[0], shape[1], shape[2], shape[3]);
    let per_channel = |t: &FlexTensor| t.layout().shape().num_elements() == channels;
    if h % 2 == 1 || w % 2 == 1 || !per_channel(&gamma) || !per_channel(&beta) {
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

    let (oh, ow) = (h / 2, w / 2);
    let len = batch * channels * oh * ow;
    let (mut output, mut at, mut peak) = (
        Vec::with_capacity(len),
        Vec::with_capacity(len),
        Vec::with_capacity(len),
    );
    output.spare_capacity_mut()[..len]
        .par_chunks_mut(oh * ow)
        .zip(at.spare_capacity_mut()[..len].par_chunks_mut(oh * ow))
        .zip(peak.spare_capacity_mut()[..len].par_chunks_mut(oh * ow))
        .zip(data.par_chunks(h * w))
        .enumerate()
        .for_each(|(i, (((output, at), peak), plane))| {
            let (scale, shift) = (scale[i % channels], shift[i % channels]);
            // Each pair of rows as four sets of columns, the windows' values in upstream's
            // order, so that the loop over windows runs in vectors: window by window, with
            // a branch at each comparison, it took three times the rest of the step's pooling.
            let mut sets = vec![0.0f32; 4 * ow];
            let rows = (output.chunks_exact_mut(ow))
                .zip(at.chunks_exact_mut(ow))
                .zip(peak.chunks_exact_mut(ow));
            for (oy, ((output, at), peak)) in rows.enumerate() {
                let (top, bottom) = plane[2 * oy * w..][..2 * w].split_at(w);
                let (first, second) = sets.split_at_mut(2 * ow);
                let ([a, b], [c, d]) = (split_pairs(top, first), split_pairs(bottom, second));
                for ox in 0..ow {
                    // `pool::window_max`'s comparisons, carrying the input along.
                    let x = [a[ox], b[ox], c[ox], d[ox]];
                    let (mut max, mut which, mut input) = (x[0] * scale + shift, 0, x[0]);
                    for (k, &v) in x.iter().enumerate().skip(1) {
                        let y = v * scale + shift;
                        if y > max || y.is_nan() {
                            (max, which, input) = (y, k as u8, v);
                        }
                    }
                    let relu = if max.is_nan() || max > 0.0 { max } else { 0.0 };
                    output[ox].write(relu);
                    // ReLU's gradient is zero where its output is `≤ 0` (burn's rule).
                    at[ox].write(if relu <= 0.0 { BLOCKED } else { which });
                    peak[ox].write(input);
                }
            }
        });
    // SAFETY: each plane's task wrote all `oh · ow` values of the three.
    unsafe {
        output.set_len(len);
        at.set_len(len);
        peak.set_len(len);
    }
    let per_channel = Shape::new([channels]);
    Some(NormPoolRelu {
        output: narrow(output, Shape::new([batch, channels, oh, ow]), DType::F32),
        mean: narrow(mean.clone(), per_channel.clone(), DType::F32),
        variance: narrow(variance, per_channel, DType::F32),
        saved: NormPoolSaved {
            x,
            gamma: Arc::new(gamma.to_vec()),
            mean: Arc::new(mean),
            inv_std: Arc::new(inv_std),
            at: Arc::new(at),
            peak: Arc::new(peak),
        },
    })
}

/// The gradients of [`batch_norm_max_pool2x2_relu`] with respect to `x`, γ and β, from the
/// output's gradient.
pub fn batch_norm_max_pool2x2_relu_backward(
    saved: &NormPoolSaved,
    output_grad: FlexTensor,
) -> [FlexTensor; 3] {
    let shape = saved.x.layout().shape().clone();
    let (batch, channels, h, w) = (shape[0], shape[1], shape[2], shape[3]);
    let (oh, ow) = (h / 2, w / 2);
    let grad = output_grad.to_contiguous();
    let grad: &[f32] = grad.storage();
    let x: &[f32] = saved.x.storage();
    assert_eq!(
        grad.len(),
        batch * channels * oh * ow,
        "batch norm, pool and ReLU backward: the gradient's shape is not the output's"
    );
    let (at, peak) = (&saved.at[..], &saved.peak[..]);
    let (gamma, mean, inv_std) = (&saved.gamma[..], &saved.mean[..], &saved.inv_std[..]);
    let windows = oh * ow;
    let sizes = [batch, channels, windows];
    let open = |a: u8| a != BLOCKED;
    let (beta_grad, gamma_grad) = channel_sums(grad, at, peak, mean, inv_std, sizes, open);
    // dx = γ/σ · (dy − mean(dy) − x̂ · mean(dy · x̂)), as batch norm's own gradient.
    let count = (batch * h * w) as f32;
    let x_grad = par_written(x.len(), h * w, |i, out| {
        let c = i % channels;
        let scale = gamma[c] * inv_std[c];
        let mean_dy = beta_grad[c] / count;
        let projection = gamma_grad[c] / count * inv_std[c];
        let (x, grad, at) = (
            &x[i * h * w..][..h * w],
            &grad[i * windows..][..windows],
            &at[i * windows..][..windows],
        );
        // Each window's gradient, and its maximum's position less the column's place in the
        // window, spread over the window's two columns, so that the loop over the two rows
        // selects column by column in vectors (see `pool::backward`).
        let (mut spread, mut shifted) = (vec![0.0f32; w], vec![0i32; w]);
        for (oy, rows) in out.chunks_exact_mut(2 * w).enumerate() {
            let windows = grad[oy * ow..][..ow].iter().zip(&at[oy * ow..][..ow]);
            for ((g, shift), (&window_grad, &a)) in
                (spread.chunks_exact_mut(2).zip(shifted.chunks_exact_mut(2))).zip(windows)
            {
                g.fill(window_grad);
                shift[0] = i32::from(a);
                shift[1] = i32::from(a) - 1;
            }
            let (top, bottom) = rows.split_at_mut(w);
            let (x_top, x_bottom) = x[2 * oy * w..][..2 * w].split_at(w);
            let (spread, shifted) = (&spread[..w], &shifted[..w]);
            let mean = mean[c];
            // Indexed, every slice cut to `w` values, so that the loop runs in vectors.
            for j in 0..w {
                let dy_top = if shifted[j] == 0 { spread[j] } else { 0.0 };
                let dy_bottom = if shifted[j] == 2 { spread[j] } else { 0.0 };
                top[j].write(scale * (dy_top - mean_dy - (x_top[j] - mean) * projection));
                bottom[j].write(scale * (dy_bottom - mean_dy - (x_bottom[j] - mean) * projection));
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

/// The even and odd columns of `row` (its first `2·n` values), `n` the length of each half
/// of `sets`.
#[inline(always)]
fn split_pairs<'a>(row: &[f32], sets: &'a mut [f32]) -> [&'a [f32]; 2] {
    let n = sets.len() / 2;
    let (even, odd) = sets.split_at_mut(n);
    let pairs = &row[..2 * n];
    for i in 0..n {
        // SAFETY: `i < n`, both halves hold `n` values and `pairs` `2·n`; unchecked and
        // indexed so that the loop is vectorised (see `winograd::split_columns`).
        unsafe {
            *even.get_unchecked_mut(i) = *pairs.get_unchecked(2 * i);
            *odd.get_unchecked_mut(i) = *pairs.get_unchecked(2 * i + 1);
        }
    }
    [even, odd]
}

/// Per channel, from the windows alone (`[batch, channels, windows]` of them, as `grad`, `at`
/// and `peak` lie): `Σ dy` (β's gradient) and `Σ dy · x̂` (γ's), each window's gradient `dy`
/// landing on its maximum, where ReLU let it through (`open` says which, from its `at`).
pub(super) fn channel_sums<A: Copy + Sync>(
    grad: &[f32],
    at: &[A],
    peak: &[f32],
    mean: &[f32],
    inv_std: &[f32],
    [batch, channels, windows]: [usize; 3],
    open: impl Fn(A) -> bool + Copy + Sync,
) -> (Vec<f32>, Vec<f32>) {
    (0..channels)
        .into_par_iter()
        .map(|c| {
            let (mut sum_dy, mut sum_dy_x) = (0.0f64, 0.0f64);
            for b in 0..batch {
                let plane = (b * channels + c) * windows..(b * channels + c + 1) * windows;
                let (grad, at, peak) = (&grad[plane.clone()], &at[plane.clone()], &peak[plane]);
                let [s, sx] = window_sums(grad, at, peak, mean[c], open);
                sum_dy += f64::from(s);
                sum_dy_x += f64::from(sx);
            }
            (sum_dy as f32, sum_dy_x as f32 * inv_std[c])
        })
        .unzip()
}

/// `[Σ g, Σ g · (peak − mean)]` over one plane's windows that ReLU let through (`open` says
/// which, from their `at`), each in [`LANES`] partial sums (see [`super::lane_sums`]).
fn window_sums<A: Copy>(
    grad: &[f32],
    at: &[A],
    peak: &[f32],
    mean: f32,
    open: impl Fn(A) -> bool,
) -> [f32; 2] {
    let term = |g: f32, a: A, p: f32| {
        if open(a) {
            [g, g * (p - mean)]
        } else {
            [0.0, 0.0]
        }
    };
    let mut lanes = [[0.0f32; LANES]; 2];
    let chunks =
        (grad.chunks_exact(LANES).zip(at.chunks_exact(LANES))).zip(peak.chunks_exact(LANES));
    for ((g, a), p) in chunks {
        for i in 0..LANES {
            let [s, sx] = term(g[i], a[i], p[i]);
            lanes[0][i] += s;
            lanes[1][i] += sx;
        }
    }
    let mut sums = lanes.map(|lanes| lanes.iter().sum::<f32>());
    let done = grad.len() / LANES * LANES;
    for ((&g, &a), &p) in grad[done..].iter().zip(&at[done..]).zip(&peak[done..]) {
        let [s, sx] = term(g, a, p);
        sums[0] += s;
        sums[1] += sx;
    }
    sums
}
