//! The network: `SmallCnn`, four conv blocks and a linear classifier.
//!
//! Every speed comparison in catdog uses this architecture, so it stays the default.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{
    BatchNorm, BatchNormConfig, Dropout, DropoutConfig, Linear, LinearConfig, PaddingConfig2d,
};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

/// Output channels of the four blocks.
const CHANNELS: [usize; 4] = [32, 64, 128, 128];

/// conv 3×3 (padding 1) → batch norm → ReLU → max-pool 2×2, computed as max-pool before
/// ReLU: the two commute (ReLU never changes which value is largest, nor a window's NaN), and
/// ReLU then touches a quarter of the values.
#[derive(Module, Debug)]
pub struct ConvBlock {
    conv: Conv2d,
    norm: BatchNorm,
    pool: MaxPool2d,
}

impl ConvBlock {
    fn new(channels_in: usize, channels_out: usize, device: &Device) -> ConvBlock {
        ConvBlock {
            conv: Conv2dConfig::new([channels_in, channels_out], [3, 3])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device),
            norm: BatchNormConfig::new(channels_out).init(device),
            pool: MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init(),
        }
    }

    fn forward(&self, input: Tensor<4>) -> Tensor<4> {
        relu(
            self.pool
                .forward(self.norm.forward(self.conv.forward(input))),
        )
    }
}

/// Four [`ConvBlock`]s of 32, 64, 128 and 128 channels, global average pooling, dropout,
/// then a linear layer to one logit per class. Takes `[batch, 3, size, size]` images of at
/// least 16 px.
#[derive(Module, Debug)]
pub struct SmallCnn {
    blocks: Vec<ConvBlock>,
    pool: AdaptiveAvgPool2d,
    /// Active only on an autodiff device, that is while training; saves no weights.
    dropout: Dropout,
    classifier: Linear,
}

impl SmallCnn {
    /// A freshly initialised network for `classes` classes that zeroes a `dropout` fraction
    /// (in `[0, 1)`) of the pooled features while training.
    pub fn new(classes: usize, dropout: f64, device: &Device) -> SmallCnn {
        let mut channels_in = 3;
        let blocks = CHANNELS
            .iter()
            .map(|&channels_out| {
                let block = ConvBlock::new(channels_in, channels_out, device);
                channels_in = channels_out;
                block
            })
            .collect();
        SmallCnn {
            blocks,
            pool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            dropout: DropoutConfig::new(dropout).init(),
            classifier: LinearConfig::new(channels_in, classes).init(device),
        }
    }

    /// Logits, `[batch, classes]`.
    pub fn forward(&self, images: Tensor<4>) -> Tensor<2> {
        let features = self.blocks.iter().fold(images, |x, block| block.forward(x));
        let pooled = self.pool.forward(features).flatten::<2>(1, 3);
        self.classifier.forward(self.dropout.forward(pooled))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Distribution;

    #[test]
    fn pooling_before_relu_gives_exactly_relu_then_pooling() {
        let device = Device::flex();
        let block = ConvBlock::new(3, 4, &device);
        let x = Tensor::<4>::random([2, 3, 9, 8], Distribution::Uniform(-1.0, 1.0), &device);
        let conv = block.norm.forward(block.conv.forward(x.clone()));
        let reference = block.pool.forward(relu(conv));
        let got = block.forward(x).into_data();
        assert_eq!(got.shape(), &reference.shape());
        assert_eq!(
            got.try_to_vec::<f32>().unwrap(),
            reference.into_data().try_to_vec::<f32>().unwrap()
        );
    }
}
