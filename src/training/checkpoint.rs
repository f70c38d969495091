//! Checkpoints: where a training run stands, so that it can continue after Ctrl-C, a kill or
//! a crash, losing at most the epoch in progress.
//!
//! `DIR/checkpoint/` holds the network and the optimizer state as burnpack files (which keep
//! the parameter ids that AdamW's moments are keyed by) under names unique to the position,
//! the best epoch's network (the one the run will save), and `state.json`, written last,
//! naming them. Every file is renamed into place when
//! complete, so a run killed at any moment leaves the previous checkpoint intact.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use serde::{Deserialize, Serialize};

use super::history::{BestEpoch, EpochStats};
use crate::fs::{
    Checksum, is_plain_name, read_checked, read_description, read_regular, write_atomically,
};
use crate::model::{
    ARCHITECTURE_VERSION, IMAGE_SIZES, MAX_CLASSES, Network, TrainSettings, check_description,
    weights_ceiling,
};
use burn::tensor::Device;

const CHECKPOINT_DIR: &str = "checkpoint";
const STATE_FILE: &str = "state.json";
/// Bumped when `state.json` changes incompatibly. Format 2 kept the training loop's settings
/// in `run.fit`; format 3 keeps every setting in `run` ([`upgrade`] reads format 2).
const FORMAT_VERSION: u32 = 3;

/// What a run was started with, kept in its checkpoint: its settings, and what its pictures
/// turned out to be. A resumed run must match it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    #[serde(flatten)]
    pub settings: TrainSettings,
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

impl RunRecord {
    /// The record of a run of `settings` on pictures of `classes` identified by `fingerprint`
    /// (and by `listing`, for a photo folder).
    pub fn new(
        settings: &TrainSettings,
        classes: &[String],
        fingerprint: &str,
        listing: Option<&str>,
    ) -> RunRecord {
        RunRecord {
            settings: settings.clone(),
            classes: classes.to_vec(),
            data_fingerprint: fingerprint.to_string(),
            data_listing: listing.map(str::to_string),
        }
    }
}

/// A point in the run: `batches_done` batches of epoch `epoch` (from 1) are done.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Position {
    pub epoch: usize,
    pub batches_done: usize,
    /// Sum of the per-photo training losses so far in this epoch, for its mean.
    pub loss_sum: f64,
    /// Training photos classified correctly so far in this epoch.
    pub correct: usize,
}

/// `state.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckpointState {
    pub format_version: u32,
    pub architecture: String,
    pub architecture_version: u32,
    pub run: RunRecord,
    pub position: Position,
    /// The epochs finished so far.
    pub history: Vec<EpochStats>,
    pub model_file: String,
    pub model_bytes: u64,
    pub model_crc32: u32,
    pub optimizer_file: String,
    pub optimizer_bytes: u64,
    pub optimizer_crc32: u32,
    /// The network of the epoch with the best validation accuracy so far.
    pub best: Option<BestFile>,
}

/// Where a checkpoint keeps the best epoch's network.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BestFile {
    pub epoch: usize,
    pub file: String,
    pub bytes: u64,
    pub crc32: u32,
}

/// A checkpoint read back: its state, the two serialised halves of the trainer, and the best
/// epoch's network.
pub struct Checkpoint {
    pub state: CheckpointState,
    pub model: Vec<u8>,
    pub optimizer: Vec<u8>,
    pub best: Option<BestEpoch>,
}

/// The checkpoint folder of the model folder `out`.
pub fn dir(out: &Path) -> PathBuf {
    out.join(CHECKPOINT_DIR)
}

/// Writes a checkpoint into `out/checkpoint/`, then removes the files of the previous one.
pub fn save(
    out: &Path,
    run: &RunRecord,
    position: &Position,
    history: &[EpochStats],
    model: &[u8],
    optimizer: &[u8],
    best: Option<&BestEpoch>,
) -> Result<()> {
    let dir = dir(out);
    fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the checkpoint folder {}", dir.display()))?;
    let tag = format!("e{}b{}", position.epoch, position.batches_done);
    let (model_sum, optimizer_sum) = (Checksum::of(model), Checksum::of(optimizer));
    let state = CheckpointState {
        format_version: FORMAT_VERSION,
        architecture: run.settings.network.name().to_string(),
        architecture_version: ARCHITECTURE_VERSION,
        run: run.clone(),
        position: position.clone(),
        history: history.to_vec(),
        model_file: format!("model-{tag}.bpk"),
        model_bytes: model_sum.bytes,
        model_crc32: model_sum.crc32,
        optimizer_file: format!("optimizer-{tag}.bpk"),
        optimizer_bytes: optimizer_sum.bytes,
        optimizer_crc32: optimizer_sum.crc32,
        best: best.map(|best| {
            let checksum = Checksum::of(&best.model);
            BestFile {
                epoch: best.epoch,
                file: format!("best-e{}.bpk", best.epoch),
                bytes: checksum.bytes,
                crc32: checksum.crc32,
            }
        }),
    };
    write_atomically(&dir.join(&state.model_file), model)?;
    write_atomically(&dir.join(&state.optimizer_file), optimizer)?;
    if let (Some(best), Some(file)) = (best, &state.best) {
        // Usually written by an earlier checkpoint of this run; but a file of that name may
        // be another run's (an --out folder used again) or a half-finished one's: only the
        // same bytes are kept.
        let path = dir.join(&file.file);
        let same = read_regular(&path, best.model.len() as u64).ok();
        if same.as_deref() != Some(&best.model[..]) {
            write_atomically(&path, &best.model)?;
        }
    }
    let mut json = serde_json::to_vec_pretty(&state)?;
    json.push(b'\n');
    write_atomically(&dir.join(STATE_FILE), &json)?;

    // The previous checkpoint's files are no longer named by state.json.
    for entry in fs::read_dir(&dir)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let kept = name == state.model_file
            || name == state.optimizer_file
            || state.best.as_ref().is_some_and(|best| best.file == name);
        if name.ends_with(".bpk") && !kept {
            let _ = fs::remove_file(entry.path());
        }
    }
    Ok(())
}

/// Removes the checkpoint in `out` (its `state.json` and network files, then the folder if
/// nothing else is in it), for a run that writes none (`--epochs 0`) and saves its model
/// there: an earlier run's checkpoint would otherwise be taken for this model's.
pub(crate) fn remove(out: &Path) -> Result<()> {
    let dir = dir(out);
    let Ok(entries) = fs::read_dir(&dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == STATE_FILE || name.ends_with(".bpk") {
            fs::remove_file(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
        }
    }
    let _ = fs::remove_dir(&dir);
    Ok(())
}

/// The state of the checkpoint in `out`, if there is one; an error if it is unreadable.
/// The checkpoint's `state.json` for the run in `out`.
pub(crate) fn state_path(out: &Path) -> PathBuf {
    dir(out).join(STATE_FILE)
}

pub fn read_state(out: &Path) -> Result<Option<CheckpointState>> {
    let path = state_path(out);
    if !path.exists() {
        return Ok(None);
    }
    let text = read_description(&path)?;
    let not_ours = || format!("{} is not a catdog checkpoint", path.display());
    let mut state: serde_json::Value = serde_json::from_str(&text).with_context(not_ours)?;
    upgrade(&mut state);
    let state: CheckpointState = serde_json::from_value(state).with_context(not_ours)?;
    let network = check_description(
        &path,
        "checkpoint format",
        (state.format_version, FORMAT_VERSION),
        (&state.architecture, state.architecture_version),
    )?;
    ensure!(
        network == state.run.settings.network,
        "{} describes a {} but names the settings of a {} run, so it is not a checkpoint \
         catdog wrote; delete {} to start again",
        path.display(),
        network.name(),
        state.run.settings.network.name(),
        dir(out).display()
    );
    let files = [&state.model_file, &state.optimizer_file]
        .into_iter()
        .chain(state.best.as_ref().map(|best| &best.file));
    for name in files {
        ensure!(
            is_plain_name(name),
            "{} names {name:?} as one of its files: not a plain file name beside it, so it is \
             not a checkpoint catdog wrote; delete {} to start again",
            path.display(),
            dir(out).display()
        );
    }
    ensure!(
        (2..=MAX_CLASSES).contains(&state.run.classes.len()),
        "{} names {} classes, where a run has 2 to {MAX_CLASSES}: not a checkpoint catdog \
         wrote; delete {} to start again",
        path.display(),
        state.run.classes.len(),
        dir(out).display()
    );
    let position = &state.position;
    ensure!(
        position.epoch >= 1
            && state.history.len() < position.epoch
            && position.epoch <= state.run.settings.epochs + 1
            && position.loss_sum.is_finite()
            && position.correct
                <= position
                    .batches_done
                    .saturating_mul(state.run.settings.batch_size),
        "{} puts the run at epoch {} with {} epochs done, {} batches in, of a run of {} epochs: \
         not a position catdog wrote; delete {} to start again",
        path.display(),
        position.epoch,
        state.history.len(),
        position.batches_done,
        state.run.settings.epochs,
        dir(out).display()
    );
    ensure!(
        IMAGE_SIZES.contains(&state.run.settings.image_size),
        "{} names an image size of {} px; catdog trains at {} to {} px, so it is not a \
         checkpoint catdog wrote; delete {} to start again",
        path.display(),
        state.run.settings.image_size,
        IMAGE_SIZES.start(),
        IMAGE_SIZES.end(),
        dir(out).display()
    );
    Ok(Some(state))
}

/// Reads a format-2 `state.json` as format 3: the loop's settings, kept in `run.fit` then,
/// join the others in `run`. Any other format is left for [`check_description`] to judge.
fn upgrade(state: &mut serde_json::Value) {
    if state["format_version"] == 2
        && let Some(run) = state.get_mut("run").and_then(|run| run.as_object_mut())
        && let Some(serde_json::Value::Object(fit)) = run.remove("fit")
    {
        for (key, value) in fit {
            run.entry(key).or_insert(value);
        }
        state["format_version"] = FORMAT_VERSION.into();
    }
}

/// The whole checkpoint in `out`, checked to be complete; `None` where there is none.
pub fn load(out: &Path) -> Result<Option<Checkpoint>> {
    let Some(state) = read_state(out)? else {
        return Ok(None);
    };
    let dir = dir(out);
    let state_path = dir.join(STATE_FILE);
    // Sizes past what the run's network fills are refused before anything is read: the
    // network's weights in f32, and the optimizer's two moments of each.
    let network = Network::new(
        state.run.settings.network,
        state.run.classes.len(),
        0.0,
        &Device::flex(),
    );
    let weights = weights_ceiling(&network);
    let read = |name: &str, bytes: u64, crc32: u32, ceiling: u64| {
        ensure!(
            bytes <= ceiling,
            "{} says {name} holds {bytes} bytes, more than the {ceiling} its network fills: \
             not a checkpoint catdog wrote; delete {} to start again",
            state_path.display(),
            dir.display()
        );
        read_checked(&dir.join(name), Checksum { bytes, crc32 }, &state_path)
    };
    let model = read(
        &state.model_file,
        state.model_bytes,
        state.model_crc32,
        weights,
    )?;
    let optimizer = read(
        &state.optimizer_file,
        state.optimizer_bytes,
        state.optimizer_crc32,
        3 * weights,
    )?;
    let best = match &state.best {
        Some(best) => Some(BestEpoch {
            epoch: best.epoch,
            model: read(&best.file, best.bytes, best.crc32, weights)?,
        }),
        None => None,
    };
    Ok(Some(Checkpoint {
        state,
        model,
        optimizer,
        best,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunRecord {
        RunRecord {
            settings: TrainSettings {
                generated_count: 20,
                image_size: 16,
                ..TrainSettings::default()
            },
            classes: vec!["cat".into(), "dog".into()],
            data_fingerprint: "test".into(),
            data_listing: None,
        }
    }

    fn position(epoch: usize) -> Position {
        Position {
            epoch,
            ..Position::default()
        }
    }

    fn bpk_files(out: &Path) -> Vec<String> {
        crate::fs::names_ending_in(&dir(out), ".bpk")
    }

    #[test]
    fn the_best_epoch_survives_later_checkpoints_and_reads_back() {
        let out = tempfile::tempdir().unwrap();
        let out = out.path();
        let best = BestEpoch {
            epoch: 1,
            model: vec![1, 2, 3],
        };
        save(out, &run(), &position(2), &[], b"m1", b"o1", Some(&best)).unwrap();
        save(out, &run(), &position(3), &[], b"m2", b"o2", Some(&best)).unwrap();
        assert_eq!(
            bpk_files(out),
            ["best-e1.bpk", "model-e3b0.bpk", "optimizer-e3b0.bpk"]
        );
        let loaded = load(out).unwrap().unwrap();
        assert_eq!(loaded.best, Some(best));
        assert_eq!(
            (loaded.model, loaded.optimizer),
            (b"m2".to_vec(), b"o2".to_vec())
        );

        let better = BestEpoch {
            epoch: 3,
            model: vec![4, 5],
        };
        save(out, &run(), &position(4), &[], b"m3", b"o3", Some(&better)).unwrap();
        assert_eq!(
            bpk_files(out),
            ["best-e3.bpk", "model-e4b0.bpk", "optimizer-e4b0.bpk"]
        );
        assert_eq!(load(out).unwrap().unwrap().best, Some(better.clone()));

        // Another run's best epoch 3, of the same size, in a folder used again.
        save(out, &run(), &position(1), &[], b"m0", b"o0", None).unwrap();
        fs::write(dir(out).join("best-e3.bpk"), [6, 7]).unwrap();
        save(out, &run(), &position(4), &[], b"m3", b"o3", Some(&better)).unwrap();
        assert_eq!(
            load(out).unwrap().unwrap().best,
            Some(better),
            "the stale file of the same name and size is replaced"
        );

        fs::write(dir(out).join("best-e3.bpk"), [9, 9]).unwrap();
        let damaged = load(out).err().expect("a damaged best epoch is refused");
        assert!(
            format!("{damaged:#}").contains("best-e3.bpk"),
            "{damaged:#}"
        );
    }

    /// A checkpoint of format 2 (the loop's settings in `run.fit`, as catdog wrote until the
    /// settings were described once) still resumes: read as format 3, with the defaults of
    /// settings older checkpoints lack.
    #[test]
    fn a_format_2_checkpoint_reads_as_format_3() {
        let out = tempfile::tempdir().unwrap();
        let out = out.path();
        save(out, &run(), &position(1), &[], b"m", b"o", None).unwrap();
        let path = dir(out).join(STATE_FILE);
        let mut state: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        state["format_version"] = 2.into();
        let run_json = state["run"].as_object_mut().unwrap();
        let mut fit = serde_json::Map::new();
        for key in [
            "epochs",
            "batch_size",
            "learning_rate",
            "schedule",
            "weight_decay",
            "seed",
            "augment",
            "patience",
        ] {
            fit.insert(key.to_string(), run_json.remove(key).unwrap());
        }
        for absent in ["network", "dropout", "label_smoothing", "precision"] {
            run_json.remove(absent).unwrap();
        }
        fit.insert("epochs".into(), 7.into());
        fit.insert("schedule".into(), "onecycle".into());
        fit.insert("augment".into(), true.into());
        run_json.insert("fit".into(), fit.into());
        fs::write(&path, state.to_string()).unwrap();

        let read = read_state(out).unwrap().unwrap();
        assert_eq!(read.format_version, FORMAT_VERSION);
        let settings = &read.run.settings;
        assert_eq!(settings.epochs, 7);
        assert_eq!(settings.schedule, crate::model::Schedule::OneCycle);
        assert_eq!(settings.augment, crate::data::Augmentation::Light);
        assert_eq!(settings.image_size, 16);
        assert_eq!(settings.network, crate::model::NetworkKind::SmallCnn);
        assert_eq!(settings.precision, crate::device::Precision::F32);
        assert_eq!((settings.dropout, settings.label_smoothing), (0.0, 0.0));

        // Written again, flat.
        save(out, &read.run, &position(2), &[], b"m", b"o", None).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(!text.contains("\"fit\""), "{text}");
        assert!(text.contains("\"format_version\": 3"), "{text}");
    }

    /// `state.json` can only name files beside it, at image sizes catdog trains at: not
    /// `/dev/zero`, not `../../x`, not 100,000 px.
    #[test]
    fn a_state_naming_files_elsewhere_or_a_huge_image_size_is_refused() {
        let out = tempfile::tempdir().unwrap();
        let out = out.path();
        save(out, &run(), &position(1), &[], b"m", b"o", None).unwrap();
        let path = dir(out).join(STATE_FILE);
        let state: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        for (field, value) in [
            ("model_file", serde_json::json!("/dev/zero")),
            ("optimizer_file", serde_json::json!("../../x")),
        ] {
            let mut bad = state.clone();
            bad[field] = value.clone();
            fs::write(&path, bad.to_string()).unwrap();
            let err = format!("{:#}", read_state(out).unwrap_err());
            assert!(
                err.contains(&format!("names {value} as one of its files")),
                "{err}"
            );
        }
        let mut bad = state.clone();
        bad["run"]["image_size"] = 100_000.into();
        fs::write(&path, bad.to_string()).unwrap();
        let err = format!("{:#}", read_state(out).unwrap_err());
        assert!(err.contains("an image size of 100000 px"), "{err}");

        // Positions and counts no run reaches.
        for (edit, expected) in [
            (
                serde_json::json!({"position": {"epoch": 0}}),
                "puts the run at epoch 0",
            ),
            (
                serde_json::json!({"position": {"epoch": 99}}),
                "puts the run at epoch 99",
            ),
            (
                serde_json::json!({"position": {"correct": 1_000_000_000_000u64}}),
                "not a position catdog wrote",
            ),
            (
                serde_json::json!({"run": {"classes": ["cat"]}}),
                "names 1 classes, where a run has 2 to",
            ),
            (
                serde_json::json!({"model_bytes": 3u64 << 30}),
                "more than the",
            ),
        ] {
            let mut bad = state.clone();
            for (section, fields) in edit.as_object().unwrap() {
                match fields.as_object() {
                    Some(fields) => {
                        for (field, value) in fields {
                            bad[section][field] = value.clone();
                        }
                    }
                    None => bad[section] = fields.clone(),
                }
            }
            fs::write(&path, bad.to_string()).unwrap();
            let err = match read_state(out) {
                Err(err) => format!("{err:#}"),
                Ok(_) => format!("{:#}", load(out).err().expect(expected)),
            };
            assert!(err.contains(expected), "{expected}: {err}");
        }

        // A state that is a pipe is refused, not waited on.
        #[cfg(unix)]
        {
            fs::remove_file(&path).unwrap();
            let status = std::process::Command::new("mkfifo")
                .arg(&path)
                .status()
                .unwrap();
            assert!(status.success());
            let err = format!("{:#}", read_state(out).unwrap_err());
            assert!(err.contains("is not a regular file"), "{err}");
        }
    }
}
