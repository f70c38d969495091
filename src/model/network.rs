//! Which network catdog trains (`--network`), and the network itself, whichever it is.

use burn::module::Module;
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use super::efficientnet::EfficientNetLite0;
use super::resnet::ResNet18;
use super::small_cnn::{CHANNELS, SmallCnn, WIDE_CHANNELS};

/// The networks catdog can train; SmallCnn is the default everywhere, its wide form the
/// built-in model's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NetworkKind {
    #[default]
    #[serde(rename = "small-cnn")]
    SmallCnn,
    /// SmallCnn with twice the channels, for accuracy.
    #[serde(rename = "small-cnn-wide")]
    SmallCnnWide,
    #[serde(rename = "resnet18")]
    ResNet18,
    /// Google's network for phones, which catdog can start from ImageNet's weights.
    #[serde(rename = "efficientnet-lite0")]
    EfficientNetLite0,
}

impl NetworkKind {
    pub const ALL: [NetworkKind; 4] = [
        NetworkKind::SmallCnn,
        NetworkKind::SmallCnnWide,
        NetworkKind::ResNet18,
        NetworkKind::EfficientNetLite0,
    ];

    /// The name on the command line and in `catdog.json`'s `architecture`.
    pub fn name(self) -> &'static str {
        match self {
            NetworkKind::SmallCnn => "small-cnn",
            NetworkKind::SmallCnnWide => "small-cnn-wide",
            NetworkKind::ResNet18 => "resnet18",
            NetworkKind::EfficientNetLite0 => "efficientnet-lite0",
        }
    }

    /// The network's name in prose ("SmallCnn", "ResNet-18").
    pub fn title(self) -> &'static str {
        match self {
            NetworkKind::SmallCnn => "SmallCnn",
            NetworkKind::SmallCnnWide => "wide SmallCnn",
            NetworkKind::ResNet18 => "ResNet-18",
            NetworkKind::EfficientNetLite0 => "EfficientNet-Lite0",
        }
    }

    /// The kind `catdog.json`'s `architecture` names, if catdog knows it.
    pub fn from_name(name: &str) -> Option<NetworkKind> {
        NetworkKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
    }

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            NetworkKind::SmallCnn => "catdog's own: four conv blocks, 0.24 M weights, 64 px",
            NetworkKind::SmallCnnWide => {
                "SmallCnn with twice the channels: 0.96 M weights, 3.9× the work, for accuracy"
            }
            NetworkKind::ResNet18 => {
                "The article's kind of network: ResNet-18, 11.2 M weights, 224 px, 36× the work"
            }
            NetworkKind::EfficientNetLite0 => {
                "Google's network for phones: EfficientNet-Lite0, 3.4 M weights, 224 px, 7.5× the work"
            }
        }
    }

    /// The image size it trains at without `--image-size`.
    pub fn default_image_size(self) -> u32 {
        match self {
            NetworkKind::SmallCnn | NetworkKind::SmallCnnWide => 64,
            NetworkKind::ResNet18 | NetworkKind::EfficientNetLite0 => 224,
        }
    }

    /// The smallest picture its poolings leave a pixel of.
    pub fn smallest_image_size(self) -> u32 {
        match self {
            NetworkKind::SmallCnn | NetworkKind::SmallCnnWide => 16,
            NetworkKind::ResNet18 | NetworkKind::EfficientNetLite0 => 32,
        }
    }

    /// Multiply-adds of one forward pass over one `image_size` px photo.
    pub fn multiply_adds(self, image_size: u32, classes: usize) -> u64 {
        match self {
            NetworkKind::SmallCnn => SmallCnn::multiply_adds(CHANNELS, image_size, classes),
            NetworkKind::SmallCnnWide => {
                SmallCnn::multiply_adds(WIDE_CHANNELS, image_size, classes)
            }
            NetworkKind::ResNet18 => ResNet18::multiply_adds(image_size, classes),
            NetworkKind::EfficientNetLite0 => EfficientNetLite0::multiply_adds(image_size, classes),
        }
    }
}

impl NetworkKind {
    /// The numbers in an image's look ([`Network::forward_with_look`]); `None` for ResNet-18
    /// and EfficientNet-Lite0, which have none.
    pub fn look_size(self) -> Option<usize> {
        match self {
            NetworkKind::SmallCnn => Some(SmallCnn::look_size(CHANNELS)),
            NetworkKind::SmallCnnWide => Some(SmallCnn::look_size(WIDE_CHANNELS)),
            NetworkKind::ResNet18 | NetworkKind::EfficientNetLite0 => None,
        }
    }
}

/// A network of any kind. Its tensors are saved under the kind's own names (without the
/// variant's), see `saved.rs`.
// ResNet-18's 1 KB of handles beside SmallCnn's 0.3 KB: moved once a step at most, so not
// worth a Box (which burn's derive would have to see through).
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum Network {
    SmallCnn(SmallCnn),
    SmallCnnWide(SmallCnn),
    ResNet18(ResNet18),
    EfficientNetLite0(EfficientNetLite0),
}

impl Network {
    /// A freshly initialised network of `kind` for `classes` classes that zeroes a `dropout`
    /// fraction (in `[0, 1)`) of the pooled features while training.
    pub fn new(kind: NetworkKind, classes: usize, dropout: f64, device: &Device) -> Network {
        match kind {
            NetworkKind::SmallCnn => Network::SmallCnn(SmallCnn::new(classes, dropout, device)),
            NetworkKind::SmallCnnWide => Network::SmallCnnWide(SmallCnn::with_channels(
                WIDE_CHANNELS,
                classes,
                dropout,
                device,
            )),
            NetworkKind::ResNet18 => Network::ResNet18(ResNet18::new(classes, dropout, device)),
            NetworkKind::EfficientNetLite0 => {
                Network::EfficientNetLite0(EfficientNetLite0::new(classes, dropout, device))
            }
        }
    }

    pub fn kind(&self) -> NetworkKind {
        match self {
            Network::SmallCnn(_) => NetworkKind::SmallCnn,
            Network::SmallCnnWide(_) => NetworkKind::SmallCnnWide,
            Network::ResNet18(_) => NetworkKind::ResNet18,
            Network::EfficientNetLite0(_) => NetworkKind::EfficientNetLite0,
        }
    }

    /// Logits, `[batch, classes]`.
    pub fn forward(&self, images: Tensor<4>) -> Tensor<2> {
        match self {
            Network::SmallCnn(net) | Network::SmallCnnWide(net) => net.forward(images),
            Network::ResNet18(net) => net.forward(images),
            Network::EfficientNetLite0(net) => net.forward(images),
        }
    }

    /// Logits, and for a SmallCnn each image's look ([`SmallCnn::forward_with_look`]) from the
    /// same pass; ResNet-18 has none.
    pub fn forward_with_look(&self, images: Tensor<4>) -> (Tensor<2>, Option<Tensor<2>>) {
        match self {
            Network::SmallCnn(net) | Network::SmallCnnWide(net) => {
                let (logits, look) = net.forward_with_look(images);
                (logits, Some(look))
            }
            Network::ResNet18(net) => (net.forward(images), None),
            Network::EfficientNetLite0(net) => (net.forward(images), None),
        }
    }

    /// The pooled features the classifier reads, `[batch, features]`, for the networks that
    /// can start from ImageNet's weights; `None` for the others.
    pub fn features(&self, images: Tensor<4>) -> Option<Tensor<2>> {
        match self {
            Network::EfficientNetLite0(net) => Some(net.features(images)),
            _ => None,
        }
    }

    /// The same network with its classifier's weights (`[features, classes]`) and bias
    /// replaced, for the networks that have a [`classifier`](Self::classifier); the others as
    /// they are.
    pub fn with_classifier(self, weight: Tensor<2>, bias: Tensor<1>) -> Network {
        match self {
            Network::EfficientNetLite0(net) => {
                Network::EfficientNetLite0(net.with_classifier(weight, bias))
            }
            other => other,
        }
    }

    /// The layer that turns features into the classes' logits, for networks that may start
    /// from ImageNet's weights with a classifier of their own.
    pub fn classifier(&self) -> Option<&burn::nn::Linear> {
        match self {
            Network::EfficientNetLite0(net) => Some(net.classifier()),
            _ => None,
        }
    }

    /// The network for prediction, its batch norms folded into the convolutions.
    pub fn folded(self) -> Network {
        match self {
            Network::SmallCnn(net) => Network::SmallCnn(net.folded()),
            Network::SmallCnnWide(net) => Network::SmallCnnWide(net.folded()),
            Network::ResNet18(net) => Network::ResNet18(net.folded()),
            Network::EfficientNetLite0(net) => Network::EfficientNetLite0(net.folded()),
        }
    }

    /// The same network with its batch norms' statistics held while training
    /// ([`EfficientNetLite0::with_norms_held`]); the other networks, which never start from
    /// ImageNet's weights, as they are.
    pub fn with_norms_held(self) -> Network {
        match self {
            Network::EfficientNetLite0(net) => Network::EfficientNetLite0(net.with_norms_held()),
            other => other,
        }
    }

    /// The same network with every logit multiplied by `factor`: the same answers, `factor`
    /// times as sure of them. For tests that need an over-confident model.
    #[doc(hidden)]
    pub fn with_logits_scaled(self, factor: f32) -> Network {
        match self {
            Network::SmallCnn(net) => Network::SmallCnn(net.with_logits_scaled(factor)),
            Network::SmallCnnWide(net) => Network::SmallCnnWide(net.with_logits_scaled(factor)),
            Network::ResNet18(net) => Network::ResNet18(net.with_logits_scaled(factor)),
            Network::EfficientNetLite0(net) => {
                Network::EfficientNetLite0(net.with_logits_scaled(factor))
            }
        }
    }
}
