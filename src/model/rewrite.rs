//! Trained layers rewritten into equivalent ones, for every network: a batch norm folded into
//! the convolution before it, and a classifier whose logits are scaled.

use burn::module::Param;
use burn::nn::conv::Conv2d;
use burn::nn::{BatchNorm, Linear};
use burn::tensor::Tensor;

/// `conv` with `norm`'s running statistics, scale and shift folded in: `conv(x)·s + t` with
/// `s = γ/√(var + ε)` and `t = β − mean·s` is the convolution with weights `W·s` and bias
/// `b·s + t`, the same function at inference in one pass instead of two.
pub(super) fn fold_into(conv: Conv2d, norm: BatchNorm) -> Conv2d {
    let scale = norm.gamma.val() / (norm.running_var.value() + norm.epsilon).sqrt();
    let shift = norm.beta.val() - norm.running_mean.value() * scale.clone();
    let channels = scale.dims()[0];
    let mut conv = conv;
    // Taken out of its parameter, the weight tensor is the only reference to its memory, so
    // the CPU backends multiply in place instead of writing a second copy of every weight.
    let per_channel = scale.clone().reshape([channels, 1, 1, 1]);
    conv.weight = conv.weight.map(|weight| weight * per_channel);
    let bias = match conv.bias.take() {
        Some(bias) => bias.into_value() * scale + shift,
        None => shift,
    };
    conv.bias = Some(Param::from_tensor(bias));
    conv
}

/// `norm(conv(x))` for a network whose batch norms are `Option`s: `None` once [`fold`] has
/// folded them into the convolutions (ResNet-18, EfficientNet-Lite0).
pub(super) fn conv_norm(conv: &Conv2d, norm: &Option<BatchNorm>, x: Tensor<4>) -> Tensor<4> {
    let y = conv.forward(x);
    match norm {
        Some(norm) => norm.forward(y),
        None => y,
    }
}

/// `conv` and `norm` with the batch norm folded in ([`fold_into`]), as [`conv_norm`] takes
/// them.
pub(super) fn fold(conv: Conv2d, norm: Option<BatchNorm>) -> (Conv2d, Option<BatchNorm>) {
    match norm {
        Some(norm) => (fold_into(conv, norm), None),
        None => (conv, None),
    }
}

/// `linear` with its weights and bias multiplied by `factor`: every logit `factor` times
/// what it was.
pub(super) fn scaled(linear: Linear, factor: f32) -> Linear {
    let Linear { weight, bias } = linear;
    Linear {
        weight: weight.map(|w| w * factor),
        bias: bias.map(|b| b.map(|b| b * factor)),
    }
}

/// `linear` with `weight` (`[features, classes]`) and `bias` in place of its own, keeping its
/// parameters' ids and whether they learn. A layer without a bias keeps none.
pub(super) fn replaced(linear: Linear, weight: Tensor<2>, bias: Tensor<1>) -> Linear {
    /// `new` where `old` was: on its device, learning as it did.
    fn instead<const D: usize>(old: Tensor<D>, new: Tensor<D>) -> Tensor<D> {
        let learns = old.is_require_grad();
        new.to_device(&old.device()).set_require_grad(learns)
    }
    Linear {
        weight: linear.weight.map(|old| instead(old, weight)),
        bias: linear.bias.map(|old| old.map(|old| instead(old, bias))),
    }
}
