//! ResNet-18 (He et al. 2015), the article's kind of network, laid out as torchvision's
//! `resnet18`: a 7×7/2 stem, a 3×3/2 max-pool, four stages of two [`BasicBlock`]s (64, 128,
//! 256 and 512 channels, each stage after the first halving the side with a 3×3/2 convolution
//! and a 1×1/2 projection shortcut), global average pooling and a linear layer. Its fields are
//! named as torchvision's, so that a saved model's tensors are torchvision's (see
//! `saved.rs`, which renames `downsample.conv`/`norm` to `downsample.0`/`1`).

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{
    BatchNorm, BatchNormConfig, Dropout, DropoutConfig, Initializer, Linear, LinearConfig,
    PaddingConfig2d,
};
use burn::tensor::{Device, Tensor};

use super::activation::Then;
use super::fused::conv_norm_then;
use super::norm_pool_relu::norm_relu_pool;
use super::rewrite::{self, conv_norm, fold};

/// Channels of the four stages.
const STAGES: [usize; 4] = [64, 128, 256, 512];

/// A bias-free convolution as torchvision initialises ResNet's (Kaiming normal, fan out, for
/// ReLU).
fn conv(channels: [usize; 2], kernel: usize, stride: usize, device: &Device) -> Conv2d {
    let pad = kernel / 2;
    Conv2dConfig::new(channels, [kernel, kernel])
        .with_stride([stride, stride])
        .with_padding(PaddingConfig2d::Explicit(pad, pad, pad, pad))
        .with_bias(false)
        .with_initializer(Initializer::KaimingNormal {
            gain: std::f64::consts::SQRT_2,
            fan_out_only: true,
        })
        .init(device)
}

fn norm(channels: usize, device: &Device) -> Option<BatchNorm> {
    Some(BatchNormConfig::new(channels).init(device))
}

/// The 1×1/2 convolution and batch norm that bring a stage's input to its output's shape.
#[derive(Module, Debug)]
pub struct Downsample {
    conv: Conv2d,
    norm: Option<BatchNorm>,
}

/// Two 3×3 convolutions with batch norm, and the shortcut added before the last ReLU.
#[derive(Module, Debug)]
pub struct BasicBlock {
    conv1: Conv2d,
    bn1: Option<BatchNorm>,
    conv2: Conv2d,
    bn2: Option<BatchNorm>,
    downsample: Option<Downsample>,
}

impl BasicBlock {
    fn new(channels_in: usize, channels_out: usize, stride: usize, device: &Device) -> Self {
        let downsample = (stride != 1 || channels_in != channels_out).then(|| Downsample {
            conv: conv([channels_in, channels_out], 1, stride, device),
            norm: norm(channels_out, device),
        });
        BasicBlock {
            conv1: conv([channels_in, channels_out], 3, stride, device),
            bn1: norm(channels_out, device),
            conv2: conv([channels_out, channels_out], 3, 1, device),
            bn2: norm(channels_out, device),
            downsample,
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let shortcut = match &self.downsample {
            Some(down) => conv_norm(&down.conv, &down.norm, x.clone()),
            None => x.clone(),
        };
        let y = conv_norm_then(&self.conv1, &self.bn1, x, None, Then::Relu);
        conv_norm_then(&self.conv2, &self.bn2, y, Some(shortcut), Then::Relu)
    }

    fn folded(self) -> Self {
        let (conv1, bn1) = fold(self.conv1, self.bn1);
        let (conv2, bn2) = fold(self.conv2, self.bn2);
        let downsample = self.downsample.map(|down| {
            let (conv, norm) = fold(down.conv, down.norm);
            Downsample { conv, norm }
        });
        BasicBlock {
            conv1,
            bn1,
            conv2,
            bn2,
            downsample,
        }
    }
}

/// ResNet-18 for `classes` classes; takes `[batch, 3, size, size]` images of at least 32 px
/// (five halvings leave one pixel).
#[derive(Module, Debug)]
pub struct ResNet18 {
    conv1: Conv2d,
    bn1: Option<BatchNorm>,
    maxpool: MaxPool2d,
    layer1: Vec<BasicBlock>,
    layer2: Vec<BasicBlock>,
    layer3: Vec<BasicBlock>,
    layer4: Vec<BasicBlock>,
    avgpool: AdaptiveAvgPool2d,
    /// Active only while training (`--dropout`, 0 by default as in torchvision); no weights.
    dropout: Dropout,
    fc: Linear,
}

impl ResNet18 {
    /// A freshly initialised network that zeroes a `dropout` fraction of the pooled features
    /// while training.
    pub fn new(classes: usize, dropout: f64, device: &Device) -> ResNet18 {
        let mut channels_in = STAGES[0];
        let mut stage = |channels_out: usize, stride: usize| {
            let first = BasicBlock::new(channels_in, channels_out, stride, device);
            channels_in = channels_out;
            vec![
                first,
                BasicBlock::new(channels_out, channels_out, 1, device),
            ]
        };
        let (layer1, layer2) = (stage(STAGES[0], 1), stage(STAGES[1], 2));
        let (layer3, layer4) = (stage(STAGES[2], 2), stage(STAGES[3], 2));
        ResNet18 {
            conv1: conv([3, STAGES[0]], 7, 2, device),
            bn1: norm(STAGES[0], device),
            maxpool: MaxPool2dConfig::new([3, 3])
                .with_strides([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(),
            layer1,
            layer2,
            layer3,
            layer4,
            avgpool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            dropout: DropoutConfig::new(dropout).init(),
            fc: LinearConfig::new(STAGES[3], classes).init(device),
        }
    }

    /// Logits, `[batch, classes]`.
    pub fn forward(&self, images: Tensor<4>) -> Tensor<2> {
        let x = match &self.bn1 {
            Some(norm) => norm_relu_pool(norm, &self.maxpool, self.conv1.forward(images)),
            None => {
                let x = conv_norm_then(&self.conv1, &None, images, None, Then::Relu);
                self.maxpool.forward(x)
            }
        };
        let x = [&self.layer1, &self.layer2, &self.layer3, &self.layer4]
            .into_iter()
            .flatten()
            .fold(x, |x, block| block.forward(x));
        let pooled = self.avgpool.forward(x).flatten::<2>(1, 3);
        self.fc.forward(self.dropout.forward(pooled))
    }

    /// Every batch norm folded into the convolution before it, for prediction.
    pub fn folded(self) -> ResNet18 {
        let (conv1, bn1) = fold(self.conv1, self.bn1);
        let fold_all = |blocks: Vec<BasicBlock>| -> Vec<BasicBlock> {
            blocks.into_iter().map(BasicBlock::folded).collect()
        };
        ResNet18 {
            conv1,
            bn1,
            layer1: fold_all(self.layer1),
            layer2: fold_all(self.layer2),
            layer3: fold_all(self.layer3),
            layer4: fold_all(self.layer4),
            ..self
        }
    }

    /// The same network with every logit multiplied by `factor` (see
    /// `SmallCnn::with_logits_scaled`).
    pub fn with_logits_scaled(self, factor: f32) -> ResNet18 {
        ResNet18 {
            fc: rewrite::scaled(self.fc, factor),
            ..self
        }
    }

    /// Multiply-adds of one forward pass over one `image_size` px photo: every convolution
    /// at its output's side, and the classifier; 1.81 billion at 224 px, as torchvision gives.
    pub fn multiply_adds(image_size: u32, classes: usize) -> u64 {
        // A k×k convolution of stride s with padding k/2 gives ⌊(side − 1)/s⌋ + 1.
        let out = |side: u64, stride: u64| (side - 1) / stride + 1;
        let mut side = out(u64::from(image_size), 2);
        let mut total = side * side * 3 * 64 * 49;
        side = out(side, 2); // the max-pool
        let mut channels_in = 64u64;
        for (i, &channels) in STAGES.iter().enumerate() {
            let channels = channels as u64;
            let stride = if i == 0 { 1 } else { 2 };
            side = out(side, stride);
            let pixels = side * side;
            total += pixels * channels_in * channels * 9 + pixels * channels * channels * 9;
            if channels_in != channels {
                total += pixels * channels_in * channels;
            }
            total += 2 * pixels * channels * channels * 9; // the stage's second block
            channels_in = channels;
        }
        total + channels_in * classes as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::Param;
    use burn::tensor::Distribution;

    #[test]
    fn it_has_torchvision_resnet18s_parameters_and_work() {
        let device = Device::flex();
        // torchvision's resnet18 has 11,689,512 parameters with 1,000 classes: less its
        // 513,000 of the classifier, plus 512·2 + 2 for two. burn also counts batch norm's
        // running mean and variance (torchvision's buffers): two per channel of its 20 batch
        // norms, 4,800 channels.
        let parameters = 11_689_512 - 513_000 + 512 * 2 + 2;
        let running = 2 * 4_800;
        assert_eq!(
            ResNet18::new(2, 0.0, &device).num_params(),
            parameters + running
        );
        // 1.81 billion multiply-adds at 224 px with 1,000 classes, as torchvision's
        // documentation gives (1.81 GFLOPS).
        let giga = ResNet18::multiply_adds(224, 1000) as f64 / 1e9;
        assert!((giga - 1.814).abs() < 0.001, "{giga}");
    }

    #[test]
    fn odd_sizes_and_folding_give_the_same_answers() {
        let device = Device::flex();
        let mut model = ResNet18::new(2, 0.0, &device);
        // Batch norm statistics that are not the initial ones, so that folding is no identity.
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
        vary(&mut model.bn1);
        for block in model.layer2.iter_mut() {
            vary(&mut block.bn1);
            vary(&mut block.bn2);
            if let Some(down) = &mut block.downsample {
                vary(&mut down.norm);
            }
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
