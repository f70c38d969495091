//! What `catdog train` was asked for, before defaults: a new run fills them in, a resumed run
//! takes its checkpoint's settings instead (`TrainRequest::options`, in `resume.rs`).

use std::path::PathBuf;

use super::checkpoint;
use super::schedule::Schedule;
use super::settings::{DEMO_OUT, FitSettings, PHOTOS_OUT, TrainOptions};
use crate::data::Augmentation;
use crate::device::Precision;
use crate::model::NetworkKind;

/// The settings given on the command line, each `None` (or `false`) where its flag was not.
#[derive(Clone, Debug, Default)]
pub struct TrainRequest {
    pub data: Option<PathBuf>,
    pub generated: Option<usize>,
    pub network: Option<NetworkKind>,
    /// `None`: the network's own size.
    pub image_size: Option<u32>,
    pub epochs: Option<usize>,
    pub batch_size: Option<usize>,
    pub learning_rate: Option<f64>,
    pub schedule: Option<Schedule>,
    pub weight_decay: Option<f64>,
    pub patience: Option<usize>,
    pub val_split: Option<f64>,
    pub seed: Option<u64>,
    pub augment: Option<Augmentation>,
    pub dropout: Option<f64>,
    pub label_smoothing: Option<f64>,
    pub precision: Option<Precision>,
    /// `None`: [`TrainRequest::out`] picks the folder.
    pub out: Option<PathBuf>,
    pub resume: bool,
}

impl TrainRequest {
    /// The model folder: `--out`, or else `models/catdog` for photos and `models/demo` for the
    /// speed demo on generated pictures, so that the demo never replaces the model `predict`
    /// uses by default. `--resume` without `--out` continues whichever of the two holds an
    /// unfinished run (`models/catdog` where both or neither do).
    pub fn out(&self) -> PathBuf {
        if let Some(out) = &self.out {
            return out.clone();
        }
        let photos = PathBuf::from(PHOTOS_OUT);
        let demo = PathBuf::from(DEMO_OUT);
        if self.resume {
            let unfinished = |out: &PathBuf| {
                checkpoint::read_state(out)
                    .ok()
                    .flatten()
                    .is_some_and(|state| !state.finished())
            };
            return match !unfinished(&photos) && unfinished(&demo) {
                true => demo,
                false => photos,
            };
        }
        match self.data.is_some() {
            true => photos,
            false => demo,
        }
    }

    /// The options of a new run: the flags given, defaults for the others.
    pub(crate) fn new_run(&self) -> TrainOptions {
        let defaults = TrainOptions::default();
        let fit = defaults.settings;
        let network = self.network.unwrap_or(fit.network);
        TrainOptions {
            data: self.data.clone(),
            generated_count: self.generated.unwrap_or(defaults.generated_count),
            image_size: self
                .image_size
                .unwrap_or_else(|| network.default_image_size()),
            val_split: self.val_split.unwrap_or(defaults.val_split),
            settings: FitSettings {
                network,
                epochs: self.epochs.unwrap_or(fit.epochs),
                batch_size: self.batch_size.unwrap_or(fit.batch_size),
                learning_rate: self.learning_rate.unwrap_or(fit.learning_rate),
                schedule: self.schedule.unwrap_or(fit.schedule),
                weight_decay: self.weight_decay.unwrap_or(fit.weight_decay),
                seed: self.seed.unwrap_or(fit.seed),
                augment: self.augment.unwrap_or(fit.augment),
                patience: self.patience,
                dropout: self.dropout.unwrap_or(fit.dropout),
                label_smoothing: self.label_smoothing.unwrap_or(fit.label_smoothing),
            },
            precision: self.precision.unwrap_or(defaults.precision),
            out: self.out(),
            resume: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_network_trains_at_its_own_size_unless_told() {
        let run = |network, image_size| {
            let request = TrainRequest {
                network,
                image_size,
                ..TrainRequest::default()
            };
            let options = request.new_run();
            (options.settings.network, options.image_size)
        };
        assert_eq!(run(None, None), (NetworkKind::SmallCnn, 64));
        let resnet = Some(NetworkKind::ResNet18);
        assert_eq!(run(resnet, None), (NetworkKind::ResNet18, 224));
        assert_eq!(run(resnet, Some(96)), (NetworkKind::ResNet18, 96));
    }
}
