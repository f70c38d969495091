//! The `--out` folder of a training run, claimed before any work starts: it must be writable,
//! have room for the model and its checkpoint, and belong to this run alone (a lock file
//! holding the owner's pid; a lock whose process is gone is stale and taken over).

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::fs::{partial_file_in, remove_partial_files};

const LOCK_FILE: &str = ".catdog.lock";

/// The folder, locked for as long as this value lives.
#[derive(Debug)]
pub struct OutFolder {
    lock: PathBuf,
}

impl OutFolder {
    /// Creates `dir` if needed and checks that `needed_bytes` fit in it, then takes the lock.
    /// Returns the folder and, where a dead run's lock was taken over, a line saying so.
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
        let lock = dir.join(LOCK_FILE);
        let took_over = take_lock(&lock)?;
        remove_partial_files(dir);
        Ok((OutFolder { lock }, took_over))
    }
}

impl Drop for OutFolder {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.lock);
    }
}

/// Creates the lock file holding this process's pid; a lock left by a process that no longer
/// runs is replaced. Returns a note when that happened.
fn take_lock(lock: &Path) -> Result<Option<String>> {
    let mut took_over = None;
    for _ in 0..2 {
        match OpenOptions::new().write(true).create_new(true).open(lock) {
            Ok(mut file) => {
                writeln!(file, "{}", std::process::id())
                    .with_context(|| format!("cannot write {}", lock.display()))?;
                return Ok(took_over);
            }
            Err(err) if err.kind() == ErrorKind::AlreadyExists => {
                let owner = fs::read_to_string(lock).unwrap_or_default();
                match owner.trim().parse::<i32>() {
                    Ok(pid) if process_is_running(pid) => bail!(
                        "{} is in use by another catdog train (pid {pid}); wait for it, \
                         or choose another --out",
                        lock.parent().unwrap_or(lock).display()
                    ),
                    _ => {
                        fs::remove_file(lock).with_context(|| {
                            format!("cannot remove the stale lock {}", lock.display())
                        })?;
                        took_over = Some(format!(
                            "removed a stale lock {} left by a run that no longer exists (pid {})",
                            lock.display(),
                            owner.trim()
                        ));
                    }
                }
            }
            Err(err) => {
                return Err(err).with_context(|| format!("cannot create {}", lock.display()));
            }
        }
    }
    bail!(
        "cannot take the lock {}: another run keeps creating it",
        lock.display()
    )
}

fn process_is_running(pid: i32) -> bool {
    use nix::errno::Errno;
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    // Signal 0 checks that the process exists; EPERM means it does, owned by someone else.
    pid > 0 && matches!(kill(Pid::from_raw(pid), None), Ok(()) | Err(Errno::EPERM))
}

fn available_bytes(dir: &Path) -> Result<u64> {
    let stats = nix::sys::statvfs::statvfs(dir)
        .with_context(|| format!("cannot read the free space of {}", dir.display()))?;
    Ok(stats.blocks_available() as u64 * stats.fragment_size() as u64)
}

fn human_bytes(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    format!("{:.1} MiB", bytes as f64 / MIB)
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
        assert!(!dir.path().join(LOCK_FILE).exists());
        OutFolder::claim(dir.path(), 1).unwrap();
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

        let (_folder, note) = OutFolder::claim(dir.path(), 1).unwrap();
        assert!(note.unwrap().contains(&format!("pid {dead}")));
        assert!(!partial.exists());
        let owner = fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(owner.trim(), std::process::id().to_string());
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
