//! The `--out` folder of a training run, claimed before any work starts: it must be writable,
//! have room for the model and its checkpoint, and belong to this run alone. The claim is an
//! OS file lock (flock, LockFileEx) on `.catdog.lock`, which the OS releases however the run
//! ends; the file holds the owner's pid only to name it in messages, and is emptied when a
//! run ends cleanly (it is never deleted: a deleted lock file could be locked twice).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::checkpoint;
use crate::fs::{available_bytes, partial_file_in, remove_partial_files};
use crate::numbers::human_bytes;

const LOCK_FILE: &str = ".catdog.lock";

/// The folder, locked for as long as this value lives.
#[derive(Debug)]
pub struct OutFolder {
    lock: File,
}

impl OutFolder {
    /// Creates `dir` if needed and checks that `needed_bytes` fit in it, then takes the lock.
    /// Returns the folder and, where a run that did not end cleanly left its pid, a line
    /// saying so.
    pub fn claim(dir: &Path, needed_bytes: u64) -> Result<(OutFolder, Option<String>)> {
        if dir.exists() && !dir.is_dir() {
            bail!(
                "--out {} is a file, not a folder: choose another --out",
                dir.display()
            );
        }
        fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the model folder {}", dir.display()))?;
        partial_file_in(dir).with_context(|| {
            format!(
                "cannot write to the model folder {}: choose another --out",
                dir.display()
            )
        })?;
        let available = available_bytes(dir)?;
        if available < needed_bytes {
            bail!(
                "the disk holding {} has {} free but the model and its checkpoint need {}: \
                 free some space or choose another --out",
                dir.display(),
                human_bytes(available),
                human_bytes(needed_bytes)
            );
        }
        let (lock, took_over) = take_lock(&dir.join(LOCK_FILE))?;
        // Left by a run killed while writing its model or a checkpoint.
        remove_partial_files(dir);
        remove_partial_files(&checkpoint::dir(dir));
        Ok((OutFolder { lock }, took_over))
    }
}

impl Drop for OutFolder {
    /// Empties the lock file: a pid left in it means a run that did not end cleanly. The OS
    /// lock goes with the file handle.
    fn drop(&mut self) {
        let _ = self.lock.set_len(0);
    }
}

/// Locks `path` (created if needed) and writes this process's pid into it. Returns a note
/// when the file still named an earlier run, which ended without releasing it.
fn take_lock(path: &Path) -> Result<(File, Option<String>)> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let mut owner = String::new();
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let _ = file.read_to_string(&mut owner);
            bail!(
                "{} is in use by another catdog train (pid {}); wait for it, or choose \
                 another --out",
                path.parent().unwrap_or(path).display(),
                owner.trim()
            );
        }
        Err(TryLockError::Error(err)) => {
            return Err(err).with_context(|| format!("cannot lock {}", path.display()));
        }
    }
    file.read_to_string(&mut owner)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let took_over = (!owner.trim().is_empty()).then(|| {
        format!(
            "took over the stale lock {} of a run that ended without releasing it (pid {})",
            path.display(),
            owner.trim()
        )
    });
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok((file, took_over))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_is_refused_until_the_first_ends() {
        let dir = tempfile::tempdir().unwrap();
        let (first, note) = OutFolder::claim(dir.path(), 1).unwrap();
        assert!(note.is_none());
        let err = OutFolder::claim(dir.path(), 1).unwrap_err().to_string();
        assert!(err.contains("in use") && err.contains(&std::process::id().to_string()));
        drop(first);
        assert_eq!(
            fs::read(dir.path().join(LOCK_FILE)).unwrap(),
            b"",
            "released"
        );
        let (_again, note) = OutFolder::claim(dir.path(), 1).unwrap();
        assert!(note.is_none(), "a cleanly released lock is no stale one");
    }

    #[test]
    fn a_stale_lock_is_taken_over_and_partial_files_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        fs::write(dir.path().join(LOCK_FILE), format!("{dead}\n")).unwrap();
        let partial = dir.path().join(format!("{}abc", crate::fs::PARTIAL_PREFIX));
        fs::write(&partial, "half a model").unwrap();
        let checkpoints = checkpoint::dir(dir.path());
        fs::create_dir(&checkpoints).unwrap();
        let partial_checkpoint = checkpoints.join(format!("{}def", crate::fs::PARTIAL_PREFIX));
        fs::write(&partial_checkpoint, "half a checkpoint").unwrap();

        let (_folder, note) = OutFolder::claim(dir.path(), 1).unwrap();
        assert!(note.unwrap().contains(&format!("pid {dead}")));
        assert!(!partial.exists() && !partial_checkpoint.exists());
        let owner = fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(owner.trim(), std::process::id().to_string());
    }

    /// The pid in the file proves nothing (pids are reused): only the OS lock counts.
    #[test]
    fn a_lock_file_naming_a_live_process_that_holds_no_lock_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let alive = std::process::id();
        fs::write(dir.path().join(LOCK_FILE), format!("{alive}\n")).unwrap();
        let (_folder, note) = OutFolder::claim(dir.path(), 1).unwrap();
        assert!(note.unwrap().contains(&format!("pid {alive}")));
    }

    #[test]
    fn too_little_room_and_a_file_in_the_way_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = OutFolder::claim(dir.path(), u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(err.contains("free") && err.contains("need"), "{err}");
        let file = dir.path().join("file");
        fs::write(&file, "").unwrap();
        let err = OutFolder::claim(&file, 1).unwrap_err().to_string();
        assert!(err.contains("is a file"), "{err}");
        let err = format!(
            "{:#}",
            OutFolder::claim(&file.join("model"), 1).unwrap_err()
        );
        assert!(err.contains("cannot create the model folder"), "{err}");
    }
}
