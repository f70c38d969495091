//! What a training run is asked to do, with its defaults: the options of `catdog train`, the
//! training loop's own settings, and the record of a run that a resumed run must match.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::schedule::Schedule;
use crate::data::{Augmentation, check_val_split};
use crate::device::Precision;
use crate::model::{IMAGE_SIZES, NetworkKind};

/// What `catdog train` is asked to do.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Folder of photos; `None` trains on [`crate::data::synth`]'s generated pictures.
    pub data: Option<PathBuf>,
    /// How many pictures to generate when `data` is `None`.
    pub generated_count: usize,
    pub image_size: u32,
    pub val_split: f64,
    pub settings: FitSettings,
    /// The float type the GPU trains in; the saved model is f32 either way.
    pub precision: Precision,
    /// The model folder to write; it also holds the run's checkpoint.
    pub out: PathBuf,
    /// Continue the run whose checkpoint is in `out` instead of starting afresh.
    pub resume: bool,
}

/// Where `catdog train` saves a model of photos without `--out`; `predict` and `eval` use
/// the model there without `--model`.
pub const PHOTOS_OUT: &str = "models/catdog";
/// Where the speed demo (generated pictures) saves its model without `--out`.
pub const DEMO_OUT: &str = "models/demo";

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            data: None,
            generated_count: 2000,
            image_size: 64,
            val_split: 0.1,
            settings: FitSettings::default(),
            precision: Precision::F32,
            out: PathBuf::from(PHOTOS_OUT),
            resume: false,
        }
    }
}

impl TrainOptions {
    /// The options a checkpointed run was started with, to resume it in `out`.
    pub fn of_run(run: &RunSettings, out: &Path) -> TrainOptions {
        TrainOptions {
            data: run.data.clone(),
            generated_count: run.generated_count,
            image_size: run.image_size,
            val_split: run.val_split,
            settings: run.fit.clone(),
            precision: run.precision,
            out: out.to_path_buf(),
            resume: true,
        }
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
        let network = self.settings.network;
        let smallest = (*IMAGE_SIZES.start()).max(network.smallest_image_size());
        if !(smallest..=*IMAGE_SIZES.end()).contains(&self.image_size) {
            bail!(
                "--image-size must be {smallest} to {} px for {}, not {}",
                IMAGE_SIZES.end(),
                network.title(),
                self.image_size
            );
        }
        if self.data.is_none() && self.generated_count < 2 {
            bail!(
                "--generated must be at least 2 (a picture of each class), not {}",
                self.generated_count
            );
        }
        if self.data.is_none() {
            check_generated_fits(self.generated_count, self.image_size)?;
        }
        self.settings.check()
    }
}

/// The training loop's own settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitSettings {
    /// The network trained; absent in checkpoints from before `--network` (SmallCnn).
    #[serde(default)]
    pub network: NetworkKind,
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
    pub patience: Option<usize>,
    /// Fraction of the features zeroed before the classifier in every training step.
    #[serde(default)]
    pub dropout: f64,
    /// Cross-entropy's label smoothing: the targets give this share of their probability to
    /// all classes evenly, so the network is not pushed towards certainty.
    #[serde(default)]
    pub label_smoothing: f64,
}

impl FitSettings {
    /// Refuses values the training loop cannot use, naming the flag that sets them.
    pub fn check(&self) -> Result<()> {
        if self.epochs == 0 {
            bail!("--epochs must be at least 1");
        }
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
}

impl Default for FitSettings {
    fn default() -> Self {
        FitSettings {
            network: NetworkKind::SmallCnn,
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
        }
    }
}

/// What a run was started with, kept in its checkpoint: a resumed run must match it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The photo folder, or `None` for generated pictures.
    pub data: Option<PathBuf>,
    pub generated_count: usize,
    pub image_size: u32,
    pub val_split: f64,
    pub fit: FitSettings,
    /// Absent in checkpoints of runs from before `--precision`, which trained in f32.
    #[serde(default)]
    pub precision: Precision,
    pub classes: Vec<String>,
    /// Identifies the exact photos (names, sizes, modification times); see
    /// [`crate::data::Dataset::fingerprint`].
    pub data_fingerprint: String,
    /// The photo folder's names and sizes without the times ([`crate::data::Dataset::listing`]),
    /// which a copy of the folder keeps; absent for generated pictures and in checkpoints of
    /// runs from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_listing: Option<String>,
}

impl RunSettings {
    /// The record of a run of `options` on pictures of `classes` identified by `fingerprint`
    /// (and by `listing`, for a photo folder).
    pub fn new(
        options: &TrainOptions,
        classes: &[String],
        fingerprint: &str,
        listing: Option<&str>,
    ) -> RunSettings {
        RunSettings {
            data: options.data.clone(),
            generated_count: options.generated_count,
            image_size: options.image_size,
            val_split: options.val_split,
            fit: options.settings.clone(),
            precision: options.precision,
            classes: classes.to_vec(),
            data_fingerprint: fingerprint.to_string(),
            data_listing: listing.map(str::to_string),
        }
    }
}

/// The most pictures `--generated` draws: the demo's 2,000 a hundred times over.
pub const MAX_GENERATED: usize = 200_000;

/// Refuses more generated pictures than catdog draws, or than half of this machine's memory
/// holds at `image_size` (they are all held in memory, 3 bytes a pixel): a larger count would
/// end the run in an allocation failure.
fn check_generated_fits(count: usize, image_size: u32) -> Result<()> {
    if count > MAX_GENERATED {
        bail!("--generated must be at most {MAX_GENERATED}, not {count}");
    }
    let bytes = count as u64 * u64::from(image_size).pow(2) * 3;
    let memory = crate::device::cpu_info().memory_bytes;
    if memory > 0 && bytes > memory / 2 {
        bail!(
            "{count} generated pictures of {image_size} px take {}, more than half of this \
             computer's {} of memory: give a smaller --generated or --image-size",
            crate::numbers::human_bytes(bytes),
            crate::numbers::human_bytes(memory)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Refused by `check`, which runs before any photo is decoded or epoch trained.
    #[cfg(unix)]
    #[test]
    fn a_data_folder_whose_name_is_not_text_is_refused_before_any_work() {
        use std::os::unix::ffi::OsStrExt;
        let options = TrainOptions {
            data: Some(PathBuf::from(std::ffi::OsStr::from_bytes(b"data-\xff"))),
            ..TrainOptions::default()
        };
        let err = options.check().unwrap_err().to_string();
        assert!(err.contains("is not valid UTF-8"), "{err}");
        assert!(TrainOptions::default().check().is_ok());
    }

    /// `--generated 4000000000`, or a checkpoint's `generated_count` edited to 10¹⁵, would end
    /// the run in an allocation failure: refused by `check`, which a resumed run passes too.
    #[test]
    fn more_generated_pictures_than_memory_holds_are_refused() {
        let options = |generated_count, image_size| TrainOptions {
            generated_count,
            image_size,
            ..TrainOptions::default()
        };
        let err = options(1_000_000_000_000_000, 64)
            .check()
            .unwrap_err()
            .to_string();
        assert!(err.contains("--generated must be at most 200000"), "{err}");
        let memory = crate::device::cpu_info().memory_bytes;
        if memory > 0 && memory / 2 < MAX_GENERATED as u64 * 1024 * 1024 * 3 {
            let err = options(MAX_GENERATED, 1024)
                .check()
                .unwrap_err()
                .to_string();
            assert!(err.contains("more than half of this computer's"), "{err}");
        }
        options(MAX_GENERATED, 16).check().unwrap();
    }

    #[test]
    fn image_sizes_past_the_largest_are_refused() {
        let options = |image_size| TrainOptions {
            image_size,
            ..TrainOptions::default()
        };
        assert!(options(1024).check().is_ok());
        let err = options(100_000).check().unwrap_err().to_string();
        assert!(
            err.contains("16 to 1024 px for SmallCnn, not 100000"),
            "{err}"
        );
        let resnet = |image_size| TrainOptions {
            image_size,
            settings: FitSettings {
                network: NetworkKind::ResNet18,
                ..FitSettings::default()
            },
            ..TrainOptions::default()
        };
        assert!(resnet(32).check().is_ok());
        let err = resnet(16).check().unwrap_err().to_string();
        assert!(err.contains("32 to 1024 px for ResNet-18, not 16"), "{err}");
    }
}
