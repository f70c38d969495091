//! Files that are never seen half-written: every file catdog writes goes to a temporary name
//! beside its final one, is flushed to disk, then renamed into place. Temporary names share
//! one prefix, so a killed run's leftovers can be recognised and swept.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};

/// catdog's folder in the user's cache: `$XDG_CACHE_HOME/catdog` or `~/.cache/catdog`, on
/// macOS `~/Library/Caches/catdog`, on Windows `%LOCALAPPDATA%\catdog`; `None` where the
/// environment names no home.
pub(crate) fn user_cache_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).map(PathBuf::from);
    let base = if cfg!(windows) {
        var("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        var("HOME").map(|home| home.join("Library/Caches"))
    } else {
        var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|home| home.join(".cache")))
    };
    Some(base?.join("catdog"))
}

/// Temporary files start with this, so that leftovers of a killed run can be recognised.
pub(crate) const PARTIAL_PREFIX: &str = ".catdog-partial-";

/// Writes `bytes` to a temporary file beside `path`, flushes it to disk, then renames it
/// over `path`: readers see the old file or the new one, never a part.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = partial_file_beside(path)?;
    file.write_all(bytes)
        .and_then(|()| file.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    sync_folder(&folder_of(path));
    Ok(())
}

/// Flushes `dir`'s entries to disk, so that a rename into it survives a power cut (Unix; on
/// Windows a rename is flushed with the file). Best effort: some file systems refuse it.
pub(crate) fn sync_folder(dir: &Path) {
    #[cfg(unix)]
    if let Ok(folder) = fs::File::open(dir) {
        let _ = folder.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// The folder `path` is in.
pub(crate) fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A temporary file in `path`'s folder, deleted unless it is persisted.
fn partial_file_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    partial_file_in(&folder_of(path))
}

/// A temporary file in `dir` under the shared prefix, deleted unless it is persisted. It is
/// locked while its handle lives, so that [`remove_partial_files`] in another process leaves
/// it alone.
pub(crate) fn partial_file_in(dir: &Path) -> Result<tempfile::NamedTempFile> {
    let file = tempfile::Builder::new()
        .prefix(PARTIAL_PREFIX)
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a file in {}", dir.display()))?;
    // A file system without locks only loses the protection of a file being written.
    let _ = file.as_file().try_lock();
    Ok(file)
}

/// Removes the temporary files in `dir` of runs that were killed while writing: those that
/// no process holds locked.
pub(crate) fn remove_partial_files(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let partial = entry
            .file_name()
            .to_string_lossy()
            .starts_with(PARTIAL_PREFIX);
        let abandoned = || fs::File::open(entry.path()).is_ok_and(|file| file.try_lock().is_ok());
        if partial && abandoned() {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Bytes free for this user in the file system of `dir`.
pub(crate) fn available_bytes(dir: &Path) -> Result<u64> {
    fs4::available_space(dir)
        .with_context(|| format!("cannot read the free space of {}", dir.display()))
}

/// `12.3 MiB`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    format!("{:.1} MiB", bytes as f64 / MIB)
}

/// The size and CRC-32 that a description file records for a file it belongs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checksum {
    pub bytes: u64,
    pub crc32: u32,
}

impl Checksum {
    pub fn of(bytes: &[u8]) -> Checksum {
        Checksum {
            bytes: bytes.len() as u64,
            crc32: crc32fast::hash(bytes),
        }
    }
}

/// Reads `path` and checks it against the `expected` size and checksum recorded in
/// `described_in`: a damaged file or one that does not belong there is refused.
pub(crate) fn read_checked(
    path: &Path,
    expected: Checksum,
    described_in: &Path,
) -> Result<Vec<u8>> {
    let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    ensure!(
        bytes.len() as u64 == expected.bytes,
        "{} has {} bytes but {} says {}: the two files do not belong together \
         (a partial copy or an interrupted save?)",
        path.display(),
        bytes.len(),
        described_in.display(),
        expected.bytes
    );
    ensure!(
        crc32fast::hash(&bytes) == expected.crc32,
        "{} is damaged: its checksum does not match the one in {}",
        path.display(),
        described_in.display()
    );
    Ok(bytes)
}

/// The names of the files in `dir` ending in `suffix`, sorted: what a test expects a folder
/// to hold.
#[cfg(test)]
pub(crate) fn names_ending_in(dir: &Path, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(suffix))
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_removes_abandoned_partial_files_and_spares_one_being_written() {
        let dir = tempfile::tempdir().unwrap();
        let abandoned = dir.path().join(format!("{PARTIAL_PREFIX}killed"));
        fs::write(&abandoned, "half").unwrap();
        let being_written = partial_file_in(dir.path()).unwrap();
        let other = dir.path().join("model.safetensors");
        fs::write(&other, "kept").unwrap();
        remove_partial_files(dir.path());
        assert!(!abandoned.exists());
        assert!(being_written.path().exists(), "its writer still holds it");
        assert!(other.exists());
    }
}
