//! Every rule about continuing a run: where it stands, which flags may come with `--resume`,
//! when a folder's unfinished run must not be overwritten, and that the photos and settings
//! are still the ones it was started with.

use std::path::Path;

use anyhow::{Result, bail};

use super::checkpoint::RunRecord;
use super::checkpoint::{self, Checkpoint, CheckpointState};
use super::history::out_of_patience;
use super::progress::TrainProgress;
use super::settings::TrainOptions;
use crate::model::TrainSettings;

impl CheckpointState {
    /// True when every epoch is done, or patience ran out: there is nothing left to resume.
    pub fn finished(&self) -> bool {
        self.history.len() >= self.run.settings.epochs
            || out_of_patience(&self.history, self.run.settings.patience)
    }

    /// "epoch 3 of 5, 12 batches in".
    pub fn describe(&self) -> String {
        if self.history.len() >= self.run.settings.epochs {
            return match self.run.settings.epochs {
                1 => "its one epoch done".to_string(),
                n => format!("all {n} epochs done"),
            };
        }
        if self.finished() {
            return format!("stopped early after epoch {}", self.history.len());
        }
        let mut text = format!(
            "epoch {} of {}",
            self.position.epoch, self.run.settings.epochs
        );
        if self.position.batches_done > 0 {
            text.push_str(&format!(", {} batches in", self.position.batches_done));
        }
        text
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

/// The settings of the run checkpointed in `out`. `flags` (those given with `--resume`) must
/// change none of them: each one that would is named, with the run's value.
pub(super) fn resumed_settings(
    flags: &dyn Fn(&mut TrainSettings),
    out: &Path,
) -> Result<TrainSettings> {
    let run = there_is_one(checkpoint::read_state(out)?, out)?
        .run
        .settings;
    let mut asked = run.clone();
    flags(&mut asked);
    let conflicts: Vec<String> = asked
        .as_flags()
        .into_iter()
        .zip(run.as_flags())
        .filter(|((_, given), (_, used))| given != used)
        .map(|((flag, given), (_, used))| format!("{flag} {given} (the run uses {used})"))
        .collect();
    if !conflicts.is_empty() {
        bail!(
            "--resume continues the run in {} with the settings it was started with; \
             these differ: {}",
            out.display(),
            conflicts.join(", ")
        );
    }
    Ok(run)
}

/// Refuses to resume `started` with a different dataset or image size. A photo folder whose
/// names and sizes are those the run started with, only with other modification times (a copy
/// of it, or one restored from a backup), is the same: resumed, with the note returned.
pub(crate) fn check_same_run(
    started: &RunRecord,
    now: &RunRecord,
    out: &Path,
) -> Result<Option<String>> {
    let source = |run: &RunRecord| {
        run.settings.data.as_ref().map_or_else(
            || format!("{} generated pictures", run.settings.generated_count),
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
    if started.settings.image_size != now.settings.image_size {
        return refuse(format!(
            "it was started at {} px, not {} px",
            started.settings.image_size, now.settings.image_size
        ));
    }
    if started.classes != now.classes {
        return refuse(format!(
            "it was started with classes {:?}, the photos now have {:?}",
            started.classes, now.classes
        ));
    }
    if started.settings.data != now.settings.data {
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
    let started = RunRecord {
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
            "no checkpoint to resume in {}: `catdog train --out {}` writes one after every epoch \
             (a run of --epochs 0 writes none)",
            out.display(),
            out.display()
        ),
    }
}
