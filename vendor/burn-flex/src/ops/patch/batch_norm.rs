//! Batch normalisation over `[batch, channels, ...]`, a channel per rayon task.
//!
//! Upstream burn-flex 0.22.1 uses burn's generic version, which copies the input into a
//! channel-major layout for every statistic and makes a new tensor for each of a dozen
//! element-wise steps; at 64 px it cost more than the convolutions. Here the statistics take
//! one read of the input (and one of its first image) and the output one write.

use alloc::vec::Vec;

use burn_backend::DType;
use burn_std::Shape;
use rayon::prelude::*;

use super::{Element, lane_sums, narrow, par_written, widen};
use crate::FlexTensor;

/// `[batch, channels, rest]` sizes of a `[batch, channels, ...]` shape.
fn split(shape: &Shape) -> (usize, usize, usize) {
    let (batch, channels) = (shape[0], shape[1]);
    (
        batch,
        channels,
        shape.num_elements() / (batch * channels).max(1),
    )
}

/// The values of channel `c`: `batch` runs of `rest` values.
fn channel<T>(data: &[T], c: usize, channels: usize, rest: usize) -> impl Iterator<Item = &[T]> {
    data.chunks(channels * rest.max(1))
        .map(move |image| &image[c * rest..(c + 1) * rest])
}

/// `out = x · scale[c] + shift[c]` for every value of every channel `c`.
fn scale_and_shift<T: Element>(x: &[T], scale: &[T], shift: &[T], rest: usize) -> Vec<T> {
    let channels = scale.len();
    let rest = rest.max(1);
    par_written(x.len(), rest, |plane, out| {
        let (scale, shift) = (scale[plane % channels], shift[plane % channels]);
        out.iter_mut().zip(&x[plane * rest..]).for_each(|(o, &v)| {
            o.write(v * scale + shift);
        });
    })
}

fn wide<T: Element>(v: T) -> f64 {
    num_traits::ToPrimitive::to_f64(&v).unwrap_or(f64::NAN)
}

fn cast<T: Element>(v: f64) -> T {
    T::from(v).unwrap_or_else(T::nan)
}

fn normalize_typed<T: Element>(
    x: &FlexTensor,
    [gamma, beta, mean, variance]: [&FlexTensor; 4],
    epsilon: f64,
    dtype: DType,
) -> FlexTensor {
    let (_, _, rest) = split(x.layout().shape());
    let (mean, variance): (&[T], &[T]) = (mean.storage(), variance.storage());
    let (scale, shift) = affine(gamma.storage(), beta.storage(), mean, variance, epsilon);
    narrow(
        scale_and_shift(x.storage(), &scale, &shift, rest),
        x.layout().shape().clone(),
        dtype,
    )
}

/// Per channel, the `scale` and `shift` with which `x · scale + shift` is the normalised output.
pub(super) fn affine<T: Element>(
    gamma: &[T],
    beta: &[T],
    mean: &[T],
    variance: &[T],
    epsilon: f64,
) -> (Vec<T>, Vec<T>) {
    let scale: Vec<T> = (0..gamma.len())
        .map(|c| gamma[c] / (variance[c] + cast(epsilon)).sqrt())
        .collect();
    let shift = (0..gamma.len())
        .map(|c| beta[c] - mean[c] * scale[c])
        .collect();
    (scale, shift)
}

/// `(x − mean) / √(variance + ε) · γ + β` per channel.
pub(crate) fn batch_norm(
    x: FlexTensor,
    gamma: FlexTensor,
    beta: FlexTensor,
    mean: FlexTensor,
    variance: FlexTensor,
    epsilon: f64,
) -> FlexTensor {
    let dtype = x.dtype();
    let [x, gamma, beta, mean, variance] = [x, gamma, beta, mean, variance].map(widen);
    let params = [&gamma, &beta, &mean, &variance];
    match x.dtype() {
        DType::F64 => normalize_typed::<f64>(&x, params, epsilon, dtype),
        _ => normalize_typed::<f32>(&x, params, epsilon, dtype),
    }
}

/// Batch mean and biased variance of every channel, in one read of the batch after the
/// first image's: the sums of `v − shift` and of its square, `shift` the channel's mean in the
/// first image, which keeps the squares near the variance (sums about zero would cancel
/// where the mean is large beside the spread). Two reads, the mean's and then the squares
/// about it, cost a third of training's batch norm.
pub(super) fn statistics<T: Element>(x: &[T], channels: usize, rest: usize) -> (Vec<T>, Vec<T>) {
    let count = (x.len() / channels.max(1)).max(1) as f64;
    (0..channels)
        .into_par_iter()
        .map(|c| {
            let first = channel(x, c, channels, rest).next().unwrap_or(&[]);
            let shift = lane_sums(first, first, |v, _| [v])[0] / cast(first.len().max(1) as f64);
            let (mut sum, mut squares) = (0.0f64, 0.0f64);
            for run in channel(x, c, channels, rest) {
                let [s, q] = lane_sums(run, run, |v, _| {
                    let d = v - shift;
                    [d, d * d]
                });
                sum += wide(s);
                squares += wide(q);
            }
            let offset = sum / count;
            let mean = wide(shift) + offset;
            let variance = (squares / count - offset * offset).max(0.0);
            (cast::<T>(mean), cast::<T>(variance))
        })
        .unzip()
}

fn train_typed<T: Element>(
    [x, gamma, beta]: [&FlexTensor; 3],
    epsilon: f64,
    dtype: DType,
) -> [FlexTensor; 3] {
    let shape = x.layout().shape().clone();
    let (_, channels, rest) = split(&shape);
    let (mean, variance) = statistics::<T>(x.storage(), channels, rest);
    let (scale, shift) = affine(gamma.storage(), beta.storage(), &mean, &variance, epsilon);
    let output = scale_and_shift(x.storage(), &scale, &shift, rest);
    let per_channel = Shape::new([channels]);
    [
        narrow(output, shape, dtype),
        narrow(mean, per_channel.clone(), dtype),
        narrow(variance, per_channel, dtype),
    ]
}

/// Batch normalisation with the batch's own statistics: `[output, mean, biased variance]`.
pub(crate) fn batch_norm_train(
    x: FlexTensor,
    gamma: FlexTensor,
    beta: FlexTensor,
    epsilon: f64,
) -> [FlexTensor; 3] {
    let dtype = x.dtype();
    let [x, gamma, beta] = [x, gamma, beta].map(widen);
    match x.dtype() {
        DType::F64 => train_typed::<f64>([&x, &gamma, &beta], epsilon, dtype),
        _ => train_typed::<f32>([&x, &gamma, &beta], epsilon, dtype),
    }
}

fn backward_typed<T: Element>(
    [x, gamma, mean, variance, output_grad]: [&FlexTensor; 5],
    epsilon: f64,
    dtype: DType,
) -> [FlexTensor; 3] {
    let shape = x.layout().shape().clone();
    let (_, channels, rest) = split(&shape);
    let (x, dy): (&[T], &[T]) = (x.storage(), output_grad.storage());
    let (gamma, mean, variance): (&[T], &[T], &[T]) =
        (gamma.storage(), mean.storage(), variance.storage());
    let inv_std: Vec<T> = variance
        .iter()
        .map(|&v| (v + cast(epsilon)).sqrt().recip())
        .collect();
    // Per channel: Σ dy (β's gradient) and Σ dy · x̂ (γ's gradient), x̂ the normalised input.
    let (beta_grad, gamma_grad): (Vec<T>, Vec<T>) = (0..channels)
        .into_par_iter()
        .map(|c| {
            let (mut sum_dy, mut sum_dy_x) = (0.0f64, 0.0f64);
            // The mean as a value: read through the slice inside the closure, it was loaded
            // again for every element in one build and the sums compiled to scalar code, at
            // two and a half times the time.
            let mean = mean[c];
            for (x_run, dy_run) in channel(x, c, channels, rest).zip(channel(dy, c, channels, rest))
            {
                let [s, sx] = lane_sums(x_run, dy_run, |x, dy| [dy, dy * (x - mean)]);
                sum_dy += wide(s);
                sum_dy_x += wide(sx);
            }
            (cast::<T>(sum_dy), cast::<T>(sum_dy_x) * inv_std[c])
        })
        .unzip();
    // dx = γ/σ · (dy − mean(dy) − x̂ · mean(dy · x̂)), from each channel's two sums above.
    let count: T = cast((x.len() / channels.max(1)).max(1) as f64);
    // `par_written` needs every value written: each plane of `x` has its plane of `dy`.
    assert_eq!(
        x.len(),
        dy.len(),
        "batch norm backward: input and gradient shapes differ"
    );
    let rest = rest.max(1);
    let x_grad = par_written(x.len(), rest, |plane, out| {
        let c = plane % channels;
        let scale = gamma[c] * inv_std[c];
        let mean_dy = beta_grad[c] / count;
        let projection = gamma_grad[c] / count * inv_std[c];
        let (x, dy) = (&x[plane * rest..], &dy[plane * rest..]);
        for ((o, &x), &dy) in out.iter_mut().zip(x).zip(dy) {
            o.write(scale * (dy - mean_dy - (x - mean[c]) * projection));
        }
    });
    let per_channel = Shape::new([channels]);
    [
        narrow(x_grad, shape, dtype),
        narrow(gamma_grad, per_channel.clone(), dtype),
        narrow(beta_grad, per_channel, dtype),
    ]
}

/// Gradients of [`batch_norm_train`]: `[x, γ, β]`.
pub(crate) fn batch_norm_train_backward(
    x: FlexTensor,
    gamma: FlexTensor,
    mean: FlexTensor,
    variance: FlexTensor,
    epsilon: f64,
    output_grad: FlexTensor,
) -> [FlexTensor; 3] {
    let dtype = x.dtype();
    let tensors = [x, gamma, mean, variance, output_grad].map(widen);
    let tensors = [
        &tensors[0],
        &tensors[1],
        &tensors[2],
        &tensors[3],
        &tensors[4],
    ];
    match tensors[0].dtype() {
        DType::F64 => backward_typed::<f64>(tensors, epsilon, dtype),
        _ => backward_typed::<f32>(tensors, epsilon, dtype),
    }
}
