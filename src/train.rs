//! Training: from a folder of photos (or generated pictures) to a saved model.
//!
//! [`train`] is the whole `catdog train` command: find and split the photos, decode them,
//! run [`fit`] (the training loop), save. [`fit`] is the loop itself: AdamW, cross-entropy,
//! validation after every epoch, the best epoch's network kept, and photos per second measured
//! over each epoch's wall time.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use burn::module::Module;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::optim::{AdamWConfig, GradientsParams, ModuleOptimizer};
use burn::store::{BurnpackStore, ModuleSnapshot};
use burn::tensor::{Bytes, Device};
use serde::{Deserialize, Serialize};

use crate::backend::Backend;
use crate::batch::{AugmentEpoch, HostBatch, Normalization, batch_indices, prefetch};
use crate::chart::{self, Curves};
use crate::checkpoint::{self, Checkpoint, Position, RunSettings};
use crate::dataset::{Dataset, generated_fingerprint, stratified_split};
use crate::decode::Skipped;
use crate::images::ImageSet;
use crate::interrupt::{self, Interrupt};
use crate::model::{ARCHITECTURE, ARCHITECTURE_VERSION, SmallCnn};
use crate::out_folder::OutFolder;
use crate::pixel_cache::{self, Source};
use crate::saved_model::{self, ModelInfo};
use crate::synth;

/// The picture of the run's loss and accuracy per epoch, written beside the model.
pub const CURVES_FILE: &str = "curves.svg";

/// What `catdog train` is asked to do.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Folder of photos; `None` trains on [`synth`]'s generated pictures.
    pub data: Option<PathBuf>,
    /// How many pictures to generate when `data` is `None`.
    pub generated_count: usize,
    pub image_size: u32,
    pub val_split: f64,
    pub settings: FitSettings,
    /// The model folder to write; it also holds the run's checkpoint.
    pub out: PathBuf,
    /// Continue the run whose checkpoint is in `out` instead of starting afresh.
    pub resume: bool,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            data: None,
            generated_count: 2000,
            image_size: 64,
            val_split: 0.1,
            settings: FitSettings::default(),
            out: PathBuf::from("models/catdog"),
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
            out: out.to_path_buf(),
            resume: true,
        }
    }
}

/// The training loop's own settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitSettings {
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
    /// Flip, crop and colour-jitter the training pictures ([`crate::augment`]).
    pub augment: bool,
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

impl Default for FitSettings {
    fn default() -> Self {
        FitSettings {
            epochs: 5,
            batch_size: 32,
            learning_rate: 1e-3,
            schedule: Schedule::Cosine,
            weight_decay: 5e-4,
            seed: 42,
            augment: false,
            patience: None,
            dropout: 0.0,
            label_smoothing: 0.0,
        }
    }
}

/// How the learning rate changes over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    /// Warm up linearly over the first 5 % of steps, then decay to zero along a cosine.
    #[default]
    Cosine,
    /// PyTorch's OneCycleLR: from peak/25 up to the peak along a cosine over the first 30 % of
    /// steps, then down to peak/250,000 along a cosine.
    OneCycle,
    /// The same learning rate throughout.
    Constant,
}

impl Schedule {
    /// The learning rate for step `step` (from 0) of `total`, peaking at `peak`.
    pub fn learning_rate(self, peak: f64, step: usize, total: usize) -> f64 {
        match self {
            Schedule::Constant => peak,
            Schedule::Cosine => {
                let warmup = (total / 20).max(1);
                if step < warmup {
                    peak * (step + 1) as f64 / warmup as f64
                } else {
                    let progress = (step - warmup) as f64 / (total - warmup).max(1) as f64;
                    cosine_between(peak, 0.0, progress)
                }
            }
            Schedule::OneCycle => {
                let start = peak / 25.0;
                let end = start / 1e4;
                // The last step of the rise, as OneCycleLR counts it.
                let peak_step = (0.3 * total as f64 - 1.0).max(1.0);
                let step = step as f64;
                if step <= peak_step {
                    cosine_between(start, peak, step / peak_step)
                } else {
                    let fall = (total as f64 - 1.0 - peak_step).max(1.0);
                    cosine_between(peak, end, ((step - peak_step) / fall).min(1.0))
                }
            }
        }
    }
}

/// `from` at `progress` 0, `to` at 1, along half a cosine.
fn cosine_between(from: f64, to: f64, progress: f64) -> f64 {
    to + (from - to) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
}

/// The epoch with the best validation accuracy, if any was validated; between equal
/// accuracies, the lower validation loss, then the earlier epoch.
pub fn best_epoch(history: &[EpochStats]) -> Option<usize> {
    let better = |a: &EpochStats, b: &EpochStats| {
        (a.val_accuracy, -a.val_loss.unwrap_or(f64::INFINITY))
            > (b.val_accuracy, -b.val_loss.unwrap_or(f64::INFINITY))
    };
    history
        .iter()
        .filter(|stats| stats.val_accuracy.is_some())
        .fold(None, |best: Option<&EpochStats>, stats| match best {
            Some(best) if !better(stats, best) => Some(best),
            _ => Some(stats),
        })
        .map(|stats| stats.epoch)
}

/// True when `patience` epochs have passed since the best one: time to stop early.
pub fn out_of_patience(history: &[EpochStats], patience: Option<usize>) -> bool {
    match (patience, best_epoch(history), history.last()) {
        (Some(patience), Some(best), Some(last)) => last.epoch - best >= patience,
        _ => false,
    }
}

/// The network of the best epoch so far, serialised as a checkpoint keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct BestEpoch {
    pub epoch: usize,
    pub model: Vec<u8>,
}

/// How one epoch went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochStats {
    /// Counted from 1.
    pub epoch: usize,
    pub train_loss: f64,
    /// Share of the training photos (augmented, when augmenting) the network got right while
    /// it learned from them: a running figure over the epoch, as PyTorch scripts report it.
    pub train_accuracy: f64,
    pub val_loss: Option<f64>,
    pub val_accuracy: Option<f64>,
    /// Training photos per wall-clock second over the whole epoch: batching, copying to the
    /// device, forward, backward and optimizer step (validation not included).
    pub train_images_per_sec: f64,
    pub train_seconds: f64,
}

/// What a finished `catdog train` reports.
#[derive(Clone, Debug)]
pub struct TrainReport {
    pub backend: Backend,
    /// Where the photos came from, e.g. "data/photos (class folders)".
    pub data: String,
    pub classes: Vec<String>,
    pub train_images: usize,
    pub val_images: usize,
    pub skipped: Vec<Skipped>,
    /// Photos decoded per second, when photos were read from disk.
    pub decode_images_per_sec: Option<f64>,
    pub epochs: Vec<EpochStats>,
    pub model_dir: PathBuf,
}

impl TrainReport {
    /// The epoch whose network was saved: see [`kept_epoch`].
    pub fn kept_epoch(&self) -> &EpochStats {
        kept_epoch(&self.epochs)
    }
}

/// The epoch whose network a run saves: the best validated one, or the last without
/// validation.
pub fn kept_epoch(history: &[EpochStats]) -> &EpochStats {
    let last = history.last().expect("training runs at least one epoch");
    best_epoch(history).map_or(last, |best| &history[best - 1])
}

/// Hears how training goes, to draw it for a person. Every method does nothing by default,
/// so `&mut ()` trains silently.
pub trait TrainProgress: Sync {
    /// A line worth telling the user ("training on generated pictures", a skipped photo).
    fn note(&mut self, _line: &str) {}
    fn decode_started(&mut self, _photos: usize) {}
    /// One more photo decoded; called from many threads.
    fn photo_decoded(&self) {}
    fn decode_finished(&mut self) {}
    fn epoch_started(&mut self, _epoch: usize, _epochs: usize, _batches: usize) {}
    fn batch_finished(&mut self, _images: usize, _loss: f64) {}
    fn epoch_finished(&mut self, _stats: &EpochStats, _epochs: usize) {}
}

impl TrainProgress for () {}

/// Training stopped by Ctrl-C or SIGTERM, with a checkpoint saved: the error `train` returns
/// then, so that the command line can say how to resume and exit with the signal's code.
#[derive(Debug)]
pub struct Stopped {
    pub by: Interrupt,
    /// Where the run stands, e.g. "epoch 3 of 5, 12 batches in".
    pub position: String,
    pub out: PathBuf,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "stopped by {} at {}; the checkpoint is saved. Continue with: \
             catdog train --resume --out {}",
            self.by.name(),
            self.position,
            self.out.display()
        )
    }
}

impl std::error::Error for Stopped {}

/// Runs `catdog train`: data, training with a checkpoint after every epoch, and the model
/// saved in `options.out`. With `options.resume`, continues the run checkpointed there.
pub fn train(
    options: &TrainOptions,
    backend: &Backend,
    progress: &mut dyn TrainProgress,
) -> Result<TrainReport> {
    let (_lock, took_over) = OutFolder::claim(&options.out, room_needed(backend))?;
    if let Some(line) = took_over {
        progress.note(&line);
    }
    let start = if options.resume {
        let start = checkpoint::load(&options.out)?;
        progress.note(&format!(
            "resuming the run in {} at {}",
            options.out.display(),
            start.state.describe()
        ));
        Some(start)
    } else {
        if let Some(state) = checkpoint::read_state(&options.out)?
            && !state.finished()
        {
            bail!(
                "{} holds an unfinished run ({}): continue it with `catdog train --resume \
                 --out {}`, or delete {} to start again",
                options.out.display(),
                state.describe(),
                options.out.display(),
                checkpoint::dir(&options.out).display()
            );
        }
        None
    };

    let data = prepare_data(options, progress)?;
    let run = RunSettings {
        data: options.data.clone(),
        generated_count: options.generated_count,
        image_size: options.image_size,
        val_split: options.val_split,
        fit: options.settings.clone(),
        classes: data.classes.clone(),
        data_fingerprint: data.fingerprint.clone(),
    };
    if let Some(start) = &start {
        check_same_run(&start.state.run, &run, &options.out)?;
    }
    let normalization = Normalization::default();
    let mut save_checkpoint = |trainer: &Trainer,
                               position: &Position,
                               history: &[EpochStats],
                               best: Option<&BestEpoch>| {
        let (model, optimizer) = trainer.to_bytes()?;
        checkpoint::save(
            &options.out,
            &run,
            position,
            history,
            &model,
            &optimizer,
            best,
        )
    };
    let outcome = fit_from(
        &data.train,
        &data.val,
        data.classes.len(),
        &options.settings,
        &normalization,
        &backend.device,
        start,
        &mut save_checkpoint,
        progress,
    )
    .with_context(|| {
        format!(
            "training stopped; the last checkpoint is kept in {}",
            checkpoint::dir(&options.out).display()
        )
    })?;
    let (model, epochs) = match outcome {
        FitOutcome::Finished { model, history } => (*model, history),
        FitOutcome::Stopped { by, position } => {
            return Err(anyhow!(Stopped {
                by,
                position,
                out: options.out.clone(),
            }));
        }
    };

    let kept = kept_epoch(&epochs);
    let info = ModelInfo {
        format_version: saved_model::FORMAT_VERSION,
        catdog_version: env!("CARGO_PKG_VERSION").to_string(),
        architecture: ARCHITECTURE.to_string(),
        architecture_version: ARCHITECTURE_VERSION,
        classes: data.classes.clone(),
        image_size: options.image_size,
        normalization,
        epochs: kept.epoch,
        val_accuracy: kept.val_accuracy,
        backend: backend.kind,
        device: backend.device_name.clone(),
        train_images_per_sec: kept.train_images_per_sec,
        weights_bytes: 0,
        weights_crc32: 0,
    };
    saved_model::save(&options.out, &model, &info)?;
    let curves = options.out.join(CURVES_FILE);
    let picture = Curves {
        history: &epochs,
        kept_epoch: kept.epoch,
    };
    if let Err(err) = chart::write(&picture, &curves) {
        progress.note(&format!("could not draw {}: {err:#}", curves.display()));
    }

    Ok(TrainReport {
        backend: backend.clone(),
        data: data.description,
        classes: data.classes,
        train_images: data.train.len(),
        val_images: data.val.len(),
        skipped: data.skipped,
        decode_images_per_sec: data.decode_images_per_sec,
        epochs,
        model_dir: options.out.clone(),
    })
}

/// Disk space a run needs in its model folder: the model, and a checkpoint (network and
/// AdamW's two moments) twice over while the next one replaces it, plus slack for the
/// descriptions.
fn room_needed(backend: &Backend) -> u64 {
    let parameters = SmallCnn::new(2, 0.0, &backend.device).num_params() as u64;
    parameters * 4 * (1 + 2 * 3) + (1 << 20)
}

/// Refuses to resume `started` with a different dataset or image size.
fn check_same_run(started: &RunSettings, now: &RunSettings, out: &Path) -> Result<()> {
    let source = |run: &RunSettings| {
        run.data.as_ref().map_or_else(
            || format!("{} generated pictures", run.generated_count),
            |dir| dir.display().to_string(),
        )
    };
    let refuse = |what: String| {
        bail!(
            "cannot resume the run in {}: {what}. A resumed run continues with the photos and \
             settings it was started with; delete {} to start a new one",
            out.display(),
            checkpoint::dir(out).display()
        )
    };
    if started.image_size != now.image_size {
        return refuse(format!(
            "it was started at {} px, not {} px",
            started.image_size, now.image_size
        ));
    }
    if started.classes != now.classes {
        return refuse(format!(
            "it was started with classes {:?}, the photos now have {:?}",
            started.classes, now.classes
        ));
    }
    if started.data != now.data || started.data_fingerprint != now.data_fingerprint {
        return refuse(format!(
            "it was started on {}, and the photos are not the same now ({})",
            source(started),
            source(now)
        ));
    }
    if started != now {
        return refuse("its settings differ".to_string());
    }
    Ok(())
}

/// Training and validation pictures, decoded.
struct PreparedData {
    description: String,
    classes: Vec<String>,
    train: ImageSet,
    val: ImageSet,
    skipped: Vec<Skipped>,
    decode_images_per_sec: Option<f64>,
    /// Identifies the exact pictures, so that a resumed run can check it has the same ones.
    fingerprint: String,
}

fn prepare_data(options: &TrainOptions, progress: &mut dyn TrainProgress) -> Result<PreparedData> {
    let seed = options.settings.seed;
    let Some(dir) = &options.data else {
        progress.note(&format!(
            "No --data given: training on {} generated cat and dog faces \
             (see `catdog synth`); pass --data DIR to train on your own photos.",
            options.generated_count
        ));
        let all = synth::generate(options.generated_count, options.image_size, seed);
        let (train, val) = stratified_split(all.labels(), options.val_split, seed);
        return Ok(PreparedData {
            description: format!("{} generated pictures", options.generated_count),
            classes: synth::CLASSES.map(String::from).to_vec(),
            train: all.select(&train),
            val: all.select(&val),
            skipped: Vec::new(),
            decode_images_per_sec: None,
            fingerprint: generated_fingerprint(options.generated_count, options.image_size, seed),
        });
    };

    let dataset = Dataset::scan(dir)?;
    let fingerprint = dataset.fingerprint();
    progress.decode_started(dataset.samples.len());
    let started = Instant::now();
    let tick = || progress.photo_decoded();
    let photos = pixel_cache::load_or_decode(&dataset, options.image_size, &tick)?;
    let seconds = started.elapsed().as_secs_f64();
    progress.decode_finished();
    let decode_images_per_sec = match &photos.source {
        Source::Cache(path) => {
            progress.note(&format!(
                "Read the decoded photos from the cache {} ({:.1} s).",
                path.display(),
                seconds
            ));
            None
        }
        Source::DecodedAndCached(path) => {
            progress.note(&format!(
                "Cached the decoded photos in {}: later runs skip decoding.",
                path.display()
            ));
            Some(dataset.samples.len() as f64 / seconds)
        }
        Source::DecodedInMemory(why) => {
            progress.note(&format!(
                "Could not cache the decoded photos ({why}); the next run decodes them again."
            ));
            Some(dataset.samples.len() as f64 / seconds)
        }
    };

    for skip in &photos.skipped {
        progress.note(&format!("skipped {}: {}", skip.path.display(), skip.reason));
    }
    let (train_samples, val_samples) = dataset.split(options.val_split, seed);
    let decoded = |samples: Vec<usize>| -> Vec<usize> {
        samples
            .into_iter()
            .filter_map(|sample| photos.image_of_sample[sample])
            .collect()
    };
    let train = photos.images.select(&decoded(train_samples));
    let val = photos.images.select(&decoded(val_samples));
    if train.is_empty() {
        bail!("none of the photos in {} could be decoded", dir.display());
    }
    Ok(PreparedData {
        description: format!("{} ({:?})", dir.display(), dataset.layout),
        classes: dataset.classes,
        train,
        val,
        skipped: photos.skipped,
        decode_images_per_sec,
        fingerprint,
    })
}

/// The training loop: `settings.epochs` passes over `train` in shuffled batches, each
/// followed by a validation pass over `val` (skipped when `val` is empty).
pub fn fit(
    train: &ImageSet,
    val: &ImageSet,
    classes: usize,
    settings: &FitSettings,
    normalization: &Normalization,
    device: &Device,
    progress: &mut dyn TrainProgress,
) -> Result<(SmallCnn, Vec<EpochStats>)> {
    let no_checkpoints =
        &mut |_: &Trainer, _: &Position, _: &[EpochStats], _: Option<&BestEpoch>| Ok(());
    match fit_from(
        train,
        val,
        classes,
        settings,
        normalization,
        device,
        None,
        no_checkpoints,
        progress,
    )? {
        FitOutcome::Finished { model, history } => Ok((*model, history)),
        FitOutcome::Stopped { by, position } => bail!("stopped by {} at {position}", by.name()),
    }
}

/// How [`fit_from`] ended.
pub enum FitOutcome {
    /// Every epoch ran, or patience ran out; `model` is the best epoch's network.
    Finished {
        /// Boxed: a network is much larger than the other variant.
        model: Box<SmallCnn>,
        history: Vec<EpochStats>,
    },
    /// A signal arrived; a checkpoint of the position was saved.
    Stopped { by: Interrupt, position: String },
}

/// Saves a checkpoint of the trainer at a position, with the epochs finished so far and the
/// best epoch's network.
pub type SaveCheckpoint<'a> =
    dyn FnMut(&Trainer, &Position, &[EpochStats], Option<&BestEpoch>) -> Result<()> + 'a;

/// [`fit`], starting from a checkpoint when there is one, calling `save_checkpoint` after
/// every epoch and when Ctrl-C or SIGTERM asks it to stop (after the batch in progress).
/// A batch's shuffle and learning rate depend only on the seed and its position, so a resumed
/// run takes the same steps as one that was never interrupted.
#[allow(clippy::too_many_arguments)]
pub fn fit_from(
    train: &ImageSet,
    val: &ImageSet,
    classes: usize,
    settings: &FitSettings,
    normalization: &Normalization,
    device: &Device,
    start: Option<Checkpoint>,
    save_checkpoint: &mut SaveCheckpoint,
    progress: &mut dyn TrainProgress,
) -> Result<FitOutcome> {
    if train.is_empty() {
        bail!("no training photos");
    }
    let (mut trainer, mut position, mut history, mut best) = match start {
        Some(start) => (
            Trainer::restore(classes, device, start.model, start.optimizer, settings)?,
            start.state.position,
            start.state.history,
            start.best,
        ),
        None => (
            Trainer::new(classes, device, settings),
            Position {
                epoch: 1,
                ..Position::default()
            },
            Vec::new(),
            None,
        ),
    };
    let steps_per_epoch = train.len().div_ceil(settings.batch_size);
    let total_steps = steps_per_epoch * settings.epochs;
    while position.epoch <= settings.epochs && !out_of_patience(&history, settings.patience) {
        let epoch = position.epoch;
        let batches = batch_indices(
            train.len(),
            settings.batch_size,
            Some(settings.seed + epoch as u64),
        );
        progress.epoch_started(epoch, settings.epochs, batches.len());
        let started = Instant::now();
        let mut images_this_session = 0;
        let augmentation = settings.augment.then_some(AugmentEpoch {
            seed: settings.seed,
            epoch,
        });
        let first = position.batches_done;
        let stopped = std::thread::scope(|scope| -> Result<Option<FitOutcome>> {
            let ready = prefetch(scope, train, &batches, first, normalization, augmentation);
            for (i, batch) in ready.into_iter().enumerate() {
                let i = first + i;
                let photos = batch.len();
                let step = (epoch - 1) * steps_per_epoch + i;
                let learning_rate =
                    settings
                        .schedule
                        .learning_rate(settings.learning_rate, step, total_steps);
                trainer.seed_step(step);
                let Step { loss, correct } = trainer.step(batch, learning_rate);
                if !loss.is_finite() {
                    bail!(
                        "the loss became {loss} in epoch {epoch}: training diverged; \
                         try a lower --lr (it is {})",
                        settings.learning_rate
                    );
                }
                position.loss_sum += loss * photos as f64;
                position.correct += correct;
                position.batches_done = i + 1;
                images_this_session += photos;
                progress.batch_finished(photos, loss);
                if let Some(by) = interrupt::requested() {
                    save_checkpoint(&trainer, &position, &history, best.as_ref())?;
                    return Ok(Some(FitOutcome::Stopped {
                        by,
                        position: format!(
                            "epoch {epoch} of {}, {} of {} batches",
                            settings.epochs,
                            position.batches_done,
                            batches.len()
                        ),
                    }));
                }
            }
            Ok(None)
        })?;
        if let Some(stopped) = stopped {
            return Ok(stopped);
        }
        device.sync().context("the device failed while training")?;
        let seconds = started.elapsed().as_secs_f64();

        let (val_loss, val_accuracy) = if val.is_empty() {
            (None, None)
        } else {
            let (loss, accuracy) = evaluate(
                &trainer.model().valid(),
                val,
                normalization,
                device,
                settings.batch_size,
            );
            (Some(loss), Some(accuracy))
        };
        let stats = EpochStats {
            epoch,
            train_loss: position.loss_sum / train.len() as f64,
            train_accuracy: position.correct as f64 / train.len() as f64,
            val_loss,
            val_accuracy,
            train_images_per_sec: images_this_session as f64 / seconds,
            train_seconds: seconds,
        };
        progress.epoch_finished(&stats, settings.epochs);
        history.push(stats);
        if best_epoch(&history) == Some(epoch) {
            best = Some(BestEpoch {
                epoch,
                model: trainer.network_bytes()?,
            });
        }
        position = Position {
            epoch: epoch + 1,
            ..Position::default()
        };
        save_checkpoint(&trainer, &position, &history, best.as_ref())?;
        if epoch < settings.epochs && out_of_patience(&history, settings.patience) {
            let kept = kept_epoch(&history).epoch;
            progress.note(&format!(
                "Validation accuracy has not improved for {} epochs: stopping early; \
                 keeping epoch {kept}.",
                epoch - kept
            ));
        }
        if let Some(by) = interrupt::requested() {
            return Ok(FitOutcome::Stopped {
                by,
                position: format!("the end of epoch {epoch} of {}", settings.epochs),
            });
        }
    }
    let model = match best {
        Some(best) => network_from_bytes(classes, 0.0, device, best.model)?,
        None => trainer.model().valid(),
    };
    Ok(FitOutcome::Finished {
        model: Box::new(model),
        history,
    })
}

/// A network being trained with AdamW on cross-entropy: one [`step`](Self::step) is one batch.
pub struct Trainer {
    /// Always `Some` between steps; taken while the optimizer replaces it, so that the old
    /// weights have a single owner and can be updated in place.
    model: Option<SmallCnn>,
    optimizer: ModuleOptimizer,
    loss: CrossEntropyLoss,
    /// `device` with autodiff.
    device: Device,
    /// The run's seed when the network has dropout, whose masks [`seed_step`](Self::seed_step)
    /// draws from it.
    dropout_seed: Option<u64>,
}

impl Trainer {
    /// A freshly initialised network on `device`, its weights drawn from `settings.seed`,
    /// trained with `settings`' weight decay, dropout and label smoothing.
    pub fn new(classes: usize, device: &Device, settings: &FitSettings) -> Trainer {
        let device = device.clone().autodiff();
        device.seed(settings.seed);
        Trainer {
            model: Some(SmallCnn::new(classes, settings.dropout, &device)),
            optimizer: adamw(settings.weight_decay),
            loss: training_loss(settings, &device),
            device,
            dropout_seed: dropout_seed(settings),
        }
    }

    /// A trainer continuing from [`to_bytes`](Self::to_bytes)'s output: the network with its
    /// parameter ids, and AdamW's moments keyed by them.
    pub fn restore(
        classes: usize,
        device: &Device,
        model: Vec<u8>,
        optimizer: Vec<u8>,
        settings: &FitSettings,
    ) -> Result<Trainer> {
        let device = device.clone().autodiff();
        let network = network_from_bytes(classes, settings.dropout, &device, model)?;
        // AdamW's state is read onto burn's default device and moves to the parameters'
        // device at the next step.
        let optimizer = adamw(settings.weight_decay)
            .from_bytes(Bytes::from_bytes_vec(optimizer))
            .map_err(|err| anyhow!("the checkpoint's optimizer state cannot be read: {err}"))?;
        Ok(Trainer {
            model: Some(network),
            optimizer,
            loss: training_loss(settings, &device),
            device,
            dropout_seed: dropout_seed(settings),
        })
    }

    /// Seeds the device's random numbers for step `step` (from 0) of the run, so that dropout
    /// draws the same masks whether or not the run was interrupted and resumed. Without
    /// dropout nothing is drawn and nothing is seeded.
    pub fn seed_step(&self, step: usize) {
        if let Some(seed) = self.dropout_seed {
            self.device.seed(seed ^ (step as u64).rotate_left(32));
        }
    }

    /// The network and the optimizer state, serialised for a checkpoint.
    pub fn to_bytes(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        let optimizer = self
            .optimizer
            .into_bytes()
            .map_err(|err| anyhow!("cannot serialise the optimizer state: {err}"))?;
        Ok((self.network_bytes()?, optimizer.to_vec()))
    }

    /// The network alone, serialised as [`to_bytes`](Self::to_bytes) does.
    pub fn network_bytes(&self) -> Result<Vec<u8>> {
        // Batch norm's running statistics keep the last step's update aside until something
        // syncs them, and saving does not: without this, a checkpoint taken mid-epoch (Ctrl-C)
        // lost one update and the resumed run drifted from an uninterrupted one.
        let _ = self.model().valid();
        let mut store = BurnpackStore::from_bytes(None);
        self.model()
            .save_into(&mut store)
            .map_err(|err| anyhow!("cannot serialise the network: {err}"))?;
        let network = store
            .get_bytes()
            .map_err(|err| anyhow!("cannot serialise the network: {err}"))?;
        Ok(network.to_vec())
    }

    /// The network as trained so far.
    pub fn model(&self) -> &SmallCnn {
        self.model
            .as_ref()
            .expect("the model is back after every step")
    }

    /// Forward, backward and AdamW step on a batch; returns its mean loss and how many photos
    /// the forward pass got right, read back from the device (which waits for the forward
    /// pass to finish).
    pub fn step(&mut self, batch: HostBatch, learning_rate: f64) -> Step {
        let expected = batch.labels.clone();
        let (inputs, labels) = batch.to_device(&self.device);
        let model = self
            .model
            .take()
            .expect("the model is back after every step");
        let logits = model.forward(inputs);
        let predicted = logits.clone().argmax(1);
        let loss = self.loss.forward(logits, labels);
        let loss_value = loss.clone().into_scalar::<f32>() as f64;
        let correct = predicted
            .into_data()
            .iter::<i64>()
            .zip(&expected)
            .filter(|(predicted, expected)| predicted == *expected)
            .count();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        self.model = Some(self.optimizer.step(learning_rate, model, grads));
        Step {
            loss: loss_value,
            correct,
        }
    }
}

/// What one training step reports.
pub struct Step {
    /// The batch's mean cross-entropy.
    pub loss: f64,
    /// Photos of the batch the network classified correctly before the step.
    pub correct: usize,
}

/// A network read from [`Trainer::to_bytes`]'s output onto `device`, with `dropout` for
/// training on.
fn network_from_bytes(
    classes: usize,
    dropout: f64,
    device: &Device,
    bytes: Vec<u8>,
) -> Result<SmallCnn> {
    let mut network = SmallCnn::new(classes, dropout, device);
    let mut store = BurnpackStore::from_bytes(Some(Bytes::from_bytes_vec(bytes)));
    let applied = network
        .load_from(&mut store)
        .map_err(|err| anyhow!("the checkpoint's network cannot be read: {err}"))?;
    if !applied.errors.is_empty() || !applied.missing.is_empty() {
        bail!(
            "the checkpoint's network does not fit a {ARCHITECTURE} for {classes} classes \
             ({} errors, {} missing tensors)",
            applied.errors.len(),
            applied.missing.len()
        );
    }
    Ok(network)
}

fn dropout_seed(settings: &FitSettings) -> Option<u64> {
    (settings.dropout > 0.0).then_some(settings.seed)
}

/// Cross-entropy, label-smoothed when `settings` ask for it; validation always scores against
/// the plain labels.
fn training_loss(settings: &FitSettings, device: &Device) -> CrossEntropyLoss {
    let smoothing = (settings.label_smoothing > 0.0).then_some(settings.label_smoothing as f32);
    CrossEntropyLossConfig::new()
        .with_smoothing(smoothing)
        .init(device)
}

/// AdamW with PyTorch's epsilon, so that the two are compared on the same optimizer.
fn adamw(weight_decay: f64) -> ModuleOptimizer {
    AdamWConfig::new()
        .with_epsilon(1e-8)
        .with_weight_decay(weight_decay as f32)
        .init()
}

/// Mean cross-entropy and accuracy of `model` on `set`.
pub fn evaluate(
    model: &SmallCnn,
    set: &ImageSet,
    normalization: &Normalization,
    device: &Device,
    batch_size: usize,
) -> (f64, f64) {
    let loss_fn = CrossEntropyLossConfig::new().init(device);
    let mut loss_sum = 0.0;
    let mut correct = 0;
    for indices in batch_indices(set.len(), batch_size, None) {
        let (images, labels) = HostBatch::new(set, &indices, normalization, None).to_device(device);
        let logits = model.forward(images);
        let loss = loss_fn.forward(logits.clone(), labels);
        loss_sum += loss.into_scalar::<f32>() as f64 * indices.len() as f64;
        let predicted = logits.argmax(1).into_data();
        correct += indices
            .iter()
            .zip(predicted.iter::<i64>())
            .filter(|&(&i, p)| set.labels()[i] as i64 == p)
            .count();
    }
    (
        loss_sum / set.len() as f64,
        correct as f64 / set.len() as f64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{BackendKind, cpu_backend};
    use burn::tensor::{Int, Tensor};

    #[test]
    fn label_smoothing_gives_every_class_a_share_of_the_target() {
        let device = cpu_backend(BackendKind::Flex).device;
        let loss = |label_smoothing| {
            let settings = FitSettings {
                label_smoothing,
                ..FitSettings::default()
            };
            let logits = Tensor::<2>::from_floats([[2.0, 0.0]], &device);
            let labels = Tensor::<1, Int>::from_ints([0], &device);
            training_loss(&settings, &device)
                .forward(logits, labels)
                .into_scalar::<f32>() as f64
        };
        let p_cat = 2f64.exp() / (2f64.exp() + 1.0);
        let (log_cat, log_dog) = (p_cat.ln(), (1.0 - p_cat).ln());
        assert!((loss(0.0) + log_cat).abs() < 1e-6, "{}", loss(0.0));
        // Targets 0.95 and 0.05: 1 − 0.1 for the label, then 0.1 shared by the two classes.
        let smoothed = -(0.95 * log_cat + 0.05 * log_dog);
        assert!((loss(0.1) - smoothed).abs() < 1e-6, "{}", loss(0.1));
    }

    #[test]
    fn one_cycle_rises_to_the_peak_at_30_percent_then_falls_as_pytorch_does() {
        let (peak, total) = (2e-3, 1000);
        let rate = |step| Schedule::OneCycle.learning_rate(peak, step, total);
        assert!((rate(0) - peak / 25.0).abs() < 1e-12);
        assert!((rate(299) - peak).abs() < 1e-12, "the peak is at step 299");
        assert!((rate(total - 1) - peak / 25.0 / 1e4).abs() < 1e-12);
        let rates: Vec<f64> = (0..total).map(rate).collect();
        assert!(rates[..300].windows(2).all(|w| w[0] < w[1]));
        assert!(rates[299..].windows(2).all(|w| w[0] > w[1]));
        // Half-way down the cosine, half-way between the peak and the end.
        let middle = 299 + (total - 1 - 299) / 2;
        assert!((rate(middle) - (peak + peak / 25.0 / 1e4) / 2.0).abs() < 1e-9);
    }

    fn epoch(epoch: usize, val: Option<(f64, f64)>) -> EpochStats {
        EpochStats {
            epoch,
            train_loss: 0.5,
            train_accuracy: 0.8,
            val_loss: val.map(|(loss, _)| loss),
            val_accuracy: val.map(|(_, accuracy)| accuracy),
            train_images_per_sec: 1.0,
            train_seconds: 1.0,
        }
    }

    #[test]
    fn the_best_epoch_has_the_best_accuracy_then_the_lowest_loss() {
        let history = [
            epoch(1, Some((0.6, 0.70))),
            epoch(2, Some((0.5, 0.80))),
            epoch(3, Some((0.4, 0.80))),
            epoch(4, Some((0.3, 0.75))),
        ];
        assert_eq!(best_epoch(&history), Some(3));
        assert_eq!(kept_epoch(&history).epoch, 3);
        assert!(!out_of_patience(&history, Some(2)));
        assert!(out_of_patience(&history, Some(1)));
        assert!(!out_of_patience(&history, None));

        let unvalidated = [epoch(1, None), epoch(2, None)];
        assert_eq!(best_epoch(&unvalidated), None);
        assert_eq!(kept_epoch(&unvalidated).epoch, 2, "the last epoch is kept");
        assert!(!out_of_patience(&unvalidated, Some(1)));
    }
}
