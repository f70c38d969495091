//! What a network can start from instead of random weights: EfficientNet-Lite0's ImageNet
//! weights (`models/efficientnet-lite0-imagenet/`, compiled in), which have seen a million
//! photos of a thousand kinds of things. A run starting from them keeps everything but the
//! classifier, which is new for the run's own classes.

use std::ops::RangeInclusive;
use std::sync::LazyLock;

use anyhow::{Result, anyhow, ensure};
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::{Device, Tensor};

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
pub fn imagenet_classes() -> &'static [&'static str] {
    static CLASSES: LazyLock<Vec<&'static str>> =
        LazyLock::new(|| IMAGENET_CLASSES.lines().collect());
    &CLASSES
}

/// ImageNet's classes that are dogs (its 118 breeds) and domestic cats (tabby, tiger cat,
/// Persian, Siamese, Egyptian cat), by index.
pub const IMAGENET_DOGS: RangeInclusive<usize> = 151..=268;
pub const IMAGENET_CATS: RangeInclusive<usize> = 281..=285;

/// What ImageNet's classifier makes of one photo.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImagenetView {
    /// The probability of all its cat and dog classes together.
    pub cat_or_dog: f32,
    /// The most probable class that is neither, by index ([`imagenet_classes`]).
    pub other: usize,
    pub other_probability: f32,
}

/// ImageNet's own EfficientNet-Lite0, as its weights have it: it looks at the photos a
/// cat-and-dog model answers for, so that catdog can say what a photo of neither looks like.
/// (A fine-tuned model's features drift too far for ImageNet's classifier to read them: on
/// 17,998 photos it called 39 % of Kaggle's pets neither.)
pub struct ImagenetNetwork {
    network: Network,
}

impl ImagenetNetwork {
    /// The compiled-in network on `device`, its batch norms folded for prediction.
    pub fn load(device: &Device) -> Result<ImagenetNetwork> {
        let network = Network::new(NetworkKind::EfficientNetLite0, 1000, 0.0, device);
        Ok(ImagenetNetwork {
            network: with_imagenet_weights(network, false, device)?.folded(),
        })
    }

    /// What it makes of each of `images` (`[batch, 3, size, size]`, scaled as
    /// [`IMAGENET_NORMALIZATION`] says).
    pub fn views(&self, images: Tensor<4>) -> Vec<ImagenetView> {
        let logits = self.network.forward(images).into_data();
        let values: Vec<f64> = logits.iter::<f32>().map(f64::from).collect();
        values.chunks(1000).map(view_of).collect()
    }
}

/// One row of ImageNet's logits as an [`ImagenetView`] (softmax in f64).
fn view_of(logits: &[f64]) -> ImagenetView {
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exp: Vec<f64> = logits.iter().map(|v| (v - max).exp()).collect();
    let total: f64 = exp.iter().sum();
    let is_pet = |i: &usize| IMAGENET_DOGS.contains(i) || IMAGENET_CATS.contains(i);
    let cat_or_dog = (0..exp.len()).filter(is_pet).map(|i| exp[i]).sum::<f64>() / total;
    let other = (0..exp.len())
        .filter(|i| !is_pet(i))
        .max_by(|&a, &b| exp[a].total_cmp(&exp[b]))
        .unwrap_or(0);
    ImagenetView {
        cat_or_dog: cat_or_dog as f32,
        other,
        other_probability: (exp[other] / total) as f32,
    }
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
    let weights = SafetensorsStore::from_static(IMAGENET_WEIGHTS);
    let mut store = reading_store(kind, weights, device).allow_partial(true);
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

    /// ImageNet's network sees the built-in sample cat and dog as mostly cat or dog, and a
    /// black picture as neither, naming what it looks like instead.
    #[test]
    fn imagenets_network_tells_a_pet_from_a_black_picture() {
        let device = Device::flex();
        let imagenet = ImagenetNetwork::load(&device).unwrap();
        let mut pictures: Vec<Vec<u8>> = SAMPLE_PHOTOS
            .into_iter()
            .map(|(name, photo)| decode_photo_bytes(photo, 224, name).unwrap())
            .collect();
        pictures.push(vec![0u8; 224 * 224 * 3]);
        let input = IMAGENET_NORMALIZATION.to_chw(pictures.iter().map(Vec::as_slice), 224);
        let views = imagenet.views(images_on(input, &device));
        let (cat, dog, black) = (views[0], views[1], views[2]);
        assert!(
            cat.cat_or_dog > 0.9 && dog.cat_or_dog > 0.9,
            "{cat:?} {dog:?}"
        );
        assert!(black.cat_or_dog < 0.1, "{black:?}");
        let named = imagenet_classes()[black.other];
        assert!(
            !IMAGENET_DOGS.contains(&black.other) && !IMAGENET_CATS.contains(&black.other),
            "{named}"
        );
        assert!(black.other_probability > 0.0 && black.other_probability <= 1.0);
    }

    /// The cat and dog classes are where the class list says they are.
    #[test]
    fn the_cat_and_dog_classes_are_imagenets() {
        let classes = imagenet_classes();
        assert_eq!(classes[*IMAGENET_DOGS.start()], "Chihuahua");
        assert_eq!(classes[*IMAGENET_DOGS.end()], "Mexican hairless");
        assert_eq!(classes[*IMAGENET_CATS.start()], "tabby");
        assert_eq!(classes[*IMAGENET_CATS.end()], "Egyptian cat");
        // A view of logits that favour one class: a dog breed is a dog; a car is named.
        let mut logits = vec![0.0; 1000];
        logits[207] = 20.0;
        assert!(view_of(&logits).cat_or_dog > 0.99);
        let car = classes.iter().position(|c| *c == "sports car").unwrap();
        logits[207] = 0.0;
        logits[car] = 20.0;
        let view = view_of(&logits);
        assert!(view.cat_or_dog < 0.01, "{view:?}");
        assert_eq!(view.other, car);
        assert!(view.other_probability > 0.99);
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
