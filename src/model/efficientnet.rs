//! EfficientNet-Lite0 (Tan and Le 2019, the "Lite" form Google made for phones): a 3×3/2 stem,
//! sixteen mobile inverted bottleneck blocks ([`MbConv`]: a 1×1 expansion, a depthwise k×k
//! convolution, a 1×1 projection, and the shortcut where the shape stays), a 1×1 head to 1,280
//! channels, global average pooling and a linear layer. Lite means ReLU6 everywhere, no
//! squeeze-and-excitation, and a stem and head of fixed width. Its convolutions pad as
//! TensorFlow's "same" (the extra pixel of a stride-2 convolution goes right and bottom), and
//! its batch norms have an epsilon of 0.001, as the ImageNet weights were trained with. Its
//! fields are named after the PyTorch port's (`_conv_stem`, `_blocks.N._depthwise_conv`, …,
//! without the underscores, which `saved.rs` adds), so that a saved model's tensors are that
//! port's.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig};
use burn::nn::{
    BatchNorm, BatchNormConfig, Dropout, DropoutConfig, Linear, LinearConfig, PaddingConfig2d,
};
use burn::tensor::{Device, Tensor};

use super::activation::Then;
use super::fused::conv_norm_then;
use super::rewrite::{self, fold};

/// The blocks' stages: repeats, kernel, stride of the first, expansion, channels in and out.
const STAGES: [(usize, usize, usize, usize, usize, usize); 7] = [
    (1, 3, 1, 1, 32, 16),
    (2, 3, 2, 6, 16, 24),
    (2, 5, 2, 6, 24, 40),
    (3, 3, 2, 6, 40, 80),
    (3, 5, 1, 6, 80, 112),
    (4, 5, 2, 6, 112, 192),
    (1, 3, 1, 6, 192, 320),
];
/// Channels out of the stem, and of the head.
const STEM: usize = 32;
const HEAD: usize = 1280;

/// A bias-free convolution padded as TensorFlow's "same", over `groups` groups of channels.
fn conv(
    channels: [usize; 2],
    kernel: usize,
    stride: usize,
    groups: usize,
    device: &Device,
) -> Conv2d {
    Conv2dConfig::new(channels, [kernel, kernel])
        .with_stride([stride, stride])
        .with_padding(PaddingConfig2d::Same)
        .with_groups(groups)
        .with_bias(false)
        .init(device)
}

/// Batch norm as TensorFlow's, which the weights come from: epsilon 0.001, and running
/// statistics that move 1 % a step.
fn norm(channels: usize, device: &Device) -> Option<BatchNorm> {
    Some(
        BatchNormConfig::new(channels)
            .with_epsilon(1e-3)
            .with_momentum(0.01)
            .init(device),
    )
}

/// A mobile inverted bottleneck: widen with a 1×1 convolution (absent where the expansion
/// is 1), filter each channel alone with a k×k depthwise convolution, narrow with a 1×1
/// projection; the input is added back where the shape stays.
#[derive(Module, Debug)]
pub struct MbConv {
    expand_conv: Option<Conv2d>,
    bn0: Option<BatchNorm>,
    depthwise_conv: Conv2d,
    bn1: Option<BatchNorm>,
    project_conv: Conv2d,
    bn2: Option<BatchNorm>,
}

impl MbConv {
    fn new(
        [channels_in, channels_out]: [usize; 2],
        kernel: usize,
        stride: usize,
        expansion: usize,
        device: &Device,
    ) -> MbConv {
        let wide = channels_in * expansion;
        let expands = expansion != 1;
        MbConv {
            expand_conv: expands.then(|| conv([channels_in, wide], 1, 1, 1, device)),
            bn0: if expands { norm(wide, device) } else { None },
            depthwise_conv: conv([wide, wide], kernel, stride, wide, device),
            bn1: norm(wide, device),
            project_conv: conv([wide, channels_out], 1, 1, 1, device),
            bn2: norm(channels_out, device),
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let input_dims = x.dims();
        let y = match &self.expand_conv {
            Some(expand) => conv_norm_then(expand, &self.bn0, x.clone(), None, Then::Relu6),
            None => x.clone(),
        };
        let y = conv_norm_then(&self.depthwise_conv, &self.bn1, y, None, Then::Relu6);
        // Stride 1 and as many channels out as in: the shortcut (the projection is 1×1).
        let [_, _, height, width] = y.dims();
        let channels_out = self.project_conv.weight.dims()[0];
        let shortcut = ([channels_out, height, width] == input_dims[1..]).then_some(x);
        conv_norm_then(&self.project_conv, &self.bn2, y, shortcut, Then::Nothing)
    }

    fn folded(self) -> MbConv {
        let (expand_conv, bn0) = match self.expand_conv {
            Some(conv) => {
                let (conv, norm) = fold(conv, self.bn0);
                (Some(conv), norm)
            }
            None => (None, self.bn0),
        };
        let (depthwise_conv, bn1) = fold(self.depthwise_conv, self.bn1);
        let (project_conv, bn2) = fold(self.project_conv, self.bn2);
        MbConv {
            expand_conv,
            bn0,
            depthwise_conv,
            bn1,
            project_conv,
            bn2,
        }
    }
}

/// EfficientNet-Lite0 for `classes` classes; takes `[batch, 3, size, size]` images of at
/// least 32 px (five halvings leave one pixel).
#[derive(Module, Debug)]
pub struct EfficientNetLite0 {
    conv_stem: Conv2d,
    bn0: Option<BatchNorm>,
    blocks: Vec<MbConv>,
    conv_head: Conv2d,
    bn1: Option<BatchNorm>,
    avgpool: AdaptiveAvgPool2d,
    /// Active only while training; no weights.
    dropout: Dropout,
    fc: Linear,
}

impl EfficientNetLite0 {
    /// A freshly initialised network that zeroes a `dropout` fraction of the pooled features
    /// while training.
    pub fn new(classes: usize, dropout: f64, device: &Device) -> EfficientNetLite0 {
        let mut blocks = Vec::new();
        for (repeats, kernel, stride, expansion, channels_in, channels_out) in STAGES {
            blocks.push(MbConv::new(
                [channels_in, channels_out],
                kernel,
                stride,
                expansion,
                device,
            ));
            for _ in 1..repeats {
                blocks.push(MbConv::new(
                    [channels_out, channels_out],
                    kernel,
                    1,
                    expansion,
                    device,
                ));
            }
        }
        let last = STAGES[STAGES.len() - 1].5;
        EfficientNetLite0 {
            conv_stem: conv([3, STEM], 3, 2, 1, device),
            bn0: norm(STEM, device),
            blocks,
            conv_head: conv([last, HEAD], 1, 1, 1, device),
            bn1: norm(HEAD, device),
            avgpool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            dropout: DropoutConfig::new(dropout).init(),
            fc: LinearConfig::new(HEAD, classes).init(device),
        }
    }

    /// The pooled features, `[batch, 1280]`: what the classifier reads.
    pub fn features(&self, images: Tensor<4>) -> Tensor<2> {
        let x = conv_norm_then(&self.conv_stem, &self.bn0, images, None, Then::Relu6);
        let x = self.blocks.iter().fold(x, |x, block| block.forward(x));
        let x = conv_norm_then(&self.conv_head, &self.bn1, x, None, Then::Relu6);
        self.avgpool.forward(x).flatten::<2>(1, 3)
    }

    /// Logits, `[batch, classes]`.
    pub fn forward(&self, images: Tensor<4>) -> Tensor<2> {
        let features = self.features(images);
        self.fc.forward(self.dropout.forward(features))
    }

    /// Every batch norm folded into the convolution before it, for prediction.
    pub fn folded(self) -> EfficientNetLite0 {
        let (conv_stem, bn0) = fold(self.conv_stem, self.bn0);
        let (conv_head, bn1) = fold(self.conv_head, self.bn1);
        EfficientNetLite0 {
            conv_stem,
            bn0,
            blocks: self.blocks.into_iter().map(MbConv::folded).collect(),
            conv_head,
            bn1,
            ..self
        }
    }

    /// The same network with every batch norm normalising by its running statistics while
    /// training too, and leaving them as they are (ImageNet's, for a network started from its
    /// weights); their scales and shifts still learn. burn keeps this as a flag outside the
    /// saved weights: a network read back from a checkpoint is held again.
    pub fn with_norms_held(self) -> EfficientNetLite0 {
        fn hold(norm: Option<BatchNorm>) -> Option<BatchNorm> {
            norm.map(|norm| BatchNorm {
                training: norm.training.clone().with_value(false),
                ..norm
            })
        }
        EfficientNetLite0 {
            bn0: hold(self.bn0),
            blocks: self
                .blocks
                .into_iter()
                .map(|block| MbConv {
                    bn0: hold(block.bn0),
                    bn1: hold(block.bn1),
                    bn2: hold(block.bn2),
                    ..block
                })
                .collect(),
            bn1: hold(self.bn1),
            ..self
        }
    }

    /// The same network with every logit multiplied by `factor` (see
    /// `SmallCnn::with_logits_scaled`).
    pub fn with_logits_scaled(self, factor: f32) -> EfficientNetLite0 {
        EfficientNetLite0 {
            fc: rewrite::scaled(self.fc, factor),
            ..self
        }
    }

    /// The same network with its classifier's weights (`[1280, classes]`) and bias replaced.
    pub fn with_classifier(self, weight: Tensor<2>, bias: Tensor<1>) -> EfficientNetLite0 {
        EfficientNetLite0 {
            fc: rewrite::replaced(self.fc, weight, bias),
            ..self
        }
    }

    /// The linear layer from the pooled features to the classes' logits.
    pub fn classifier(&self) -> &Linear {
        &self.fc
    }

    /// The classifier's weights, read back.
    #[cfg(test)]
    pub(crate) fn classifier_weights(&self) -> Vec<f32> {
        self.fc.weight.val().into_data().iter::<f32>().collect()
    }

    /// Multiply-adds of one forward pass over one `image_size` px photo: every convolution at
    /// its output's side, and the classifier; 0.39 billion at 224 px.
    pub fn multiply_adds(image_size: u32, classes: usize) -> u64 {
        // "Same" padding: ⌈side / stride⌉.
        let out = |side: u64, stride: u64| side.div_ceil(stride);
        let mut side = out(u64::from(image_size), 2);
        let mut total = side * side * 3 * STEM as u64 * 9;
        for (repeats, kernel, stride, expansion, channels_in, channels_out) in STAGES {
            for repeat in 0..repeats {
                let channels_in = if repeat == 0 {
                    channels_in
                } else {
                    channels_out
                } as u64;
                let wide = channels_in * expansion as u64;
                if expansion != 1 {
                    total += side * side * channels_in * wide;
                }
                side = out(side, if repeat == 0 { stride as u64 } else { 1 });
                let pixels = side * side;
                total += pixels * wide * (kernel * kernel) as u64;
                total += pixels * wide * channels_out as u64;
            }
        }
        let last = STAGES[STAGES.len() - 1].5 as u64;
        total + side * side * last * HEAD as u64 + HEAD as u64 * classes as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::Param;
    use burn::tensor::Distribution;

    #[test]
    fn it_has_efficientnet_lite0s_parameters() {
        let device = Device::flex();
        // The ImageNet weights hold 4,694,073 numbers (1,000 classes, with batch norm's
        // running mean and variance, which burn counts too, and PyTorch's 49 batch-norm step
        // counters, which it does not): less the classifier's 1,281,000, plus 1,280·2 + 2.
        let expected = 4_694_073 - 49 - 1_281_000 + 1_280 * 2 + 2;
        assert_eq!(
            EfficientNetLite0::new(2, 0.0, &device).num_params(),
            expected
        );
        let giga = EfficientNetLite0::multiply_adds(224, 1000) as f64 / 1e9;
        assert!((0.38..0.41).contains(&giga), "{giga}");
    }

    /// Held batch norms normalise by their running statistics on a training device too (the
    /// answers of the network with them folded in) and leave them as they are; free ones
    /// normalise by the batch's and update them.
    #[test]
    fn held_batch_norms_normalise_by_their_running_statistics_while_training() {
        let predicting = Device::flex();
        let on_cpu = EfficientNetLite0::new(2, 0.0, &predicting);
        let x = Tensor::<4>::random(
            [4, 3, 32, 32],
            Distribution::Uniform(-1.0, 1.0),
            &predicting,
        );
        let values = |t: Tensor<2>| t.into_data().try_to_vec::<f32>().unwrap();
        let largest_difference = |a: &[f32], b: &[f32]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0f32, f32::max)
        };
        let folded = values(on_cpu.clone().folded().forward(x.clone()));
        let device = predicting.autodiff();
        let model = on_cpu.to_device(&device);
        let x = Tensor::<4>::from_data(x.into_data(), &device);
        assert!(x.device().is_autodiff());
        let held = model.clone().with_norms_held();
        let running_mean = |model: &EfficientNetLite0| {
            let norm = model.bn0.as_ref().unwrap();
            norm.running_mean
                .value_sync()
                .abs()
                .max()
                .into_scalar::<f32>()
        };
        let held_answers = values(held.forward(x.clone()));
        assert!(largest_difference(&held_answers, &folded) < 1e-4);
        assert_eq!(running_mean(&held), 0.0, "held statistics moved");
        // (The two share their running statistics, as burn's clones do.)
        let free_answers = values(model.forward(x.clone()));
        assert!(largest_difference(&free_answers, &folded) > 1e-3);
        assert!(running_mean(&model) > 0.0, "free statistics did not move");
    }

    #[test]
    fn odd_sizes_and_folding_give_the_same_answers() {
        let device = Device::flex();
        let mut model = EfficientNetLite0::new(2, 0.0, &device);
        let random = |n: usize, low: f64, high: f64| {
            Tensor::<1>::random([n], Distribution::Uniform(low, high), &device)
        };
        let vary = |norm: &mut Option<BatchNorm>| {
            let norm = norm.as_mut().unwrap();
            let n = norm.gamma.dims()[0];
            norm.gamma = Param::from_tensor(random(n, 0.5, 1.5));
            norm.beta = Param::from_tensor(random(n, -0.2, 0.2));
            norm.running_mean = burn::module::RunningState::new(random(n, -0.2, 0.2));
            norm.running_var = burn::module::RunningState::new(random(n, 0.5, 2.0));
        };
        vary(&mut model.bn0);
        for block in model.blocks.iter_mut().take(4) {
            if block.expand_conv.is_some() {
                vary(&mut block.bn0);
            }
            vary(&mut block.bn1);
            vary(&mut block.bn2);
        }
        let x = Tensor::<4>::random([2, 3, 37, 33], Distribution::Uniform(-1.0, 1.0), &device);
        let expected = model.forward(x.clone()).into_data();
        assert_eq!(expected.shape(), &[2, 2].into());
        let expected = expected.try_to_vec::<f32>().unwrap();
        let got = model.folded().forward(x).into_data();
        for (g, e) in got.try_to_vec::<f32>().unwrap().iter().zip(&expected) {
            assert!((g - e).abs() < 1e-3 * e.abs().max(1.0), "{g} against {e}");
        }
    }
}
