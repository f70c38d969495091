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

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

use crate::model::{ARCHITECTURE, ARCHITECTURE_VERSION};
use crate::saved_model::write_atomically;
use crate::train::{BestEpoch, EpochStats, FitSettings, out_of_patience};

pub const CHECKPOINT_DIR: &str = "checkpoint";
pub const STATE_FILE: &str = "state.json";
/// Bumped when `state.json` changes incompatibly.
pub const FORMAT_VERSION: u32 = 2;

/// What a run was started with: a resumed run must match it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The photo folder, or `None` for generated pictures.
    pub data: Option<PathBuf>,
    pub generated_count: usize,
    pub image_size: u32,
    pub val_split: f64,
    pub fit: FitSettings,
    pub classes: Vec<String>,
    /// Identifies the exact photos (names, sizes, modification times); see
    /// [`crate::dataset::Dataset::fingerprint`].
    pub data_fingerprint: String,
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
    pub run: RunSettings,
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

impl CheckpointState {
    /// True when every epoch is done, or patience ran out: there is nothing left to resume.
    pub fn finished(&self) -> bool {
        self.history.len() >= self.run.fit.epochs
            || out_of_patience(&self.history, self.run.fit.patience)
    }

    /// "epoch 3 of 5, 12 batches in".
    pub fn describe(&self) -> String {
        if self.history.len() >= self.run.fit.epochs {
            return format!("all {} epochs done", self.run.fit.epochs);
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

/// A checkpoint read back: its state, the two serialised halves of the trainer, and the best
/// epoch's network.
pub struct Checkpoint {
    pub state: CheckpointState,
    pub model: Vec<u8>,
    pub optimizer: Vec<u8>,
    pub best: Option<BestEpoch>,
}

pub fn dir(out: &Path) -> PathBuf {
    out.join(CHECKPOINT_DIR)
}

/// Writes a checkpoint into `out/checkpoint/`, then removes the files of the previous one.
pub fn save(
    out: &Path,
    run: &RunSettings,
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
    let state = CheckpointState {
        format_version: FORMAT_VERSION,
        architecture: ARCHITECTURE.to_string(),
        architecture_version: ARCHITECTURE_VERSION,
        run: run.clone(),
        position: position.clone(),
        history: history.to_vec(),
        model_file: format!("model-{tag}.bpk"),
        model_bytes: model.len() as u64,
        model_crc32: crc32fast::hash(model),
        optimizer_file: format!("optimizer-{tag}.bpk"),
        optimizer_bytes: optimizer.len() as u64,
        optimizer_crc32: crc32fast::hash(optimizer),
        best: best.map(|best| BestFile {
            epoch: best.epoch,
            file: format!("best-e{}.bpk", best.epoch),
            bytes: best.model.len() as u64,
            crc32: crc32fast::hash(&best.model),
        }),
    };
    write_atomically(&dir.join(&state.model_file), model)?;
    write_atomically(&dir.join(&state.optimizer_file), optimizer)?;
    if let (Some(best), Some(file)) = (best, &state.best) {
        // Unchanged since the checkpoint that wrote it, unless that one was never completed.
        let path = dir.join(&file.file);
        if !fs::metadata(&path).is_ok_and(|meta| meta.len() == file.bytes) {
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

/// The state of the checkpoint in `out`, if there is one; an error if it is unreadable.
pub fn read_state(out: &Path) -> Result<Option<CheckpointState>> {
    let path = dir(out).join(STATE_FILE);
    if !path.exists() {
        return Ok(None);
    }
    let text =
        fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let state: CheckpointState = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a catdog checkpoint", path.display()))?;
    ensure!(
        state.format_version == FORMAT_VERSION,
        "{} has checkpoint format {}, this catdog reads format {FORMAT_VERSION}",
        path.display(),
        state.format_version
    );
    ensure!(
        state.architecture == ARCHITECTURE && state.architecture_version == ARCHITECTURE_VERSION,
        "{} is a checkpoint of a {} v{}, this catdog trains {ARCHITECTURE} v{ARCHITECTURE_VERSION}",
        path.display(),
        state.architecture,
        state.architecture_version
    );
    Ok(Some(state))
}

/// The whole checkpoint in `out`, checked to be complete.
pub fn load(out: &Path) -> Result<Checkpoint> {
    let Some(state) = read_state(out)? else {
        bail!(
            "no checkpoint to resume in {} (it is written at the end of every epoch of \
             `catdog train --out {}`)",
            out.display(),
            out.display()
        );
    };
    let dir = dir(out);
    let read = |name: &str, expected_bytes: u64, expected_crc32: u32| -> Result<Vec<u8>> {
        let path = dir.join(name);
        let bytes = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        ensure!(
            bytes.len() as u64 == expected_bytes && crc32fast::hash(&bytes) == expected_crc32,
            "{} is damaged: its size or checksum does not match {STATE_FILE}",
            path.display()
        );
        Ok(bytes)
    };
    let model = read(&state.model_file, state.model_bytes, state.model_crc32)?;
    let optimizer = read(
        &state.optimizer_file,
        state.optimizer_bytes,
        state.optimizer_crc32,
    )?;
    let best = match &state.best {
        Some(best) => Some(BestEpoch {
            epoch: best.epoch,
            model: read(&best.file, best.bytes, best.crc32)?,
        }),
        None => None,
    };
    Ok(Checkpoint {
        state,
        model,
        optimizer,
        best,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunSettings {
        RunSettings {
            data: None,
            generated_count: 20,
            image_size: 16,
            val_split: 0.1,
            fit: FitSettings::default(),
            classes: vec!["cat".into(), "dog".into()],
            data_fingerprint: "test".into(),
        }
    }

    fn position(epoch: usize) -> Position {
        Position {
            epoch,
            ..Position::default()
        }
    }

    fn bpk_files(out: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir(out))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".bpk"))
            .collect();
        names.sort();
        names
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
        let loaded = load(out).unwrap();
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
        assert_eq!(load(out).unwrap().best, Some(better));

        fs::write(dir(out).join("best-e3.bpk"), [9, 9]).unwrap();
        let damaged = load(out).err().expect("a damaged best epoch is refused");
        assert!(
            format!("{damaged:#}").contains("best-e3.bpk"),
            "{damaged:#}"
        );
    }
}
