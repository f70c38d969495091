//! The training loop: epochs of shuffled batches ([`run_epoch`]), each followed by a
//! validation pass ([`validate`]), the best epoch's network kept, a checkpoint after every
//! epoch, and photos per second measured over each epoch's wall time.

use std::ops::ControlFlow;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use burn::module::Module;
use burn::tensor::{Device, TensorData};

use super::checkpoint::{Checkpoint, Position};
use super::history::{BestEpoch, EpochStats, best_epoch, kept_epoch, out_of_patience};
use super::interrupt::{self, Interrupt};
use super::linear_fit::fit_linear;
use super::progress::{BatchStats, TrainProgress};
use super::trainer::{Step, Trainer, network_from_bytes};
use crate::data::{AugmentEpoch, ImageSet, Normalization, batch_indices, images_on, prefetch};
use crate::device::{Batch, explain_panic};
use crate::inference::{Runner, float_rows};
use crate::model::Network;
use crate::model::TrainSettings;

/// The training loop: `settings.epochs` passes over `train` in shuffled batches, each
/// followed by a validation pass over `val` (skipped when `val` is empty).
pub fn fit(
    train: &ImageSet,
    val: &ImageSet,
    classes: usize,
    settings: &TrainSettings,
    normalization: &Normalization,
    device: &Device,
    progress: &mut dyn TrainProgress,
) -> Result<(Network, Vec<EpochStats>)> {
    settings.check()?;
    let run = FitRun {
        train,
        val,
        classes,
        settings,
        normalization,
        device,
        stop: &interrupt::requested,
    };
    match fit_from(&run, None, &mut |_| Ok(()), progress)? {
        FitOutcome::Finished { model, history } => Ok((*model, history)),
        FitOutcome::Stopped { by, position } => bail!("stopped by {} at {position}", by.name()),
    }
}

/// The pictures and settings of one run of the loop.
pub(crate) struct FitRun<'a> {
    pub train: &'a ImageSet,
    pub val: &'a ImageSet,
    pub classes: usize,
    pub settings: &'a TrainSettings,
    pub normalization: &'a Normalization,
    pub device: &'a Device,
    /// Asked after every batch whether a signal wants training to stop.
    pub stop: &'a dyn Fn() -> Option<Interrupt>,
}

/// How [`fit_from`] ended.
pub(crate) enum FitOutcome {
    /// Every epoch ran, or patience ran out; `model` is the best epoch's network.
    Finished {
        /// Boxed: a network is much larger than the other variant.
        model: Box<Network>,
        history: Vec<EpochStats>,
    },
    /// A signal arrived; a checkpoint of the position was saved.
    Stopped { by: Interrupt, position: String },
}

/// Where a run stands between two batches: everything a checkpoint saves.
pub(crate) struct RunState {
    pub trainer: Trainer,
    pub position: Position,
    /// The epochs finished so far.
    pub history: Vec<EpochStats>,
    /// The network of the best epoch so far.
    pub best: Option<BestEpoch>,
}

/// Saves a checkpoint of the run where it stands.
pub(crate) type SaveCheckpoint<'a> = dyn FnMut(&RunState) -> Result<()> + 'a;

/// [`fit`], starting from a checkpoint when there is one, calling `save_checkpoint` after
/// every epoch and when Ctrl-C or SIGTERM asks it to stop (after the batch in progress).
/// A batch's shuffle and learning rate depend only on the seed and its position, so a resumed
/// run takes the same steps as one that was never interrupted.
pub(crate) fn fit_from(
    run: &FitRun,
    start: Option<Checkpoint>,
    save_checkpoint: &mut SaveCheckpoint,
    progress: &mut dyn TrainProgress,
) -> Result<FitOutcome> {
    if run.train.is_empty() {
        bail!("no training photos");
    }
    let settings = run.settings;
    if settings.epochs == 0 {
        // No checkpoint is written, so none is resumed.
        ensure!(
            start.is_none(),
            "a run of --epochs 0 has no checkpoint to resume"
        );
        let trainer = Trainer::new(run.classes, run.device, settings)?;
        return last_layer_alone(run, trainer, progress);
    }
    let mut state = match start {
        Some(start) => RunState {
            trainer: Trainer::restore(
                run.classes,
                run.device,
                start.model,
                start.optimizer,
                settings,
            )?,
            position: start.state.position,
            history: start.state.history,
            best: start.best,
        },
        None => RunState {
            trainer: Trainer::new(run.classes, run.device, settings)?,
            position: Position {
                epoch: 1,
                ..Position::default()
            },
            history: Vec::new(),
            best: None,
        },
    };
    while state.position.epoch <= settings.epochs
        && !out_of_patience(&state.history, settings.patience)
    {
        let epoch = state.position.epoch;
        let timing = match run_epoch(run, &mut state, save_checkpoint, progress)? {
            ControlFlow::Continue(timing) => timing,
            ControlFlow::Break(stopped) => return Ok(stopped),
        };
        let (val_loss, val_accuracy) = validate(run, &state.trainer)
            .with_context(|| format!("validation after epoch {epoch} stopped"))?;
        let stats = EpochStats {
            epoch,
            train_loss: state.position.loss_sum / run.train.len() as f64,
            train_accuracy: state.position.correct as f64 / run.train.len() as f64,
            val_loss,
            val_accuracy,
            train_images_per_sec: timing.photos as f64 / timing.seconds,
            train_seconds: timing.seconds,
        };
        progress.epoch_finished(&stats, settings.epochs);
        state.history.push(stats);
        if best_epoch(&state.history) == Some(epoch) {
            state.best = Some(BestEpoch {
                epoch,
                model: state.trainer.network_bytes()?,
            });
        }
        state.position = Position {
            epoch: epoch + 1,
            ..Position::default()
        };
        save_checkpoint(&state)?;
        let patience_ran_out = out_of_patience(&state.history, settings.patience);
        if epoch < settings.epochs && patience_ran_out {
            let kept = kept_epoch(&state.history).epoch;
            progress.note(&format!(
                "Validation accuracy has not improved for {} epochs: stopping early; \
                 keeping epoch {kept}.",
                epoch - kept
            ));
        }
        if let Some(by) = (run.stop)() {
            if epoch == settings.epochs || patience_ran_out {
                // Nothing is left to train: saving the model is the quickest way out.
                progress.note(&format!(
                    "{} came after the last epoch: saving the model.",
                    by.name()
                ));
            } else {
                return Ok(FitOutcome::Stopped {
                    by,
                    position: format!("the end of epoch {epoch} of {}", settings.epochs),
                });
            }
        }
    }
    let model = match state.best {
        Some(best) => {
            network_from_bytes(settings.network, run.classes, 0.0, run.device, best.model)?
        }
        None => state.trainer.model().valid(),
    };
    Ok(FitOutcome::Finished {
        model: Box::new(model),
        history: state.history,
    })
}

/// The L2 penalty of the last layer fitted alone ([`fit_linear`]): on 20 and 100 Kaggle photos
/// a class, 0.001 to 1 gave the same accuracy, and 0.001 the probabilities that matched it best
/// (docs/accuracy.md).
const LAST_LAYER_PENALTY: f64 = 1e-3;

/// `--epochs 0` for a network started from ImageNet's weights: no training steps; the new last
/// layer is fitted to the pooled features ImageNet's network computes for every training photo
/// and its mirror image ([`fit_linear`]), everything else stays as ImageNet left it. One pass,
/// reported as epoch 0 (its loss and accuracy the fit's, on the photos as they are), then
/// validated as an epoch is. No checkpoint: the pass is quicker than an epoch of training, and
/// Ctrl-C or SIGTERM stops it with nothing saved.
fn last_layer_alone(
    run: &FitRun,
    mut trainer: Trainer,
    progress: &mut dyn TrainProgress,
) -> Result<FitOutcome> {
    let started = Instant::now();
    let set = run.train;
    let network = trainer.model().valid().folded();
    let indices: Vec<usize> = (0..set.len()).collect();
    let chunks: Vec<&[usize]> = indices.chunks(run.settings.batch_size).collect();
    progress.epoch_started(0, 0, chunks.len());
    // The photos' feature rows, in order; then their mirror images', appended after the pass.
    let mut rows = Vec::with_capacity(2 * set.len());
    let mut mirrored = Vec::with_capacity(set.len());
    let mut photos = 0;
    let stopped = |by| FitOutcome::Stopped {
        by,
        position: "the pass that fits the last layer".to_string(),
    };
    for chunk in &chunks {
        if let Some(by) = (run.stop)() {
            return Ok(stopped(by));
        }
        let pixels = run
            .normalization
            .to_chw(chunk.iter().map(|&i| set.image(i)), set.size());
        let input = images_on(pixels, run.device);
        for (rows, input) in [(&mut rows, input.clone()), (&mut mirrored, input.flip([3]))] {
            let features = explain_panic(Batch::Chosen(chunk.len()), || {
                network.features(input).map(float_rows)
            })?
            .with_context(|| {
                format!(
                    "--epochs 0: {} has no last layer to fit alone",
                    network.kind().title()
                )
            })?;
            rows.extend(features);
        }
        photos += chunk.len();
        progress.batch_finished(&BatchStats {
            mean_loss: None,
            photos_per_sec: photos as f64 / started.elapsed().as_secs_f64(),
        });
    }
    rows.append(&mut mirrored);
    let labels = set.labels();
    let both_labels: Vec<usize> = labels.iter().chain(labels).copied().collect();
    let asked = std::cell::Cell::new(None);
    let asked_to_stop = || {
        asked.set((run.stop)());
        asked.get().is_some()
    };
    let Some(fit) = fit_linear(
        &rows,
        &both_labels,
        run.classes,
        LAST_LAYER_PENALTY,
        &asked_to_stop,
    ) else {
        return Ok(stopped(
            asked.get().expect("the fit stops only when asked to"),
        ));
    };
    ensure!(
        fit.weight.iter().chain(&fit.bias).all(|v| v.is_finite()),
        "fitting the last layer went wrong: its weights are not all finite numbers (the \
         photos' features may be; try --precision f32)"
    );
    let plain = &rows[..set.len()];
    let (loss, correct) = fit.loss_and_correct(plain, labels);
    let width = plain.first().map_or(0, Vec::len);
    trainer.set_classifier(
        TensorData::new(fit.weight, [width, run.classes]),
        TensorData::new(fit.bias, [run.classes]),
    );
    let seconds = started.elapsed().as_secs_f64();
    let (val_loss, val_accuracy) =
        validate(run, &trainer).context("validation after fitting the last layer stopped")?;
    let stats = EpochStats {
        epoch: 0,
        train_loss: loss,
        train_accuracy: correct as f64 / set.len() as f64,
        val_loss,
        val_accuracy,
        train_images_per_sec: set.len() as f64 / seconds,
        train_seconds: seconds,
    };
    progress.epoch_finished(&stats, 0);
    Ok(FitOutcome::Finished {
        model: Box::new(trainer.model().valid()),
        history: vec![stats],
    })
}

/// The training photos one epoch processed since this process started or resumed it, and
/// its wall time.
struct EpochTiming {
    photos: usize,
    seconds: f64,
}

/// The batches of epoch `state.position.epoch` from the one it reached, each a training step
/// while the next batches are prepared on a helper thread. Breaks off, with a checkpoint
/// saved, when a signal asks training to stop.
/// (One function: the helper thread's scope has to enclose the loop over its batches.)
fn run_epoch(
    run: &FitRun,
    state: &mut RunState,
    save_checkpoint: &mut SaveCheckpoint,
    progress: &mut dyn TrainProgress,
) -> Result<ControlFlow<FitOutcome, EpochTiming>> {
    let settings = run.settings;
    let epoch = state.position.epoch;
    let steps_per_epoch = run.train.len().div_ceil(settings.batch_size);
    let total_steps = steps_per_epoch * settings.epochs;
    let batches = batch_indices(
        run.train.len(),
        settings.batch_size,
        Some(settings.seed + epoch as u64),
    );
    progress.epoch_started(epoch, settings.epochs, batches.len());
    let started = Instant::now();
    let mut photos_since_start = 0;
    let augmentation = settings.augment.is_on().then_some(AugmentEpoch {
        kind: settings.augment,
        seed: settings.seed,
        epoch,
    });
    let first = state.position.batches_done;
    if first > batches.len() {
        bail!(
            "the checkpoint says {first} batches of epoch {epoch} are done, but an epoch of {} \
             photos in batches of {} has {}: not a position catdog wrote",
            run.train.len(),
            settings.batch_size,
            batches.len()
        );
    }
    // Every batch before `first` was full.
    let mut photos_this_epoch = (first * settings.batch_size).min(run.train.len());
    state
        .trainer
        .freeze_backbone(epoch <= settings.frozen_epochs);
    let flow = std::thread::scope(|scope| -> Result<ControlFlow<FitOutcome>> {
        let ready = prefetch(
            scope,
            run.train,
            &batches,
            first,
            run.normalization,
            augmentation,
        );
        for (i, batch) in ready.into_iter().enumerate() {
            let i = first + i;
            let photos = batch.len();
            let step = (epoch - 1) * steps_per_epoch + i;
            let learning_rate =
                settings
                    .schedule
                    .learning_rate(settings.learning_rate, step, total_steps);
            state.trainer.seed_step(step);
            let Step { loss, correct } = state
                .trainer
                .step(batch, learning_rate)
                .with_context(|| format!("training stopped in epoch {epoch}, batch {}", i + 1))?;
            if !loss.is_finite() {
                bail!(
                    "the loss became {loss} in epoch {epoch}: training diverged; \
                     try a lower --lr (it is {})",
                    settings.learning_rate
                );
            }
            let position = &mut state.position;
            position.loss_sum += loss * photos as f64;
            position.correct += correct;
            position.batches_done = i + 1;
            photos_since_start += photos;
            photos_this_epoch += photos;
            progress.batch_finished(&BatchStats {
                mean_loss: Some(position.loss_sum / photos_this_epoch as f64),
                photos_per_sec: photos_since_start as f64 / started.elapsed().as_secs_f64(),
            });
            if let Some(by) = (run.stop)() {
                save_checkpoint(state)?;
                return Ok(ControlFlow::Break(FitOutcome::Stopped {
                    by,
                    position: format!(
                        "epoch {epoch} of {}, {} of {} batches",
                        settings.epochs,
                        i + 1,
                        batches.len()
                    ),
                }));
            }
        }
        Ok(ControlFlow::Continue(()))
    })?;
    if let ControlFlow::Break(stopped) = flow {
        return Ok(ControlFlow::Break(stopped));
    }
    run.device
        .sync()
        .context("the device failed while training")?;
    Ok(ControlFlow::Continue(EpochTiming {
        photos: photos_since_start,
        seconds: started.elapsed().as_secs_f64(),
    }))
}

/// Validation loss and accuracy of the network as trained so far; `None` without
/// validation photos.
fn validate(run: &FitRun, trainer: &Trainer) -> Result<(Option<f64>, Option<f64>)> {
    if run.val.is_empty() {
        return Ok((None, None));
    }
    let model = trainer.model().valid().folded();
    let runner = Runner::new(
        &model,
        run.val.size(),
        run.normalization,
        run.device,
        run.settings.batch_size,
    );
    let (loss, accuracy) = runner.evaluate(run.val)?;
    Ok((Some(loss), Some(accuracy)))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::data::{stratified_split, synth};
    use crate::device::{CpuBackend, cpu_backend};
    use crate::model::{NetworkKind, with_imagenet_weights};

    /// Runs two epochs of 18 training pictures in batches of 6 (3 batches an epoch), with a
    /// signal arriving at the `signal_at`-th question the loop asks (1 = after the first
    /// batch); returns the outcome and how many checkpoints were saved.
    fn two_epochs_with_a_signal_at(signal_at: usize) -> (FitOutcome, usize) {
        let all = synth::generate(20, 16, 4);
        let (train, val) = stratified_split(all.labels(), 0.1, 4);
        let (train, val) = (all.select(&train), all.select(&val));
        let settings = TrainSettings {
            epochs: 2,
            batch_size: 6,
            ..TrainSettings::default()
        };
        let asked = Cell::new(0);
        let stop = || {
            asked.set(asked.get() + 1);
            (asked.get() == signal_at).then_some(Interrupt::Interrupted)
        };
        let device = cpu_backend(CpuBackend::Flex).device;
        let run = FitRun {
            train: &train,
            val: &val,
            classes: 2,
            settings: &settings,
            normalization: &Normalization::default(),
            device: &device,
            stop: &stop,
        };
        let saved = Cell::new(0);
        let outcome = fit_from(
            &run,
            None,
            &mut |_| {
                saved.set(saved.get() + 1);
                Ok(())
            },
            &mut (),
        )
        .unwrap();
        (outcome, saved.get())
    }

    /// `--epochs 0`: one pass, reported as epoch 0, fits the new last layer to ImageNet's
    /// features of the training pictures; the network returned answers them as the fit did
    /// (so the weights went in the right way round) and its features are still ImageNet's.
    #[test]
    fn no_epochs_fits_the_last_layer_alone() {
        let size = 32;
        let all = synth::generate(40, size, 3);
        let (train, val) = stratified_split(all.labels(), 0.1, 4);
        let (train, val) = (all.select(&train), all.select(&val));
        let settings = TrainSettings {
            epochs: 0,
            image_size: size,
            batch_size: 16,
            ..TrainSettings::for_network(NetworkKind::EfficientNetLite0)
        };
        let device = cpu_backend(CpuBackend::Flex).device;
        let normalization = settings.normalization();
        let (model, history) =
            fit(&train, &val, 2, &settings, &normalization, &device, &mut ()).unwrap();
        assert_eq!(history.len(), 1);
        let pass = &history[0];
        assert_eq!(pass.epoch, 0);
        assert!(pass.train_accuracy >= 0.9, "{pass:?}");
        assert!(pass.val_accuracy.is_some(), "{pass:?}");

        let pixels = normalization.to_chw((0..train.len()).map(|i| train.image(i)), size);
        let input = images_on(pixels, &device);
        let answers: Vec<i64> = model
            .forward(input.clone())
            .argmax(1)
            .into_data()
            .iter::<i64>()
            .collect();
        let right = answers
            .iter()
            .zip(train.labels())
            .filter(|&(&answer, &label)| answer as usize == label)
            .count();
        let fitted = (pass.train_accuracy * train.len() as f64).round() as usize;
        assert!(right.abs_diff(fitted) <= 1, "{right} vs {fitted}");

        let imagenet = with_imagenet_weights(
            Network::new(NetworkKind::EfficientNetLite0, 2, 0.0, &device),
            true,
            &device,
        )
        .unwrap();
        let ours: Vec<f32> = model
            .features(input.clone())
            .unwrap()
            .into_data()
            .iter::<f32>()
            .collect();
        let theirs: Vec<f32> = imagenet
            .features(input)
            .unwrap()
            .into_data()
            .iter::<f32>()
            .collect();
        let largest = ours
            .iter()
            .zip(&theirs)
            .fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(largest < 1e-4, "features moved by {largest}");

        // A signal stops the pass, with no checkpoint to save.
        let run = FitRun {
            train: &train,
            val: &val,
            classes: 2,
            settings: &settings,
            normalization: &normalization,
            device: &device,
            stop: &|| Some(Interrupt::Terminated),
        };
        let mut saved = 0;
        let mut save = |_: &RunState| {
            saved += 1;
            Ok(())
        };
        let outcome = fit_from(&run, None, &mut save, &mut ()).unwrap();
        assert!(
            matches!(outcome, FitOutcome::Stopped { by: Interrupt::Terminated, ref position }
                if position == "the pass that fits the last layer"),
            "the pass went on after the signal"
        );
        assert_eq!(saved, 0);
    }

    #[test]
    fn a_signal_mid_epoch_stops_after_that_batch_with_a_checkpoint() {
        let (outcome, saved) = two_epochs_with_a_signal_at(2);
        let FitOutcome::Stopped { by, position } = outcome else {
            panic!("the run went on after the signal")
        };
        assert_eq!(by, Interrupt::Interrupted);
        assert_eq!(position, "epoch 1 of 2, 2 of 3 batches");
        assert_eq!(saved, 1, "one checkpoint, of the position reached");
    }

    /// The questions: 3 batches and the end of epoch 1, then 3 batches and the end of
    /// epoch 2, asked during its validation's aftermath: the 8th.
    #[test]
    fn a_signal_after_the_last_batch_saves_the_model_instead_of_stopping() {
        let (outcome, saved) = two_epochs_with_a_signal_at(8);
        assert!(
            matches!(outcome, FitOutcome::Finished { ref history, .. } if history.len() == 2),
            "the run must finish, not stop, with no epoch left"
        );
        assert_eq!(saved, 2, "a checkpoint after each epoch");
        let (outcome, _) = two_epochs_with_a_signal_at(4);
        assert!(
            matches!(outcome, FitOutcome::Stopped { ref position, .. } if position == "the end of epoch 1 of 2"),
            "with an epoch left, the run stops"
        );
    }
}
