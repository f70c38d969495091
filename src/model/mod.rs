//! The networks (`network.rs`: which one, and the one in use; `small_cnn.rs`, `resnet.rs`),
//! what a run that trains one is asked to do (`settings.rs`, `schedule.rs`), the model folder
//! it is saved in (`saved.rs`), and the model built into catdog.

mod activation;
mod builtin;
mod efficientnet;
mod fused;
mod network;
mod norm_pool_relu;
mod norm_then;
mod pretrained;
mod relu6;
mod resnet;
mod rewrite;
mod saved;
mod schedule;
mod settings;
mod small_cnn;
mod typical;

/// The autodiff backend a training device runs on flex (without gradient checkpointing): what
/// the model's own flex operations with gradients (`relu6.rs`, `norm_pool_relu.rs`,
/// `norm_then.rs`) reach
/// through burn's backend extension API.
type FlexTraining = burn_autodiff::Autodiff<
    burn::backend::Flex,
    burn_autodiff::checkpoint::strategy::NoCheckpointing,
>;

use std::path::{Path, PathBuf};

use anyhow::{Result, ensure};
use burn::tensor::Device;

pub use activation::Then;
pub use builtin::{HELD_OUT_PHOTOS as BUILTIN_HELD_OUT, TRAINED_ON_PHOTOS as BUILTIN_TRAINED_ON};
pub use efficientnet::EfficientNetLite0;
pub use network::{Network, NetworkKind};
pub use norm_pool_relu::{norm_pool_relu, norm_relu_pool};
pub use norm_then::norm_then;
pub use pretrained::{
    IMAGENET_CATS, IMAGENET_DOGS, IMAGENET_NORMALIZATION, ImagenetNetwork, ImagenetView,
    has_imagenet_weights, imagenet_classes, with_imagenet_weights,
};
pub use resnet::ResNet18;
pub use saved::{
    Calibration, FORMAT_VERSION, MAX_CLASSES, ModelInfo, TEMPERATURES, TrainedOn, save, save_info,
};
pub(crate) use saved::{info_path, is_model_folder, weights_ceiling};
pub use schedule::Schedule;
pub use settings::{MAX_GENERATED, TrainSettings};
pub use small_cnn::{LOOK_BLOCK, SmallCnn};
pub use typical::{FIT_PHOTOS_AT_LEAST, Typical, UNUSUAL_SHARE};

/// Which trained model a command runs: never a surprise, so the output names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelChoice {
    /// The one compiled into catdog (`--model builtin`).
    Builtin,
    /// A folder written by `catdog train`.
    Folder(PathBuf),
}

impl ModelChoice {
    /// `--model`'s value: `builtin`, or a model folder (`./builtin` for a folder of that name).
    pub fn parse(value: PathBuf) -> ModelChoice {
        match value.as_os_str() == "builtin" {
            true => ModelChoice::Builtin,
            false => ModelChoice::Folder(value),
        }
    }

    /// Without `--model`: the user's own model where `default_folder` holds one, the
    /// built-in one otherwise.
    pub fn default_for(default_folder: &Path) -> ModelChoice {
        match saved::is_model_folder(default_folder) {
            true => ModelChoice::Folder(default_folder.to_path_buf()),
            false => ModelChoice::Builtin,
        }
    }

    /// The loss and accuracy curves `catdog train` drew beside the model (`curves.svg`), where
    /// there are some (a model folder copied without them has none).
    pub fn curves_svg(&self) -> Option<String> {
        match self {
            ModelChoice::Builtin => Some(builtin::CURVES_SVG.to_string()),
            ModelChoice::Folder(dir) => {
                let bytes = crate::fs::read_regular(&dir.join("curves.svg"), 16 << 20).ok()?;
                String::from_utf8(bytes).ok()
            }
        }
    }

    /// Reads the weights that `info`, the model's description as [`describe`](Self::describe)
    /// gave it, names onto `device`. Two steps, so that a caller can decide on the description
    /// first without it being read and checked twice.
    pub(crate) fn load_described(&self, info: &ModelInfo, device: &Device) -> Result<Network> {
        match self {
            ModelChoice::Builtin => builtin::load_described(info, device),
            ModelChoice::Folder(dir) => saved::load_described(dir, info, device),
        }
    }

    /// What the model's description says, checked as one this catdog can run, without reading
    /// its weights.
    pub(crate) fn describe(&self) -> Result<ModelInfo> {
        match self {
            ModelChoice::Builtin => builtin::describe(),
            ModelChoice::Folder(dir) => saved::describe(dir),
        }
    }
}

/// The picture sizes catdog trains and predicts at, as `--image-size` takes them (16 px is the
/// smallest the network's four 2×2 poolings leave a pixel of): a model or checkpoint that
/// names another is refused before anything is allocated for it.
pub const IMAGE_SIZES: std::ops::RangeInclusive<u32> = 16..=1024;

/// Version of every network's layout, written beside its name (`NetworkKind::name`) and
/// checked when a model is loaded.
pub const ARCHITECTURE_VERSION: u32 = 1;

/// Refuses a description file (`catdog.json`, a checkpoint's `state.json`) of another format
/// (`what`, e.g. "format version", found and expected) or of a network this catdog does not
/// run; returns the network it describes.
pub(crate) fn check_description(
    path: &Path,
    what: &str,
    (found, expected): (u32, u32),
    (architecture, version): (&str, u32),
) -> Result<NetworkKind> {
    ensure!(
        found == expected,
        "{} has {what} {found}, this catdog reads {what} {expected}",
        path.display()
    );
    let known = NetworkKind::ALL.map(|kind| format!("{} v{ARCHITECTURE_VERSION}", kind.name()));
    let (last, others) = known.split_last().expect("catdog runs some network");
    match NetworkKind::from_name(architecture) {
        Some(kind) if version == ARCHITECTURE_VERSION => Ok(kind),
        _ => anyhow::bail!(
            "{} describes a {architecture} v{version}, this catdog runs {} and {last}",
            path.display(),
            others.join(", ")
        ),
    }
}
