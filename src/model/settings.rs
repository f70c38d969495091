//! What a training run is asked to do, described once: every setting of `catdog train` that
//! shapes a model, with its default and its flag. A run's checkpoint keeps it (a resumed run is
//! held to it, flag by flag), and the model's `catdog.json` records it.

use std::path::PathBuf;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::{IMAGE_SIZES, IMAGENET_NORMALIZATION, NetworkKind, Schedule, has_imagenet_weights};
use crate::data::{Augmentation, Normalization, check_val_split};
use crate::device::Precision;
use crate::numbers::human_bytes;

/// The peak learning rate of a run that starts from ImageNet's weights (its backbone's a
/// tenth of it): on 2026-12-05, fine-tuning EfficientNet-Lite0 on 40 and on 2,000 Kaggle
/// photos, 3e-3 gave 95.8 % and 98.8 % on 500 held-out originals where 1e-3 gave 94.6 % and
/// 98.4 % (docs/accuracy.md).
const FINE_TUNING_RATE: f64 = 3e-3;

/// The share of the learning rate a backbone started from ImageNet's weights learns at: a
/// tenth, so that a few epochs on a few photos adjust what it learned rather than wipe it.
pub const BACKBONE_RATE: f64 = 0.1;

/// The most pictures `--generated` draws: the demo's 2,000 a hundred times over.
pub const MAX_GENERATED: usize = 200_000;

/// Every setting of a training run. A new setting is a field here with its default, its line
/// in [`TrainSettings::as_flags`] (and in [`TrainSettings::check`] where a value can be
/// wrong), and its flag in `cli/train.rs`; checkpoints, `--resume` and `catdog.json` follow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainSettings {
    /// Folder of photos; `None` trains on [`crate::data::synth`]'s generated pictures.
    #[serde(default)]
    pub data: Option<PathBuf>,
    /// How many pictures to generate when `data` is `None`.
    pub generated_count: usize,
    /// The network trained; absent in checkpoints from before `--network` (SmallCnn).
    #[serde(default)]
    pub network: NetworkKind,
    /// Start from ImageNet's weights ([`super::with_imagenet_weights`]) rather than random
    /// ones: the backbone then learns at `backbone_rate` of the learning rate, the new
    /// classifier at all of it. Absent in checkpoints from before catdog had them (false).
    #[serde(default)]
    pub pretrained: bool,
    /// The share of the learning rate a pretrained backbone learns at (0: its weights stay as
    /// ImageNet left them and only the new classifier learns; its batch norms' running
    /// statistics still follow the photos). Absent in checkpoints from before
    /// `--backbone-rate` ([`BACKBONE_RATE`]).
    #[serde(default = "backbone_rate_before_its_flag")]
    pub backbone_rate: f64,
    /// A pretrained network's first epochs that train the new classifier alone, its backbone
    /// frozen as with a `backbone_rate` of 0, before the backbone learns too. Absent in
    /// checkpoints from before `--frozen-epochs` (0).
    #[serde(default)]
    pub frozen_epochs: usize,
    /// A pretrained network's batch norms normalise by ImageNet's statistics while training
    /// too, and keep them, instead of following each batch's. Absent in checkpoints from
    /// before `--hold-batch-norm` (false).
    #[serde(default)]
    pub hold_batch_norm: bool,
    pub image_size: u32,
    /// The share of the photos kept aside to validate on.
    pub val_split: f64,
    pub epochs: usize,
    pub batch_size: usize,
    /// The peak learning rate.
    pub learning_rate: f64,
    pub schedule: Schedule,
    /// AdamW's decoupled weight decay: every step shrinks each weight by learning rate × this.
    pub weight_decay: f64,
    /// Seeds the weights' initialisation, the validation split, the shuffling and the
    /// augmentation.
    pub seed: u64,
    /// How the training pictures are varied (flips, crops, colours).
    pub augment: Augmentation,
    /// Stop early once validation accuracy has not improved for this many epochs.
    #[serde(default)]
    pub patience: Option<usize>,
    /// Fraction of the features zeroed before the classifier in every training step.
    #[serde(default)]
    pub dropout: f64,
    /// Cross-entropy's label smoothing: the targets give this share of their probability to
    /// all classes evenly, so the network is not pushed towards certainty.
    #[serde(default)]
    pub label_smoothing: f64,
    /// The float type the GPU trains in (the saved model is f32 either way); absent in
    /// checkpoints of runs from before `--precision`, which trained in f32.
    #[serde(default)]
    pub precision: Precision,
}

impl Default for TrainSettings {
    fn default() -> Self {
        TrainSettings {
            data: None,
            generated_count: 2000,
            network: NetworkKind::SmallCnn,
            pretrained: false,
            backbone_rate: BACKBONE_RATE,
            frozen_epochs: 0,
            hold_batch_norm: false,
            image_size: 64,
            val_split: 0.1,
            epochs: 5,
            batch_size: 32,
            learning_rate: 1e-3,
            schedule: Schedule::Cosine,
            weight_decay: 5e-4,
            seed: 42,
            augment: Augmentation::Off,
            patience: None,
            dropout: 0.0,
            label_smoothing: 0.0,
            precision: Precision::F32,
        }
    }
}

impl TrainSettings {
    /// The defaults for `network`: at its own image size, and from ImageNet's weights where
    /// catdog has them, at the learning rate that fine-tunes them best.
    pub fn for_network(network: NetworkKind) -> TrainSettings {
        let defaults = TrainSettings::default();
        let pretrained = has_imagenet_weights(network);
        TrainSettings {
            network,
            pretrained,
            image_size: network.default_image_size(),
            learning_rate: match pretrained {
                true => FINE_TUNING_RATE,
                false => defaults.learning_rate,
            },
            ..defaults
        }
    }

    /// How pixels become the network's input: as the ImageNet weights expect them where the run
    /// starts from them, ImageNet's mean and deviation otherwise.
    pub fn normalization(&self) -> Normalization {
        match self.pretrained {
            true => IMAGENET_NORMALIZATION,
            false => Normalization::default(),
        }
    }

    /// Each setting as `catdog train --FLAG VALUE` sets it, the value written as the flag
    /// takes it (`one-cycle`, `none`): `--resume` names the flags that would change its run.
    pub fn as_flags(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "--data",
                self.data.as_ref().map_or_else(
                    || "generated pictures".to_string(),
                    |dir| dir.display().to_string(),
                ),
            ),
            ("--generated", self.generated_count.to_string()),
            ("--network", self.network.name().to_string()),
            ("--pretrained", self.pretrained.to_string()),
            ("--backbone-rate", self.backbone_rate.to_string()),
            ("--frozen-epochs", self.frozen_epochs.to_string()),
            ("--hold-batch-norm", self.hold_batch_norm.to_string()),
            ("--image-size", self.image_size.to_string()),
            ("--epochs", self.epochs.to_string()),
            ("--batch-size", self.batch_size.to_string()),
            ("--lr", self.learning_rate.to_string()),
            ("--schedule", self.schedule.name().to_string()),
            ("--weight-decay", self.weight_decay.to_string()),
            ("--dropout", self.dropout.to_string()),
            ("--label-smoothing", self.label_smoothing.to_string()),
            (
                "--patience",
                self.patience
                    .map_or_else(|| "none".to_string(), |n| n.to_string()),
            ),
            ("--val-split", self.val_split.to_string()),
            ("--seed", self.seed.to_string()),
            ("--precision", self.precision.name().to_string()),
            ("--augment", self.augment.name().to_string()),
        ]
    }

    /// Refuses values no run can use, naming the flag that sets them.
    pub fn check(&self) -> Result<()> {
        check_val_split(self.val_split)?;
        // The checkpoint and the model record the folder as text: a name that is not text
        // is refused now, not after an epoch, when the first checkpoint is written.
        if let Some(data) = &self.data
            && data.to_str().is_none()
        {
            bail!(
                "--data {}: the folder's name is not valid UTF-8 text, which catdog records in \
                 the model and its checkpoint; rename the folder, or give a link to it with a \
                 plain name",
                data.display()
            );
        }
        let network = self.network;
        if self.pretrained && !has_imagenet_weights(network) {
            bail!(
                "--pretrained: catdog has ImageNet weights for efficientnet-lite0 only, not for {}",
                network.name()
            );
        }
        let smallest = (*IMAGE_SIZES.start()).max(network.smallest_image_size());
        if !(smallest..=*IMAGE_SIZES.end()).contains(&self.image_size) {
            bail!(
                "--image-size must be {smallest} to {} px for {}, not {}",
                IMAGE_SIZES.end(),
                network.title(),
                self.image_size
            );
        }
        if self.data.is_none() {
            check_generated_fits(self.generated_count, self.image_size)?;
        }
        self.check_no_epochs()?;
        if self.batch_size == 0 {
            bail!("--batch-size must be at least 1");
        }
        if self.patience == Some(0) {
            bail!("--patience must be at least 1");
        }
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            bail!("--lr must be a positive number, not {}", self.learning_rate);
        }
        if !(self.weight_decay >= 0.0 && self.weight_decay.is_finite()) {
            bail!(
                "--weight-decay must be 0 or a positive number, not {}",
                self.weight_decay
            );
        }
        if !(0.0..=1.0).contains(&self.backbone_rate) {
            bail!(
                "--backbone-rate must be 0 to 1 (a share of --lr), not {}",
                self.backbone_rate
            );
        }
        for (flag, given) in self.pretrained_flags_given() {
            if given && !self.pretrained {
                bail!(
                    "{flag} is for a network started from ImageNet's weights (--pretrained); \
                     this run starts {} from random ones",
                    network.name()
                );
            }
        }
        self.check_frozen_epochs()?;
        for (flag, value) in [
            ("--dropout", self.dropout),
            ("--label-smoothing", self.label_smoothing),
        ] {
            if !(0.0..1.0).contains(&value) {
                bail!("{flag} must be at least 0 and below 1, not {value}");
            }
        }
        Ok(())
    }

    /// The flags for a network started from ImageNet's weights, and whether each is given
    /// (away from its default).
    fn pretrained_flags_given(&self) -> [(&'static str, bool); 3] {
        [
            ("--backbone-rate", self.backbone_rate != BACKBONE_RATE),
            ("--frozen-epochs", self.frozen_epochs > 0),
            ("--hold-batch-norm", self.hold_batch_norm),
        ]
    }

    /// `--epochs 0` trains nothing: it fits the new last layer of a network started from
    /// ImageNet's weights to what that network sees, and no setting of training steps has
    /// anything to act on then.
    fn check_no_epochs(&self) -> Result<()> {
        if self.epochs > 0 {
            return Ok(());
        }
        if !self.pretrained {
            bail!(
                "--epochs 0 fits only the new last layer of a network started from ImageNet's \
                 weights (--network efficientnet-lite0); {} starts from random ones here, so \
                 give at least 1",
                self.network.name()
            );
        }
        let steps_flags_given = [
            ("--augment", self.augment.is_on()),
            ("--dropout", self.dropout > 0.0),
            ("--label-smoothing", self.label_smoothing > 0.0),
        ];
        for (flag, given) in self
            .pretrained_flags_given()
            .into_iter()
            .chain(steps_flags_given)
        {
            if given {
                bail!(
                    "{flag} shapes training steps, and --epochs 0 takes none (it fits the new \
                     last layer alone): give one or the other"
                );
            }
        }
        Ok(())
    }

    /// `--frozen-epochs` leaves epochs for the whole network to learn in, at a rate above 0.
    fn check_frozen_epochs(&self) -> Result<()> {
        let frozen = self.frozen_epochs;
        if frozen == 0 {
            return Ok(());
        }
        if frozen >= self.epochs {
            bail!(
                "--frozen-epochs {frozen} leaves no epoch of --epochs {} for the whole network \
                 to learn in; to train the new last layer alone, use --backbone-rate 0",
                self.epochs
            );
        }
        if self.backbone_rate == 0.0 {
            bail!(
                "--frozen-epochs {frozen} thaws the network's ImageNet part after {frozen} \
                 epochs, but --backbone-rate 0 keeps it frozen throughout: give one or the other"
            );
        }
        if let Some(patience) = self.patience
            && patience <= frozen
        {
            bail!(
                "--patience {patience} could stop the run before the network's ImageNet part \
                 thaws after --frozen-epochs {frozen}: give a patience above {frozen}"
            );
        }
        Ok(())
    }
}

fn backbone_rate_before_its_flag() -> f64 {
    BACKBONE_RATE
}

/// Refuses fewer than two generated pictures, more than catdog draws, or more than half of
/// this machine's memory holds at `image_size` (they are all held in memory, 3 bytes a pixel):
/// a larger count would end the run in an allocation failure.
fn check_generated_fits(count: usize, image_size: u32) -> Result<()> {
    if count < 2 {
        bail!("--generated must be at least 2 (a picture of each class), not {count}");
    }
    if count > MAX_GENERATED {
        bail!("--generated must be at most {MAX_GENERATED}, not {count}");
    }
    let bytes = count as u64 * u64::from(image_size).pow(2) * 3;
    let memory = crate::device::cpu_info().memory_bytes;
    if memory > 0 && bytes > memory / 2 {
        bail!(
            "{count} generated pictures of {image_size} px take {}, more than half of this \
             computer's {} of memory: give a smaller --generated or --image-size",
            human_bytes(bytes),
            human_bytes(memory)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A setting without a flag could be changed by no one, and `--resume` could not name it.
    #[test]
    fn every_setting_has_one_flag() {
        let settings = serde_json::to_value(TrainSettings::default()).unwrap();
        let flags = TrainSettings::default().as_flags();
        assert_eq!(settings.as_object().unwrap().len(), flags.len());
        let mut names: Vec<&str> = flags.iter().map(|(flag, _)| *flag).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), flags.len(), "each flag once");
    }

    /// Refused by `check`, which runs before any photo is decoded or epoch trained.
    #[cfg(unix)]
    #[test]
    fn a_data_folder_whose_name_is_not_text_is_refused_before_any_work() {
        use std::os::unix::ffi::OsStrExt;
        let settings = TrainSettings {
            data: Some(PathBuf::from(std::ffi::OsStr::from_bytes(b"data-\xff"))),
            ..TrainSettings::default()
        };
        let err = settings.check().unwrap_err().to_string();
        assert!(err.contains("is not valid UTF-8"), "{err}");
        assert!(TrainSettings::default().check().is_ok());
    }

    /// `--generated 4000000000`, or a checkpoint's `generated_count` edited to 10¹⁵, would end
    /// the run in an allocation failure: refused by `check`, which a resumed run passes too.
    #[test]
    fn more_generated_pictures_than_memory_holds_are_refused() {
        let settings = |generated_count, image_size| TrainSettings {
            generated_count,
            image_size,
            ..TrainSettings::default()
        };
        let err = settings(1_000_000_000_000_000, 64)
            .check()
            .unwrap_err()
            .to_string();
        assert!(err.contains("--generated must be at most 200000"), "{err}");
        let memory = crate::device::cpu_info().memory_bytes;
        if memory > 0 && memory / 2 < MAX_GENERATED as u64 * 1024 * 1024 * 3 {
            let err = settings(MAX_GENERATED, 1024)
                .check()
                .unwrap_err()
                .to_string();
            assert!(err.contains("more than half of this computer's"), "{err}");
        }
        settings(MAX_GENERATED, 16).check().unwrap();
    }

    /// ImageNet's weights exist for EfficientNet-Lite0 alone: its runs start from them unless
    /// told otherwise, with the pixels scaled as those weights expect; asking for them for
    /// another network is refused by name.
    #[test]
    fn only_efficientnet_lite0_starts_from_imagenets_weights() {
        let efficientnet = TrainSettings::for_network(NetworkKind::EfficientNetLite0);
        assert!(efficientnet.pretrained);
        assert_eq!(efficientnet.image_size, 224);
        assert_eq!(efficientnet.learning_rate, FINE_TUNING_RATE);
        assert_eq!(efficientnet.normalization(), IMAGENET_NORMALIZATION);
        efficientnet.check().unwrap();
        let scratch = TrainSettings {
            pretrained: false,
            ..efficientnet
        };
        assert_eq!(scratch.normalization(), Normalization::default());
        assert!(!TrainSettings::for_network(NetworkKind::ResNet18).pretrained);
        let err = TrainSettings {
            pretrained: true,
            ..TrainSettings::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "--pretrained: catdog has ImageNet weights for efficientnet-lite0 only, not for small-cnn"
        );
    }

    #[test]
    fn a_backbone_rate_is_a_share_of_the_learning_rate() {
        let rate = |backbone_rate| TrainSettings {
            backbone_rate,
            ..TrainSettings::for_network(NetworkKind::EfficientNetLite0)
        };
        rate(0.0).check().unwrap();
        rate(1.0).check().unwrap();
        for wrong in [-0.1, 1.5, f64::NAN] {
            let err = rate(wrong).check().unwrap_err().to_string();
            assert!(err.contains("--backbone-rate must be 0 to 1"), "{err}");
        }
        let scratch = TrainSettings {
            backbone_rate: 0.0,
            ..TrainSettings::default()
        };
        let err = scratch.check().unwrap_err().to_string();
        assert!(err.contains("starts small-cnn from random ones"), "{err}");
        let scratch = TrainSettings {
            hold_batch_norm: true,
            ..TrainSettings::default()
        };
        let err = scratch.check().unwrap_err().to_string();
        assert!(
            err.starts_with("--hold-batch-norm is for a network"),
            "{err}"
        );
        let frozen = |frozen_epochs, epochs| TrainSettings {
            frozen_epochs,
            epochs,
            ..TrainSettings::for_network(NetworkKind::EfficientNetLite0)
        };
        frozen(1, 2).check().unwrap();
        let err = frozen(2, 2).check().unwrap_err().to_string();
        assert!(
            err.contains(
                "--frozen-epochs 2 leaves no epoch of --epochs 2 for the whole network to learn in"
            ),
            "{err}"
        );
        let err = TrainSettings {
            backbone_rate: 0.0,
            ..frozen(1, 2)
        }
        .check()
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("--backbone-rate 0 keeps it frozen throughout"),
            "{err}"
        );
        let patience = |patience| TrainSettings {
            patience: Some(patience),
            ..frozen(2, 5)
        };
        patience(3).check().unwrap();
        let err = patience(2).check().unwrap_err().to_string();
        assert!(
            err.contains("--patience 2 could stop the run before"),
            "{err}"
        );
        let scratch = TrainSettings {
            frozen_epochs: 1,
            ..TrainSettings::default()
        };
        let err = scratch.check().unwrap_err().to_string();
        assert!(err.starts_with("--frozen-epochs is for a network"), "{err}");
    }

    /// `--epochs 0` is for a network started from ImageNet's weights, and refuses every flag
    /// that shapes training steps, naming it.
    #[test]
    fn no_epochs_fits_a_pretrained_networks_last_layer_and_nothing_else() {
        let alone = TrainSettings {
            epochs: 0,
            ..TrainSettings::for_network(NetworkKind::EfficientNetLite0)
        };
        alone.check().unwrap();
        let err = TrainSettings {
            pretrained: false,
            ..alone.clone()
        }
        .check()
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("efficientnet-lite0 starts from random ones here, so give at least 1"),
            "{err}"
        );
        let err = TrainSettings {
            epochs: 0,
            ..TrainSettings::default()
        }
        .check()
        .unwrap_err()
        .to_string();
        assert!(err.contains("small-cnn starts from random ones"), "{err}");
        for (flag, settings) in [
            (
                "--backbone-rate",
                TrainSettings {
                    backbone_rate: 0.0,
                    ..alone.clone()
                },
            ),
            (
                "--frozen-epochs",
                TrainSettings {
                    frozen_epochs: 1,
                    ..alone.clone()
                },
            ),
            (
                "--hold-batch-norm",
                TrainSettings {
                    hold_batch_norm: true,
                    ..alone.clone()
                },
            ),
            (
                "--augment",
                TrainSettings {
                    augment: Augmentation::Light,
                    ..alone.clone()
                },
            ),
            (
                "--dropout",
                TrainSettings {
                    dropout: 0.2,
                    ..alone.clone()
                },
            ),
            (
                "--label-smoothing",
                TrainSettings {
                    label_smoothing: 0.1,
                    ..alone.clone()
                },
            ),
        ] {
            let err = settings.check().unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("{flag} shapes training steps, and --epochs 0")),
                "{flag}: {err}"
            );
        }
    }

    #[test]
    fn image_sizes_past_the_largest_are_refused() {
        let settings = |image_size| TrainSettings {
            image_size,
            ..TrainSettings::default()
        };
        assert!(settings(1024).check().is_ok());
        let err = settings(100_000).check().unwrap_err().to_string();
        assert!(
            err.contains("16 to 1024 px for SmallCnn, not 100000"),
            "{err}"
        );
        let resnet = |image_size| TrainSettings {
            image_size,
            ..TrainSettings::for_network(NetworkKind::ResNet18)
        };
        assert!(resnet(32).check().is_ok());
        let err = resnet(16).check().unwrap_err().to_string();
        assert!(err.contains("32 to 1024 px for ResNet-18, not 16"), "{err}");
    }
}
