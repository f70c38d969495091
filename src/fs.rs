//! Files that are never seen half-written: every file catdog writes goes to a temporary name
//! beside its final one, is flushed to disk, then renamed into place. Temporary names share
//! one prefix, so a killed run's leftovers can be recognised and swept.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};

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
    Ok(())
}

/// A temporary file in `path`'s folder, deleted unless it is persisted.
fn partial_file_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    partial_file_in(&dir)
}

/// A temporary file in `dir` under the shared prefix, deleted unless it is persisted.
pub(crate) fn partial_file_in(dir: &Path) -> Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(PARTIAL_PREFIX)
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a file in {}", dir.display()))
}

/// Removes the temporary files of a run that was killed while writing into `dir`.
pub(crate) fn remove_partial_files(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with(PARTIAL_PREFIX)
        {
            let _ = fs::remove_file(entry.path());
        }
    }
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
