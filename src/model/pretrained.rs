//! What a network can start from instead of random weights: EfficientNet-Lite0's ImageNet
//! weights (`models/efficientnet-lite0-imagenet/`, compiled in), which have seen a million
//! photos of a thousand kinds of things. A run starting from them keeps everything but the
//! classifier, which is new for the run's own classes.

use anyhow::{Result, anyhow, ensure};
use burn::store::ModuleSnapshot;
use burn::tensor::Device;

use super::saved::reading_store;
use super::{Network, NetworkKind};
use crate::data::Normalization;

const IMAGENET_WEIGHTS: &[u8] = include_bytes!(
    "../../models/efficientnet-lite0-imagenet/efficientnet-lite0-imagenet.safetensors"
);
const IMAGENET_CLASSES: &str =
    include_str!("../../models/efficientnet-lite0-imagenet/imagenet-classes.txt");

/// The pixels the ImageNet weights expect: each channel scaled to −1…1 (TensorFlow Lite's
/// convention, which they were trained with).
pub const IMAGENET_NORMALIZATION: Normalization = Normalization {
    mean: [0.5; 3],
    std: [0.5; 3],
};

/// Whether catdog has ImageNet weights for `kind`.
pub fn has_imagenet_weights(kind: NetworkKind) -> bool {
    kind == NetworkKind::EfficientNetLite0
}

/// ImageNet's 1,000 class names, in the order of its classifier's logits.
pub fn imagenet_classes() -> Vec<&'static str> {
    IMAGENET_CLASSES.lines().collect()
}

/// `network` with ImageNet's weights everywhere but its classifier, which keeps its own
/// (`keep_classifier`), or ImageNet's 1,000-class one too (for a network of 1,000 classes).
pub fn with_imagenet_weights(
    mut network: Network,
    keep_classifier: bool,
    device: &Device,
) -> Result<Network> {
    let kind = network.kind();
    ensure!(
        has_imagenet_weights(kind),
        "catdog has ImageNet weights for efficientnet-lite0 only, not for {}",
        kind.name()
    );
    // The PyTorch port's names, as a saved EfficientNet-Lite0 model has them.
    let mut store = reading_store(kind, IMAGENET_WEIGHTS.to_vec(), device).allow_partial(true);
    if keep_classifier {
        store = store.with_regex(r"^(conv_stem|bn0|blocks|conv_head|bn1)\.");
    }
    let applied = match &mut network {
        Network::EfficientNetLite0(net) => net.load_from(&mut store),
        _ => unreachable!("only EfficientNet-Lite0 has ImageNet weights"),
    }
    .map_err(|err| anyhow!("catdog's ImageNet weights do not load: {err}"))?;
    let classifier = ["fc.weight", "fc.bias"];
    let missing: Vec<&String> = applied
        .missing
        .iter()
        .map(|(path, _)| path)
        .filter(|path| !(keep_classifier && classifier.contains(&path.as_str())))
        .collect();
    ensure!(
        applied.errors.is_empty() && missing.is_empty(),
        "catdog's ImageNet weights do not fit its EfficientNet-Lite0: {applied}"
    );
    Ok(network)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{SAMPLE_PHOTOS, decode_photo_bytes, images_on};

    /// The weights in place: ImageNet's own network, squashing the built-in sample photos to
    /// 224 px as catdog does, puts a domestic cat class (ImageNet's 281–285) in its five most
    /// probable for the cat, and a dog breed (151–268) for the dog.
    #[test]
    fn imagenets_network_knows_the_sample_cat_and_dog() {
        let device = Device::flex();
        let network = Network::new(NetworkKind::EfficientNetLite0, 1000, 0.0, &device);
        let network = with_imagenet_weights(network, false, &device)
            .unwrap()
            .folded();
        assert_eq!(imagenet_classes().len(), 1000);
        assert_eq!(imagenet_classes()[281], "tabby");
        for ((name, photo), classes) in SAMPLE_PHOTOS.into_iter().zip([281..=285, 151..=268]) {
            let pixels = decode_photo_bytes(photo, 224, name).unwrap();
            let input = IMAGENET_NORMALIZATION.to_chw([pixels.as_slice()].into_iter(), 224);
            let logits = network.forward(images_on(input, &device));
            let values: Vec<f32> = logits.into_data().iter::<f32>().collect();
            let mut order: Vec<usize> = (0..values.len()).collect();
            order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
            assert!(
                order[..5].iter().any(|class| classes.contains(class)),
                "top five: {:?}",
                order[..5]
                    .iter()
                    .map(|&c| imagenet_classes()[c])
                    .collect::<Vec<_>>()
            );
        }
    }

    /// A run's network keeps its own classifier; everything else is ImageNet's.
    #[test]
    fn a_runs_network_keeps_its_classifier() {
        let device = Device::flex();
        let fresh = Network::new(NetworkKind::EfficientNetLite0, 2, 0.0, &device);
        let classifier = |network: &Network| match network {
            Network::EfficientNetLite0(net) => net.classifier_weights(),
            _ => unreachable!(),
        };
        let before = classifier(&fresh);
        let started = with_imagenet_weights(fresh, true, &device).unwrap();
        assert_eq!(classifier(&started), before);
        let err = with_imagenet_weights(
            Network::new(NetworkKind::SmallCnn, 2, 0.0, &device),
            true,
            &device,
        )
        .unwrap_err();
        assert!(
            format!("{err}").contains("efficientnet-lite0 only"),
            "{err}"
        );
    }
}
