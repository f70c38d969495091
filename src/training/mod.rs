//! Training: from a folder of photos (or generated pictures) to a saved model.
//!
//! [`train`] is the whole `catdog train` command. The loop itself is [`fit`] (`fit.rs`), one
//! step of it a [`Trainer`] (`trainer.rs`), and a run of `--epochs 0` fits a pretrained
//! network's last layer alone (`linear_fit.rs`); a run's settings are [`TrainSettings`]
//! (`model/settings.rs`), `settings.rs` adds the folder and `request.rs` the flags given,
//! `history.rs` what its epochs decide, `resume.rs` every rule about continuing a run from its
//! `checkpoint.rs`, `interrupt.rs` Ctrl-C, and `out_folder.rs` the claim on the model folder.

mod adamw;
mod checkpoint;
mod curves;
mod fit;
mod history;
mod interrupt;
mod linear_fit;
mod out_folder;
mod progress;
mod request;
mod resume;
mod settings;
mod trainer;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use burn::module::Module;

use crate::data::{DataSpec, Normalization, PreparedData, Skipped, count_labels, prepare};
use crate::device::Backend;
use crate::inference::Runner;
use crate::model::{
    self, ARCHITECTURE_VERSION, Calibration, MAX_CLASSES, ModelInfo, Network, NetworkKind,
    TrainedOn,
};
use checkpoint::RunRecord;
use fit::{FitOutcome, FitRun, RunState, fit_from};
use out_folder::OutFolder;

pub use crate::model::{MAX_GENERATED, Schedule, TrainSettings};
pub use fit::fit;
pub use history::{EpochStats, best_epoch, steady_images_per_sec};
pub use interrupt::Interrupt;
pub use progress::{BatchStats, TrainProgress};
pub use settings::TrainOptions;

pub(crate) use history::kept_epoch;
pub(crate) use interrupt::install as install_interrupt_handlers;
pub(crate) use interrupt::{
    install_saying as install_interrupt_handlers_saying, requested as interrupted,
};
pub(crate) use request::TrainRequest;
pub(crate) use trainer::Trainer;

/// The picture of the run's loss and accuracy per epoch, written beside the model.
const CURVES_FILE: &str = "curves.svg";

/// What a finished `catdog train` reports.
#[derive(Clone, Debug)]
pub struct TrainReport {
    pub backend: Backend,
    /// Where the photos came from, e.g. "data/photos (a sub-folder per class)".
    pub data: String,
    pub classes: Vec<String>,
    pub train_images: usize,
    pub val_images: usize,
    pub skipped: Vec<Skipped>,
    /// Photos decoded per second, when photos were read from disk.
    pub decode_images_per_sec: Option<f64>,
    pub epochs: Vec<EpochStats>,
    /// The temperature fitted on the validation photos; `None` without any.
    pub calibration: Option<Calibration>,
    pub model_dir: PathBuf,
}

impl TrainReport {
    /// The epoch whose network was saved: see [`kept_epoch`].
    pub fn kept_epoch(&self) -> &EpochStats {
        kept_epoch(&self.epochs)
    }

    /// Training photos per second once warmed up: see [`steady_images_per_sec`].
    pub fn images_per_sec(&self) -> f64 {
        steady_images_per_sec(&self.epochs)
    }
}

/// How `catdog train` ended.
#[derive(Debug)]
pub enum TrainOutcome {
    /// The model is saved. (Boxed: a report is much larger than the other variant.)
    Finished(Box<TrainReport>),
    /// Ctrl-C or SIGTERM stopped the run, with a checkpoint saved.
    Stopped(Stopped),
    /// `--resume` of a run that is finished and saved: nothing was done; what to say.
    NothingLeft(String),
}

/// Training stopped by Ctrl-C or SIGTERM, with a checkpoint saved.
#[derive(Debug)]
pub struct Stopped {
    pub by: Interrupt,
    /// Where the run stands, e.g. "epoch 3 of 5, 12 batches in".
    pub position: String,
    pub out: PathBuf,
    /// Whether a checkpoint to resume from is saved in `out` (not when a new run stopped
    /// while decoding its photos).
    pub resumable: bool,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (by, position) = (self.by.name(), &self.position);
        if self.resumable {
            write!(
                f,
                "stopped by {by} at {position}; the checkpoint is saved. Continue with: \
                 catdog train --resume --out {}",
                self.out.display()
            )
        } else {
            write!(
                f,
                "stopped by {by} at {position}, before training began; nothing was saved: run \
                 the same command to start again"
            )
        }
    }
}

/// Runs `catdog train`: data, training with a checkpoint after every epoch, and the model
/// saved in `options.out`. With `options.resume`, continues the run checkpointed there.
pub fn train(
    options: &TrainOptions,
    backend: &Backend,
    progress: &mut dyn TrainProgress,
) -> Result<TrainOutcome> {
    options.check()?;
    let mut backend = backend.clone();
    backend.set_precision(options.settings.precision)?;
    let backend = &backend;
    let (_lock, took_over) =
        OutFolder::claim(&options.out, room_needed(backend, options.settings.network))?;
    if let Some(line) = took_over {
        progress.note(&line);
    }
    if let Some(line) = resume::nothing_left(options)? {
        return Ok(TrainOutcome::NothingLeft(line));
    }
    let start = resume::starting_point(options, progress)?;
    let data = match prepare_data(options, progress) {
        Ok(data) => data,
        Err(err) => match interrupt::requested() {
            // Decoding stopped for a signal: not an error.
            Some(by) => {
                return Ok(TrainOutcome::Stopped(Stopped {
                    by,
                    position: "the start, while decoding the photos".to_string(),
                    out: options.out.clone(),
                    resumable: start.is_some(),
                }));
            }
            None => return Err(err),
        },
    };
    ensure!(
        data.classes.len() <= MAX_CLASSES,
        "{} holds {} classes: catdog trains at most {MAX_CLASSES}",
        data.description,
        data.classes.len()
    );
    let run = RunRecord::new(
        &options.settings,
        &data.classes,
        &data.fingerprint,
        data.listing.as_deref(),
    );
    if let Some(start) = &start
        && let Some(line) = resume::check_same_run(&start.state.run, &run, &options.out)?
    {
        progress.note(&line);
    }
    if start.is_none()
        && let Some(line) =
            few_photos_advice(&options.settings, data.train.labels(), data.classes.len())
    {
        progress.note(&line);
    }
    let normalization = options.settings.normalization();
    let fit_run = FitRun {
        train: &data.train,
        val: &data.val,
        classes: data.classes.len(),
        settings: &options.settings,
        normalization: &normalization,
        device: &backend.device,
        stop: &interrupt::requested,
    };
    let outcome = fit_with_checkpoints(&fit_run, start, &run, &options.out, progress)?;
    let (model, epochs) = match outcome {
        FitOutcome::Finished { model, history } => (*model, history),
        FitOutcome::Stopped { by, position } => {
            return Ok(TrainOutcome::Stopped(Stopped {
                by,
                position,
                out: options.out.clone(),
                // A run of --epochs 0 writes no checkpoint.
                resumable: options.settings.epochs > 0,
            }));
        }
    };
    let calibration = save_model(
        options,
        backend,
        &data,
        &model,
        &epochs,
        &normalization,
        progress,
    )?;
    Ok(TrainOutcome::Finished(Box::new(TrainReport {
        backend: backend.clone(),
        data: data.description,
        classes: data.classes,
        train_images: data.train.len(),
        val_images: data.val.len(),
        skipped: data.skipped,
        decode_images_per_sec: data.decode_images_per_sec,
        epochs,
        calibration,
        model_dir: options.out.clone(),
    })))
}

/// The most training photos a class for which `--epochs 0` did at least as well as training
/// epochs in catdog's measurements (20 and 100 a class; at 1,000 epochs did better:
/// docs/accuracy.md).
const FEW_PHOTOS: usize = 100;

/// For a run that trains a pretrained network's epochs on at most [`FEW_PHOTOS`] photos a
/// class (`labels`, the training photos', of `classes` classes), the sentence pointing at
/// `--epochs 0`.
fn few_photos_advice(settings: &TrainSettings, labels: &[usize], classes: usize) -> Option<String> {
    if !settings.pretrained || settings.epochs == 0 || labels.is_empty() {
        return None;
    }
    let most = count_labels(labels, classes).into_iter().max()?;
    (most <= FEW_PHOTOS).then(|| {
        format!(
            "{most} training photos a class at most: with this few, `--epochs 0` (the last \
             layer fitted alone, in seconds) has done as well as training epochs, or better."
        )
    })
}

/// [`fit_from`], saving a checkpoint of `run` in `out` after every epoch and when a signal
/// stops it.
fn fit_with_checkpoints(
    fit_run: &FitRun,
    start: Option<checkpoint::Checkpoint>,
    run: &RunRecord,
    out: &Path,
    progress: &mut dyn TrainProgress,
) -> Result<FitOutcome> {
    let mut save_checkpoint = |state: &RunState| {
        let (model, optimizer) = state.trainer.to_bytes()?;
        checkpoint::save(
            out,
            run,
            &state.position,
            &state.history,
            &model,
            &optimizer,
            state.best.as_ref(),
        )
    };
    fit_from(fit_run, start, &mut save_checkpoint, progress).with_context(|| {
        format!(
            "training stopped; the last checkpoint is kept in {}",
            checkpoint::dir(out).display()
        )
    })
}

/// The run's pictures, decoded (or read from the pixel cache) and split; decoding stops between
/// chunks of photos when a signal asks training to stop.
fn prepare_data(options: &TrainOptions, progress: &mut dyn TrainProgress) -> Result<PreparedData> {
    let stop = || interrupt::requested().is_some();
    let spec = DataSpec {
        folder: options.settings.data.as_deref(),
        generated_count: options.settings.generated_count,
        image_size: options.settings.image_size,
        val_split: options.settings.val_split,
        seed: options.settings.seed,
        stop: &stop,
    };
    prepare(spec, progress)
}

/// Writes the kept epoch's network and its description into `options.out`, with the temperature
/// and the typical look fitted on the validation photos (one pass), and the run's curves beside them (a curve that cannot be
/// drawn costs a note, not the model). Returns that calibration.
fn save_model(
    options: &TrainOptions,
    backend: &Backend,
    data: &PreparedData,
    model: &Network,
    epochs: &[EpochStats],
    normalization: &Normalization,
    progress: &mut dyn TrainProgress,
) -> Result<Option<Calibration>> {
    let kept = kept_epoch(epochs);
    let runner = Runner::new(
        model,
        data.val.size(),
        normalization,
        &backend.device,
        options.settings.batch_size,
    );
    let (calibration, typical) = runner.calibrate_and_fit_typical(&data.val)?;
    let info = ModelInfo {
        format_version: model::FORMAT_VERSION,
        catdog_version: env!("CARGO_PKG_VERSION").to_string(),
        architecture: model.kind().name().to_string(),
        architecture_version: ARCHITECTURE_VERSION,
        classes: data.classes.clone(),
        image_size: options.settings.image_size,
        normalization: *normalization,
        epochs: kept.epoch,
        val_accuracy: kept.val_accuracy,
        backend: backend.kind,
        device: backend.device_name.clone(),
        train_images_per_sec: steady_images_per_sec(epochs),
        weights_file: String::new(),
        weights_bytes: 0,
        weights_crc32: 0,
        trained_on: Some(TrainedOn::new(
            &options.settings,
            &data.fingerprint,
            data.listing.as_deref(),
        )),
        settings: Some(options.settings.clone()),
        calibration,
        typical,
    };
    model::save(&options.out, model, &info)?;
    let curves = options.out.join(CURVES_FILE);
    if kept.is_last_layer_alone() {
        // One pass draws no curve; an earlier run's checkpoint and curves are not this model's.
        checkpoint::remove(&options.out)?;
        let _ = std::fs::remove_file(&curves);
    } else if let Err(err) = curves::write(epochs, kept.epoch, &curves) {
        progress.note(&format!("could not draw {}: {err:#}", curves.display()));
    }
    Ok(calibration)
}

/// Disk space a run needs in its model folder: the model, and a checkpoint (network and
/// AdamW's two moments) twice over while the next one replaces it, plus slack for the
/// descriptions.
fn room_needed(backend: &Backend, network: NetworkKind) -> u64 {
    let parameters = Network::new(network, 2, 0.0, &backend.device).num_params() as u64;
    parameters * 4 * (1 + 2 * 3) + (1 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NetworkKind;

    /// The advice comes for a pretrained network's epochs on at most 100 photos a class, and
    /// for nothing else.
    #[test]
    fn few_photos_a_class_point_at_no_epochs() {
        let pretrained = TrainSettings::for_network(NetworkKind::EfficientNetLite0);
        let classes = |a: usize, b: usize| -> Vec<usize> {
            std::iter::repeat_n(0, a)
                .chain(std::iter::repeat_n(1, b))
                .collect()
        };
        let advice = few_photos_advice(&pretrained, &classes(18, 100), 2).unwrap();
        assert!(
            advice.starts_with("100 training photos a class at most")
                && advice.contains("--epochs 0"),
            "{advice}"
        );
        assert_eq!(few_photos_advice(&pretrained, &classes(18, 101), 2), None);
        let alone = TrainSettings {
            epochs: 0,
            ..pretrained.clone()
        };
        assert_eq!(few_photos_advice(&alone, &classes(18, 18), 2), None);
        assert_eq!(
            few_photos_advice(&TrainSettings::default(), &classes(18, 18), 2),
            None
        );
    }
}
