//! A folded network's convolution and what follows it in one pass on flex, the CPU backend
//! (vendor/burn-flex/PATCHED.md): SmallCnn's convolution → 2×2 max-pool → ReLU
//! (`conv2d_max_pool2x2_relu`), and ResNet's and EfficientNet's convolution → shortcut → ReLU
//! or ReLU6 (`conv2d_then`). Each part of the convolution's output is finished while it is
//! still in cache, where the operations apart write and read the network's largest
//! activations once more each. Reached through burn's backend extension API
//! (`Tensor::try_into_primitive`), so other backends, tensors that track gradients and shapes
//! flex does not take get the operations apart.

use burn::backend::Flex;
use burn::nn::conv::Conv2d;
use burn::nn::{BatchNorm, PaddingConfig2d};
use burn::tensor::Tensor;
use burn::tensor::ops::ConvOptions;
use burn_flex::FlexTensor;

use super::activation::Then;
use super::norm_then::norm_then;

/// `then(norm(conv(x)) + add)`: in one pass where flex can (the batch norm folded away, no
/// gradients tracked); while training, the convolution and then the rest in one operation
/// where flex can ([`norm_then`]); otherwise as the operations apart.
pub(super) fn conv_norm_then(
    conv: &Conv2d,
    norm: &Option<BatchNorm>,
    x: Tensor<4>,
    add: Option<Tensor<4>>,
    then: Then,
) -> Tensor<4> {
    match norm {
        Some(norm) => norm_then(norm, conv.forward(x), add, then),
        None => match conv_then(conv, &x, add.as_ref(), then) {
            Some(y) => y,
            None => then.after(conv.forward(x), add),
        },
    }
}

/// `relu(max_pool2×2(conv(x)))` where flex computes it fused.
pub(super) fn conv_pool_relu(conv: &Conv2d, x: &Tensor<4>) -> Option<Tensor<4>> {
    let (input, weight, bias) = on_flex(conv, x)?;
    burn_flex::ops::conv2d_max_pool2x2_relu(input, weight, bias, &options(conv, x))
        .map(Tensor::from_primitive::<Flex>)
}

/// `then(conv(x) + add)` where flex computes it fused.
fn conv_then(
    conv: &Conv2d,
    x: &Tensor<4>,
    add: Option<&Tensor<4>>,
    then: Then,
) -> Option<Tensor<4>> {
    let (input, weight, bias) = on_flex(conv, x)?;
    let add = match add {
        Some(add) => Some(flex(add)?),
        None => None,
    };
    burn_flex::ops::conv2d_then(input, weight, bias, &options(conv, x), add, then.bounds())
        .map(Tensor::from_primitive::<Flex>)
}

/// `x`, `conv`'s weights and its bias as flex's own tensors; `None` on another backend or
/// for tensors that track gradients.
fn on_flex(conv: &Conv2d, x: &Tensor<4>) -> Option<(FlexTensor, FlexTensor, Option<FlexTensor>)> {
    let input = flex(x)?;
    let weight = conv.weight.val().try_into_primitive::<Flex>().ok()?;
    let bias = match &conv.bias {
        Some(bias) => Some(bias.val().try_into_primitive::<Flex>().ok()?),
        None => None,
    };
    Some((input, weight, bias))
}

/// `x` as flex's own tensor; `None` on another backend or where it tracks gradients.
fn flex(x: &Tensor<4>) -> Option<FlexTensor> {
    x.clone().try_into_primitive::<Flex>().ok()
}

/// `conv`'s options for input `x`, its padding worked out as burn-nn 0.22's `Conv2d::forward`
/// does (its own function for that is private to it).
fn options(conv: &Conv2d, x: &Tensor<4>) -> ConvOptions<2> {
    let [_, _, height, width] = x.dims();
    let padding = match conv.padding {
        PaddingConfig2d::Valid => [(0, 0), (0, 0)],
        PaddingConfig2d::Explicit(top, left, bottom, right) => [(top, bottom), (left, right)],
        PaddingConfig2d::Same => [0, 1].map(|axis| {
            same_padding(
                conv.kernel_size[axis],
                conv.stride[axis],
                [height, width][axis],
            )
        }),
    };
    ConvOptions::new_with_padding(conv.stride, padding, conv.dilation, conv.groups)
}

/// TensorFlow's "same" padding along one axis, as burn-nn computes it: enough for
/// `⌈size / stride⌉` outputs, the odd pixel at the end (right or bottom).
fn same_padding(kernel: usize, stride: usize, size: usize) -> (usize, usize) {
    let outputs = size.div_ceil(stride);
    let total = match outputs {
        0 => 0,
        _ => ((outputs - 1) * stride + kernel).saturating_sub(size),
    };
    (total / 2, total - total / 2)
}
