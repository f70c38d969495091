//! Every rule about continuing a run: where it stands, which flags may come with `--resume`,
//! when a folder's unfinished run must not be overwritten, and that the photos and settings
//! are still the ones it was started with.

use std::path::Path;

use anyhow::{Result, bail};

use super::checkpoint::{self, Checkpoint, CheckpointState};
use super::history::out_of_patience;
use super::progress::TrainProgress;
use super::request::TrainRequest;
use super::schedule::Schedule;
use super::settings::{RunSettings, TrainOptions};
use crate::data::Augmentation;
use crate::device::Precision;
use crate::model::NetworkKind;

impl CheckpointState {
    /// True when every epoch is done, or patience ran out: there is nothing left to resume.
    pub fn finished(&self) -> bool {
        self.history.len() >= self.run.fit.epochs
            || out_of_patience(&self.history, self.run.fit.patience)
    }

    /// "epoch 3 of 5, 12 batches in".
    pub fn describe(&self) -> String {
        if self.history.len() >= self.run.fit.epochs {
            return match self.run.fit.epochs {
                1 => "its one epoch done".to_string(),
                n => format!("all {n} epochs done"),
            };
        }
        if self.finished() {
            return format!("stopped early after epoch {}", self.history.len());
        }
        let mut text = format!("epoch {} of {}", self.position.epoch, self.run.fit.epochs);
        if self.position.batches_done > 0 {
            text.push_str(&format!(", {} batches in", self.position.batches_done));
        }
        text
    }
}

impl TrainRequest {
    /// The options to train with, checked: a new run's, or with `resume` those of the run
    /// checkpointed in `out` (a flag that disagrees with them is refused).
    pub fn options(&self) -> Result<TrainOptions> {
        let options = if self.resume {
            resumed_options(self)?
        } else {
            self.new_run()
        };
        options.check()?;
        Ok(options)
    }
}

/// With `--resume`, where the run in `options.out` is finished and its model saved there:
/// the sentence saying there is nothing left to do. (A run that finished but was stopped
/// before its model was saved resumes, and saves it.)
pub(crate) fn nothing_left(options: &TrainOptions) -> Result<Option<String>> {
    if !options.resume {
        return Ok(None);
    }
    let out = &options.out;
    // The model must be this run's: saved after its last checkpoint. (A run started again in
    // the folder and stopped before saving leaves the earlier run's model, older than it.)
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let saved_after_the_checkpoint = match (
        modified(&crate::model::info_path(out)),
        modified(&checkpoint::state_path(out)),
    ) {
        (Some(model), Some(state)) => model >= state,
        _ => false,
    };
    Ok(checkpoint::read_state(out)?
        .filter(|state| {
            state.finished() && crate::model::is_model_folder(out) && saved_after_the_checkpoint
        })
        .map(|state| {
            format!(
                "the run in {} is already finished ({}), and its model is saved there: \
                 nothing to resume. `catdog predict --model {} PHOTO` uses it; \
                 `catdog train --out {}` without --resume starts a new run there",
                out.display(),
                state.describe(),
                out.display(),
                out.display()
            )
        }))
}

/// The checkpoint a run starts from: with `options.resume` the one in `options.out`;
/// otherwise none, and a folder holding an unfinished run is refused rather than overwritten.
pub(crate) fn starting_point(
    options: &TrainOptions,
    progress: &mut dyn TrainProgress,
) -> Result<Option<Checkpoint>> {
    let out = &options.out;
    if options.resume {
        let start = there_is_one(checkpoint::load(out)?, out)?;
        progress.note(&format!(
            "resuming the run in {} at {}",
            out.display(),
            start.state.describe()
        ));
        return Ok(Some(start));
    }
    if let Some(state) = checkpoint::read_state(out)?
        && !state.finished()
    {
        bail!(
            "{} holds an unfinished run ({}): continue it with `catdog train --resume \
             --out {}`, or delete {} to start again",
            out.display(),
            state.describe(),
            out.display(),
            checkpoint::dir(out).display()
        );
    }
    Ok(None)
}

/// The options the checkpointed run in `request.out` was started with; a flag given with
/// `--resume` must agree with them.
fn resumed_options(request: &TrainRequest) -> Result<TrainOptions> {
    let out = &request.out();
    let state = there_is_one(checkpoint::read_state(out)?, out)?;
    let options = TrainOptions::of_run(&state.run, out);
    let settings = &options.settings;
    let conflicts: Vec<String> = [
        request
            .data
            .as_ref()
            .filter(|d| options.data.as_ref() != Some(*d))
            .map(|d| {
                let used = options.data.as_ref().map_or_else(
                    || "generated pictures".to_string(),
                    |data| data.display().to_string(),
                );
                format!("--data {} (the run uses {used})", d.display())
            }),
        differs("--generated", request.generated, options.generated_count),
        differs(
            "--network",
            request.network.map(NetworkKind::name),
            settings.network.name(),
        ),
        differs("--image-size", request.image_size, options.image_size),
        differs("--epochs", request.epochs, settings.epochs),
        differs("--batch-size", request.batch_size, settings.batch_size),
        differs("--lr", request.learning_rate, settings.learning_rate),
        differs(
            "--schedule",
            request.schedule.map(Schedule::name),
            settings.schedule.name(),
        ),
        differs(
            "--weight-decay",
            request.weight_decay,
            settings.weight_decay,
        ),
        differs("--dropout", request.dropout, settings.dropout),
        differs(
            "--label-smoothing",
            request.label_smoothing,
            settings.label_smoothing,
        ),
        differs(
            "--patience",
            request.patience.map(|n| n.to_string()),
            settings
                .patience
                .map_or("none".to_string(), |n| n.to_string()),
        ),
        differs("--val-split", request.val_split, options.val_split),
        differs("--seed", request.seed, settings.seed),
        differs(
            "--precision",
            request.precision.map(Precision::name),
            options.precision.name(),
        ),
        differs(
            "--augment",
            request.augment.map(Augmentation::name),
            settings.augment.name(),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !conflicts.is_empty() {
        bail!(
            "--resume continues the run in {} with the settings it was started with; \
             these differ: {}",
            out.display(),
            conflicts.join(", ")
        );
    }
    Ok(options)
}

/// Refuses to resume `started` with a different dataset or image size. A photo folder whose
/// names and sizes are those the run started with, only with other modification times (a copy
/// of it, or one restored from a backup), is the same: resumed, with the note returned.
pub(crate) fn check_same_run(
    started: &RunSettings,
    now: &RunSettings,
    out: &Path,
) -> Result<Option<String>> {
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
    if started.data != now.data {
        return refuse(format!(
            "it was started on {}, not {}",
            source(started),
            source(now)
        ));
    }
    let copied = started.data_fingerprint != now.data_fingerprint
        && started.data_listing.is_some()
        && started.data_listing == now.data_listing;
    if started.data_fingerprint != now.data_fingerprint && !copied {
        return refuse(format!(
            "it was started on {}, and the photos there are not the same now (photos added, \
             removed, renamed or changed)",
            source(now)
        ));
    }
    let started = RunSettings {
        data_fingerprint: now.data_fingerprint.clone(),
        data_listing: now.data_listing.clone(),
        ..started.clone()
    };
    if &started != now {
        return refuse("its settings differ".to_string());
    }
    Ok(copied.then(|| {
        format!(
            "the photos in {} have other modification times than when the run started (copied \
             or restored?); their names and sizes are the same, so the run goes on with them",
            source(now)
        )
    }))
}

/// The checkpoint found in `out`, or the error that there is none to resume.
fn there_is_one<T>(found: Option<T>, out: &Path) -> Result<T> {
    match found {
        Some(found) => Ok(found),
        None => bail!(
            "no checkpoint to resume in {}: `catdog train --out {}` writes one after every epoch",
            out.display(),
            out.display()
        ),
    }
}

/// `"FLAG VALUE (the run uses RUN)"` when a flag was given with a value other than the run's.
fn differs<T: PartialEq + std::fmt::Display>(
    flag: &str,
    given: Option<T>,
    run: T,
) -> Option<String> {
    given
        .filter(|value| *value != run)
        .map(|value| format!("{flag} {value} (the run uses {run})"))
}
