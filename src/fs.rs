//! Files that are never seen half-written: every file catdog writes goes to a temporary name
//! beside its final one, is flushed to disk, then renamed into place. Temporary names share
//! one prefix, so a killed run's leftovers can be recognised and swept.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};

use crate::numbers::human_bytes;

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
    let mut builder = tempfile::Builder::new();
    builder.prefix(PARTIAL_PREFIX);
    // The permissions a new file gets (0666 less the umask), not tempfile's private 0600: a
    // model in a shared folder stays readable to the others who share it.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let file = builder
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

/// Opens (creating it if needed) and locks `path` for this process alone: `None` while another
/// process holds it. The OS lock goes with the returned handle, however the process ends. A
/// holder may remove the file when it is done (while it still holds it): a lock taken on a
/// file that was removed meanwhile is let go and taken again on the file now at `path`.
pub(crate) fn try_lock_file(path: &Path) -> Result<Option<fs::File>> {
    loop {
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot create the lock file {}", path.display()))?;
        match file.try_lock() {
            Ok(()) if still_at(&file, path) => return Ok(Some(file)),
            Ok(()) => continue,
            Err(fs::TryLockError::WouldBlock) => return Ok(None),
            Err(fs::TryLockError::Error(err)) => {
                return Err(err).with_context(|| format!("cannot lock {}", path.display()));
            }
        }
    }
}

/// Whether the open `file` is still the file at `path` (Unix: the same device and inode; on
/// Windows an open file cannot be removed, so it is).
fn still_at(file: &fs::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), fs::metadata(path)) {
            (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// Bytes free for this user in the file system of `dir`.
pub(crate) fn available_bytes(dir: &Path) -> Result<u64> {
    fs4::available_space(dir)
        .with_context(|| format!("cannot read the free space of {}", dir.display()))
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

/// The length of the regular file `path`, refusing anything else (a folder, a pipe, a device:
/// reading a FIFO would wait for a writer for ever, `/dev/zero` never ends) and a file longer
/// than `limit` bytes, before a byte is read.
pub(crate) fn regular_file_length(path: &Path, limit: u64) -> Result<u64> {
    let meta = fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    ensure!(
        meta.is_file(),
        "{} is not a regular file (a folder, a pipe or a device?): catdog reads only files",
        path.display()
    );
    ensure!(
        meta.len() <= limit,
        "{} is {}, more than the {} catdog reads from such a file",
        path.display(),
        human_bytes(meta.len()),
        human_bytes(limit)
    );
    Ok(meta.len())
}

/// Reads the regular file `path` of at most `limit` bytes ([`regular_file_length`]); a file
/// that grows past the limit while it is read is refused too.
pub(crate) fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let length = regular_file_length(path, limit)?;
    let file = fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut bytes = Vec::with_capacity(length as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    ensure!(
        bytes.len() as u64 <= limit,
        "{} grew past {} while it was read",
        path.display(),
        human_bytes(limit)
    );
    Ok(bytes)
}

/// Whether `name` is a plain file name, of a file in the folder of the file that names it:
/// not empty, no folder separator, not `.` or `..`, not absolute.
pub(crate) fn is_plain_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(part)), None) if part == name
    ) && !name.contains(['/', '\\'])
}

/// The most a description file (`catdog.json`, `state.json`, a cache's index) may hold: far
/// more than catdog writes, far less than memory.
pub(crate) const DESCRIPTION_LIMIT: u64 = 1 << 20;

/// A regular file of text, of at most [`DESCRIPTION_LIMIT`] bytes ([`read_regular`]).
pub(crate) fn read_description(path: &Path) -> Result<String> {
    String::from_utf8(read_regular(path, DESCRIPTION_LIMIT)?)
        .with_context(|| format!("{} is not text (UTF-8)", path.display()))
}

/// The first `count` bytes of the regular file `path` (fewer if it is shorter).
pub(crate) fn read_prefix(path: &Path, count: u64) -> Result<Vec<u8>> {
    regular_file_length(path, u64::MAX)?;
    let file = fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(count)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(bytes)
}

/// Reads `path` and checks it against the `expected` size and checksum recorded in
/// `described_in`: a damaged file or one that does not belong there is refused, a file of
/// another size or not a regular file before a byte of it is read.
pub(crate) fn read_checked(
    path: &Path,
    expected: Checksum,
    described_in: &Path,
) -> Result<Vec<u8>> {
    let length = regular_file_length(path, u64::MAX)?;
    ensure!(
        length == expected.bytes,
        "{} has {} bytes but {} says {}: the two files do not belong together \
         (a partial copy or an interrupted save?)",
        path.display(),
        length,
        described_in.display(),
        expected.bytes
    );
    let bytes = read_regular(path, expected.bytes)?;
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
