//! A folded block's convolution → 2×2 max-pool → ReLU in one pass on flex, the CPU backend:
//! burn-flex's `conv2d_max_pool2x2_relu` (vendor/burn-flex/PATCHED.md) pools each part of the
//! convolution's output while it is still in cache, where the three operations apart write and
//! read the network's largest activations twice more. Reached through burn's backend
//! extension API (`Tensor::try_into_primitive`), so other backends, tensors that track
//! gradients and shapes it does not take get `None`, and the caller the three apart.

use burn::backend::Flex;
use burn::nn::PaddingConfig2d;
use burn::nn::conv::Conv2d;
use burn::tensor::Tensor;
use burn::tensor::ops::ConvOptions;

/// `relu(max_pool2×2(conv(x)))` where flex computes it fused.
pub(super) fn conv_pool_relu(conv: &Conv2d, x: &Tensor<4>) -> Option<Tensor<4>> {
    let flex = |t: Tensor<4>| t.try_into_primitive::<Flex>().ok();
    let input = flex(x.clone())?;
    let weight = flex(conv.weight.val())?;
    let bias = match &conv.bias {
        Some(bias) => Some(bias.val().try_into_primitive::<Flex>().ok()?),
        None => None,
    };
    // SmallCnn's padding is explicit; `Same` is computed inside burn-nn, so it composes.
    let padding = match conv.padding {
        PaddingConfig2d::Explicit(top, left, bottom, right) => [(top, bottom), (left, right)],
        PaddingConfig2d::Valid => [(0, 0), (0, 0)],
        PaddingConfig2d::Same => return None,
    };
    let options = ConvOptions::new_with_padding(conv.stride, padding, conv.dilation, conv.groups);
    burn_flex::ops::conv2d_max_pool2x2_relu(input, weight, bias, &options)
        .map(Tensor::from_primitive::<Flex>)
}
