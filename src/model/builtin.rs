//! The model compiled into catdog: EfficientNet-Lite0 started from ImageNet's weights and
//! fine-tuned on the Kaggle photos of `dogs-vs-cats-20k` (`models/builtin-efficientnet-20k/`,
//! stored in half precision; models/README.md gives the command and its accuracy, and the
//! previous built-in models'), so that `catdog predict photo.jpg` knows real cats and dogs from
//! any folder before anything was trained, and says what a photo of neither looks like.

use std::path::Path;

use anyhow::Result;
use burn::tensor::Device;

use super::{ModelInfo, Network, saved};

const INFO: &str = include_str!("../../models/builtin-efficientnet-20k/catdog.json");
const WEIGHTS: &[u8] =
    include_bytes!("../../models/builtin-efficientnet-20k/model-7d1e481d.safetensors");

/// Its training curves, as `catdog train` drew them (`catdog serve` shows them).
pub const CURVES_SVG: &str = include_str!("../../models/builtin-efficientnet-20k/curves.svg");

/// What it learned from and was measured on, which `catdog.json` does not count.
pub const TRAINED_ON_PHOTOS: usize = 17_998;
pub const HELD_OUT_PHOTOS: usize = 2_000;

/// Stands for the built-in model's folder in errors.
const NAME: &str = "models/builtin-efficientnet-20k (built in)";

/// Reads the built-in model onto `device`, as its description ([`describe`]) gives it.
pub(crate) fn load_described(info: &ModelInfo, device: &Device) -> Result<Network> {
    saved::load_described_from_memory(info, WEIGHTS, Path::new(NAME), device)
}

/// What the built-in model's `catdog.json` says.
pub(crate) fn describe() -> Result<ModelInfo> {
    saved::describe_from_memory(INFO, Path::new(NAME))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelChoice;

    #[test]
    fn the_compiled_in_files_belong_together_and_describe_a_cat_dog_model() {
        let info = ModelChoice::Builtin.describe().unwrap();
        ModelChoice::Builtin
            .load_described(&info, &Device::flex())
            .unwrap();
        assert_eq!(info.classes, ["cat", "dog"]);
        assert_eq!(info.image_size, 224);
        assert_eq!(info.network(), crate::model::NetworkKind::EfficientNetLite0);
        assert!(
            info.val_accuracy.unwrap() > 0.985,
            "{:?}",
            info.val_accuracy
        );
        // Compiled into every catdog, so kept in half precision: under 8 MB.
        assert!(WEIGHTS.len() < 8_000_000, "{} bytes", WEIGHTS.len());
        // A damaged copy is refused, not loaded.
        let damaged = WEIGHTS.to_vec().leak();
        damaged[WEIGHTS.len() / 2] ^= 1;
        let described = describe().unwrap();
        let loaded =
            saved::load_described_from_memory(&described, damaged, Path::new("x"), &Device::flex());
        let Err(err) = loaded else {
            panic!("a damaged copy loaded");
        };
        let err = format!("{err:#}");
        assert!(
            err.contains("does not match the size and checksum"),
            "{err}"
        );
    }

    #[test]
    fn builtin_names_it_and_anything_else_is_a_folder() {
        use std::path::PathBuf;
        assert_eq!(ModelChoice::parse("builtin".into()), ModelChoice::Builtin);
        assert_eq!(
            ModelChoice::parse("./builtin".into()),
            ModelChoice::Folder(PathBuf::from("./builtin"))
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(ModelChoice::default_for(empty.path()), ModelChoice::Builtin);
    }
}
