//! `SmallCnn`, catdog's own network: four conv blocks and a linear classifier, at two widths.
//!
//! Every speed comparison in catdog uses its standard width, so it stays the default.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{
    BatchNorm, BatchNormConfig, Dropout, DropoutConfig, Linear, LinearConfig, PaddingConfig2d,
};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

use super::norm_pool_relu::norm_pool_relu;
use super::{fused, rewrite};

/// Output channels of the four blocks: SmallCnn's (`--network small-cnn`).
pub const CHANNELS: [usize; 4] = [32, 64, 128, 128];

/// Twice as many (`--network small-cnn-wide`): four times the weights and almost four times
/// the work a photo, for accuracy, still under 4 MB as a file.
pub const WIDE_CHANNELS: [usize; 4] = [64, 128, 256, 256];

/// The block whose output [`SmallCnn::forward_with_look`] sums up: the third (10 px of 256
/// channels for the wide network at 80 px), whose channels told photos of neither a cat nor a
/// dog from Kaggle's best of the four ([`super::typical`]).
pub const LOOK_BLOCK: usize = 2;

/// conv 3×3 (padding 1) → batch norm → ReLU → max-pool 2×2, computed as max-pool before
/// ReLU: the two commute (ReLU never changes which value is largest, nor a window's NaN), and
/// ReLU then touches a quarter of the values. `norm` is `None` once folded into `conv` for
/// prediction (see [`SmallCnn::folded`]), and then flex runs the three as one pass
/// ([`fused`]); while training, flex runs batch norm → pool → ReLU as one operation
/// ([`norm_pool_relu`]). A model file names its tensors the same either way.
#[derive(Module, Debug)]
pub struct ConvBlock {
    conv: Conv2d,
    norm: Option<BatchNorm>,
    pool: MaxPool2d,
}

impl ConvBlock {
    fn new(channels_in: usize, channels_out: usize, device: &Device) -> ConvBlock {
        ConvBlock {
            conv: Conv2dConfig::new([channels_in, channels_out], [3, 3])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device),
            norm: Some(BatchNormConfig::new(channels_out).init(device)),
            pool: MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init(),
        }
    }

    fn forward(&self, input: Tensor<4>) -> Tensor<4> {
        if self.norm.is_none()
            && let Some(y) = fused::conv_pool_relu(&self.conv, &input)
        {
            return y;
        }
        let x = self.conv.forward(input);
        match &self.norm {
            Some(norm) => norm_pool_relu(norm, &self.pool, x),
            None => relu(self.pool.forward(x)),
        }
    }

    /// The block with its batch norm folded into the convolution ([`rewrite::fold_into`]).
    fn folded(self) -> ConvBlock {
        let Some(norm) = self.norm else {
            return self;
        };
        ConvBlock {
            conv: rewrite::fold_into(self.conv, norm),
            norm: None,
            pool: self.pool,
        }
    }
}

/// Four [`ConvBlock`]s ([`CHANNELS`] or [`WIDE_CHANNELS`]), global average pooling, dropout,
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
    /// A freshly initialised network of the standard width ([`CHANNELS`]); see
    /// [`with_channels`](Self::with_channels).
    pub fn new(classes: usize, dropout: f64, device: &Device) -> SmallCnn {
        SmallCnn::with_channels(CHANNELS, classes, dropout, device)
    }

    /// A freshly initialised network whose blocks have `channels`, for `classes` classes, that
    /// zeroes a `dropout` fraction (in `[0, 1)`) of the pooled features while training.
    pub fn with_channels(
        channels: [usize; 4],
        classes: usize,
        dropout: f64,
        device: &Device,
    ) -> SmallCnn {
        let mut channels_in = 3;
        let blocks = channels
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

    /// The network for prediction: each batch norm folded into its convolution (exactly the
    /// same function at inference, to float rounding; at 64 px a tenth of inference was
    /// batch norm's extra pass). Not for training: the folded network has no batch norm.
    pub fn folded(self) -> SmallCnn {
        SmallCnn {
            blocks: self.blocks.into_iter().map(ConvBlock::folded).collect(),
            ..self
        }
    }

    /// The same network with every logit multiplied by `factor` (the classifier's weights and
    /// bias scaled): the same answers, `factor` times as sure of them. For tests that need an
    /// over-confident model.
    #[doc(hidden)]
    pub fn with_logits_scaled(self, factor: f32) -> SmallCnn {
        SmallCnn {
            classifier: rewrite::scaled(self.classifier, factor),
            ..self
        }
    }

    /// Multiply-adds of one forward pass over one `image_size` px photo with blocks of
    /// `channels`: the four 3×3 convolutions (each block halves the side) and the classifier,
    /// 50.7 million at 64 px for [`CHANNELS`]. A training step costs about three times this
    /// (forward, and two gradients).
    pub fn multiply_adds(channels: [usize; 4], image_size: u32, classes: usize) -> u64 {
        let mut side = u64::from(image_size);
        let mut channels_in = 3u64;
        let mut total = 0;
        for &channels_out in &channels {
            total += side * side * channels_in * channels_out as u64 * 9;
            channels_in = channels_out as u64;
            side /= 2;
        }
        total + channels_in * classes as u64
    }

    /// Logits, `[batch, classes]`.
    pub fn forward(&self, images: Tensor<4>) -> Tensor<2> {
        let features = self.blocks.iter().fold(images, |x, block| block.forward(x));
        self.classify(features)
    }

    /// Logits, and each image's look from the same pass: the mean and the standard deviation
    /// over the picture of each channel of block [`LOOK_BLOCK`]'s output, `[batch, 2 ×
    /// channels]` (means first).
    pub fn forward_with_look(&self, images: Tensor<4>) -> (Tensor<2>, Tensor<2>) {
        let mut x = images;
        let mut look = None;
        for (index, block) in self.blocks.iter().enumerate() {
            x = block.forward(x);
            if index == LOOK_BLOCK {
                look = Some(channel_statistics(x.clone()));
            }
        }
        (self.classify(x), look.expect("SmallCnn has four blocks"))
    }

    /// The numbers in an image's look: twice block [`LOOK_BLOCK`]'s channels.
    pub fn look_size(channels: [usize; 4]) -> usize {
        2 * channels[LOOK_BLOCK]
    }

    fn classify(&self, features: Tensor<4>) -> Tensor<2> {
        let pooled = self.pool.forward(features).flatten::<2>(1, 3);
        self.classifier.forward(self.dropout.forward(pooled))
    }
}

/// `[batch, 2 × channels]`: each channel's mean over the picture, then its standard deviation.
fn channel_statistics(x: Tensor<4>) -> Tensor<2> {
    let [batch, channels, height, width] = x.dims();
    let flat = x.reshape([batch, channels, height * width]);
    let mean = flat.clone().mean_dim(2);
    // Centred first: E[x²] − E[x]² cancels badly in half precision.
    let variance = (flat - mean.clone()).powi_scalar(2).mean_dim(2);
    Tensor::cat(vec![mean, variance.sqrt()], 1).reshape([batch, 2 * channels])
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::Param;
    use burn::tensor::Distribution;

    /// `--network`'s help says 0.24 M weights.
    #[test]
    fn it_has_a_quarter_of_a_million_weights() {
        let convolutions =
            (27 * 32 + 32) + (288 * 64 + 64) + (576 * 128 + 128) + (1152 * 128 + 128);
        let norms = 2 * (32 + 64 + 128 + 128);
        let classifier = 128 * 2 + 2;
        // burn also counts batch norm's running mean and variance.
        let running = norms;
        assert_eq!(
            SmallCnn::new(2, 0.0, &Device::flex()).num_params(),
            convolutions + norms + classifier + running
        );
        assert_eq!(convolutions + norms + classifier, 241_794);
    }

    /// `--network`'s help says 0.96 M weights for the wide one, and its file stays under 4 MB.
    #[test]
    fn the_wide_one_has_four_times_the_weights() {
        let convolutions =
            (27 * 64 + 64) + (576 * 128 + 128) + (1152 * 256 + 256) + (2304 * 256 + 256);
        let norms = 2 * (64 + 128 + 256 + 256);
        let classifier = 256 * 2 + 2;
        let wide = SmallCnn::with_channels(WIDE_CHANNELS, 2, 0.0, &Device::flex());
        assert_eq!(wide.num_params(), convolutions + 2 * norms + classifier);
        assert_eq!(convolutions + norms + classifier, 962_818);
        // Four bytes a weight and a running statistic.
        assert!(wide.num_params() * 4 < 3_900_000);
        // 3.86× SmallCnn's multiply-adds at 80 px, the built-in model's size (the first
        // convolution, on three channels, only doubles).
        let ratio = SmallCnn::multiply_adds(WIDE_CHANNELS, 80, 2) as f64
            / SmallCnn::multiply_adds(CHANNELS, 80, 2) as f64;
        assert!((3.85..3.87).contains(&ratio), "{ratio}");
    }

    #[test]
    fn multiply_adds_count_each_convolution_at_its_side() {
        // 64²·3·32·9 + 32²·32·64·9 + 16²·64·128·9 + 8²·128·128·9 + 128·2.
        assert_eq!(SmallCnn::multiply_adds(CHANNELS, 64, 2), 50_725_120);
        // Each block halves the side (rounding down, as the pools do).
        assert_eq!(
            SmallCnn::multiply_adds(CHANNELS, 20, 2),
            400 * 27 * 32 + 100 * 32 * 64 * 9 + 25 * 64 * 128 * 9 + 4 * 128 * 128 * 9 + 256
        );
    }

    #[test]
    fn pooling_before_relu_gives_exactly_relu_then_pooling() {
        let device = Device::flex();
        let block = ConvBlock::new(3, 4, &device);
        let x = Tensor::<4>::random([2, 3, 9, 8], Distribution::Uniform(-1.0, 1.0), &device);
        let norm = block.norm.as_ref().unwrap();
        let conv = norm.forward(block.conv.forward(x.clone()));
        let reference = block.pool.forward(relu(conv));
        let got = block.forward(x).into_data();
        assert_eq!(got.shape(), &reference.shape());
        assert_eq!(
            got.try_to_vec::<f32>().unwrap(),
            reference.into_data().try_to_vec::<f32>().unwrap()
        );
    }

    /// The folded network computes what the unfolded one does at inference, with batch norm
    /// statistics and scales that are not the initial ones (which would make the fold an
    /// identity).
    #[test]
    fn folding_batch_norm_into_the_convolutions_changes_no_prediction() {
        let device = Device::flex();
        let mut model = SmallCnn::new(2, 0.0, &device);
        let random = |n: usize, low: f64, high: f64| {
            Tensor::<1>::random([n], Distribution::Uniform(low, high), &device)
        };
        for block in &mut model.blocks {
            let norm = block.norm.as_mut().unwrap();
            let n = norm.gamma.dims()[0];
            norm.gamma = Param::from_tensor(random(n, -2.0, 2.0));
            norm.beta = Param::from_tensor(random(n, -1.0, 1.0));
            norm.running_mean = burn::module::RunningState::new(random(n, -0.5, 0.5));
            norm.running_var = burn::module::RunningState::new(random(n, 0.1, 3.0));
        }
        let x = Tensor::<4>::random([3, 3, 20, 18], Distribution::Uniform(-1.0, 1.0), &device);
        let expected = model
            .forward(x.clone())
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        let folded = model.folded();
        assert!(folded.blocks.iter().all(|block| block.norm.is_none()));
        let got = folded.forward(x).into_data().try_to_vec::<f32>().unwrap();
        for (g, e) in got.iter().zip(&expected) {
            assert!(
                (g - e).abs() < 1e-4,
                "folded {got:?}, unfolded {expected:?}"
            );
        }
    }
}
