//! Training's batch norm → shortcut added (or not) → ReLU or ReLU6, ResNet's and
//! EfficientNet's step after each convolution, as one operation with its own gradient.
//!
//! Apart, batch norm writes its output, the shortcut's addition reads it and writes a sum,
//! and the clamp reads that and writes once more: up to five passes over the activations
//! after the two of the statistics, each with a tensor of its own. Here the statistics take
//! their two reads and the output is written in one more pass that reads the input (and the
//! shortcut). The gradient masks the output's gradient by the clamped output, in place where
//! nothing else holds it (the shortcut's gradient is that masked gradient), and then takes
//! [`super::batch_norm`]'s backward pass.
//!
//! The same values as the operations apart, as burn-flex computes them: the statistics and
//! the normalised values are [`super::batch_norm`]'s, the sum is added after normalising as
//! burn adds it. With an infinite upper bound the clamp is flex's ReLU (`x` where `x > low`
//! or NaN, `low` elsewhere, −0 included) and its gradient passes where the output is `> low`
//! or NaN; with a finite one it is [`super::clamp`]'s (a NaN stays NaN) and its gradient
//! passes where the output lies strictly between the bounds (PyTorch's `hardtanh_backward`).

use alloc::vec::Vec;

use burn_backend::DType;
use burn_std::Shape;

use super::batch_norm::{affine, batch_norm_train_backward, statistics};
use super::clamp::masked;
use super::{clamp, narrow, par_written};
use crate::FlexTensor;

/// The output, the batch's mean and biased variance per channel (for the running
/// statistics), and what the gradient needs.
pub struct NormClamp {
    pub output: FlexTensor,
    pub mean: FlexTensor,
    pub variance: FlexTensor,
    pub saved: NormClampSaved,
}

/// What [`batch_norm_add_clamp_backward`] needs from the forward pass.
#[derive(Clone, Debug)]
pub struct NormClampSaved {
    /// The batch norm's input, contiguous f32.
    x: FlexTensor,
    gamma: FlexTensor,
    mean: FlexTensor,
    variance: FlexTensor,
    epsilon: f64,
    /// The clamped output: the gradient passes where it lies strictly between the bounds.
    output: FlexTensor,
    bounds: Option<(f32, f32)>,
}

/// `f(clamp(v))` for the clamp `bounds` give: ReLU's rules where the upper bound is infinite
/// (see the module's notes), none without bounds. Each clamp is its own closure, so that the
/// loops `f` makes with it compile to vector code: one closure that chose among the three
/// for every value compiled to a branch per value, and the output pass took a sixth of
/// EfficientNet-Lite0's training.
fn with_clamp<R>(bounds: Option<(f32, f32)>, f: impl ClampUser<R>) -> R {
    match bounds {
        None => f.with(|v| v),
        Some((low, high)) if high == f32::INFINITY => {
            f.with(move |v: f32| if v > low || v.is_nan() { v } else { low })
        }
        Some((low, high)) => f.with(move |v: f32| clamp(v, low, high)),
    }
}

/// What [`with_clamp`] calls with the clamp.
trait ClampUser<R> {
    fn with<F: Fn(f32) -> f32 + Copy + Sync + Send>(self, clamp: F) -> R;
}

/// `grad` where the gradient passes the clamp's output `y`: ReLU's rule where the upper bound
/// is infinite, strictly between the bounds otherwise (each its own closure, as above).
fn masked_by(grad: FlexTensor, y: &FlexTensor, (low, high): (f32, f32)) -> FlexTensor {
    if high == f32::INFINITY {
        masked(grad, y, move |y| y > low || y.is_nan())
    } else {
        masked(grad, y, move |y| y > low && y < high)
    }
}

/// `clamp(batch_norm(x) + add, low, high)` with the batch's own statistics, for training:
/// f32, `[batch, channels, ...]`, `add` (if any) of `x`'s shape, `low ≤ high` (`high` may be
/// infinite: ReLU), no clamp without `bounds`; `None` otherwise, for the caller to compose
/// the operations.
pub fn batch_norm_add_clamp(
    x: FlexTensor,
    gamma: FlexTensor,
    beta: FlexTensor,
    epsilon: f64,
    add: Option<FlexTensor>,
    bounds: Option<(f32, f32)>,
) -> Option<NormClamp> {
    let shape = x.layout().shape().clone();
    let f32 = [Some(&x), Some(&gamma), Some(&beta), add.as_ref()]
        .iter()
        .flatten()
        .all(|t| t.dtype() == DType::F32);
    let in_order = bounds.is_none_or(|(low, high)| low <= high);
    if !f32 || shape.num_dims() < 2 || shape.num_elements() == 0 || !in_order {
        return None;
    }
    let (channels, rest) = (shape[1], shape.num_elements() / (shape[0] * shape[1]));
    let per_channel = |t: &FlexTensor| t.layout().shape().num_elements() == channels;
    let same_shape = add.as_ref().is_none_or(|a| a.layout().shape() == &shape);
    if !per_channel(&gamma) || !per_channel(&beta) || !same_shape {
        return None;
    }
    let (x, gamma, beta) = (
        x.into_contiguous(),
        gamma.into_contiguous(),
        beta.into_contiguous(),
    );
    let add = add.map(FlexTensor::into_contiguous);
    let data: &[f32] = x.storage();
    let (mean, variance) = statistics::<f32>(data, channels, rest);
    let (scale, shift) = affine(gamma.storage(), beta.storage(), &mean, &variance, epsilon);
    let added: Option<&[f32]> = add.as_ref().map(|a| a.storage());
    let output = with_clamp(
        bounds,
        Output {
            data,
            added,
            scale: &scale,
            shift: &shift,
            rest,
        },
    );
    let per_channel = Shape::new([channels]);
    let (mean, variance) = (
        narrow(mean, per_channel.clone(), DType::F32),
        narrow(variance, per_channel, DType::F32),
    );
    let output = narrow(output, shape, DType::F32);
    Some(NormClamp {
        output: output.clone(),
        mean: mean.clone(),
        variance: variance.clone(),
        saved: NormClampSaved {
            x,
            gamma,
            mean,
            variance,
            epsilon,
            output,
            bounds,
        },
    })
}

/// The gradients of [`batch_norm_add_clamp`] with respect to `x`, γ, β and the added
/// shortcut, from the output's gradient (of the output's shape).
pub fn batch_norm_add_clamp_backward(
    saved: &NormClampSaved,
    output_grad: FlexTensor,
) -> [FlexTensor; 4] {
    let grad = output_grad.into_contiguous();
    assert_eq!(
        grad.layout().shape(),
        saved.output.layout().shape(),
        "batch norm → clamp backward: the gradient's shape is not the output's"
    );
    let masked = match saved.bounds {
        Some(bounds) => masked_by(grad, &saved.output, bounds),
        None => grad,
    };
    let [x_grad, gamma_grad, beta_grad] = batch_norm_train_backward(
        saved.x.clone(),
        saved.gamma.clone(),
        saved.mean.clone(),
        saved.variance.clone(),
        saved.epsilon,
        masked.clone(),
    );
    [x_grad, gamma_grad, beta_grad, masked]
}

/// The output pass: `clamp(x · scale + shift + added)` a plane at a time.
struct Output<'a> {
    data: &'a [f32],
    added: Option<&'a [f32]>,
    scale: &'a [f32],
    shift: &'a [f32],
    rest: usize,
}

impl ClampUser<Vec<f32>> for Output<'_> {
    fn with<F: Fn(f32) -> f32 + Copy + Sync + Send>(self, clamp: F) -> Vec<f32> {
        let Output {
            data,
            added,
            scale,
            shift,
            rest,
        } = self;
        let channels = scale.len();
        par_written(data.len(), rest, |plane, out| {
            let (scale, shift) = (scale[plane % channels], shift[plane % channels]);
            let x = &data[plane * rest..][..rest];
            match added {
                Some(added) => {
                    let added = &added[plane * rest..][..rest];
                    for ((o, &v), &a) in out.iter_mut().zip(x).zip(added) {
                        o.write(clamp((v * scale + shift) + a));
                    }
                }
                None => {
                    for (o, &v) in out.iter_mut().zip(x) {
                        o.write(clamp(v * scale + shift));
                    }
                }
            }
        })
    }
}
