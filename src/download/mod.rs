//! `catdog download`: from nothing to a folder of photos catdog trains on, in one command.
//!
//! The archive is fetched into `<DIR>.<file>.part` beside the folder, and an interrupted
//! download resumes there (an HTTP Range request) when run again. It is verified before
//! anything is unpacked: its MD5 where it is known, its size and structure otherwise (every
//! entry listed, none that would land outside the folder, photos of both classes). It is
//! unpacked into a temporary folder that is renamed to DIR at the end, so a half-unpacked set
//! is never found under DIR.

mod archive;
mod http;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

use crate::fs::{available_bytes, folder_of, sync_folder, try_lock_file, write_atomically};
use crate::numbers::human_bytes;

pub use archive::{Format, Layout};

/// An archive of cat and dog photos on the internet.
#[derive(Clone, Debug)]
pub struct Source {
    /// The name `catdog download` takes.
    pub name: &'static str,
    /// What it is and its licence, for people.
    pub title: &'static str,
    pub url: &'static str,
    /// The archive's size and MD5 (lower-case hex), where they are known.
    pub size: Option<u64>,
    pub md5: Option<&'static str>,
    /// The most bytes fetched where `size` is not known: a server that sends more is
    /// stopped there, and the part removed.
    pub max_size: u64,
    pub format: Format,
    pub layout: Layout,
}

/// The data sets `catdog download` knows.
pub const SOURCES: [Source; 2] = [
    Source {
        name: "oxford-pets",
        title: "the Oxford-IIIT Pet images (7,390 photos of 37 breeds, CC BY-SA 4.0)",
        url: "https://www.robots.ox.ac.uk/~vgg/data/pets/data/images.tar.gz",
        size: Some(791_918_971),
        md5: Some("5c4f3ee8e5d25df40f4fd59a7f44e54c"),
        max_size: 791_918_971,
        format: Format::TarGz,
        layout: Layout::BreedCase,
    },
    Source {
        name: "kaggle",
        title: "Microsoft's copy of the Kaggle Dogs vs. Cats photos (about 25,000)",
        url: "https://download.microsoft.com/download/3/E/1/\
              3E1C3F21-ECDB-4869-8368-6DEBA77B919F/kagglecatsanddogs_5340.zip",
        size: None,
        md5: None,
        // Its size is published nowhere catdog can check: about 800 MB when fetched in 2026-12.
        max_size: 4 << 30,
        format: Format::Zip,
        layout: Layout::ClassFolders,
    },
];

impl Source {
    /// The source named `name`.
    pub fn named(name: &str) -> Option<&'static Source> {
        SOURCES.iter().find(|source| source.name == name)
    }

    /// The archive's file name, the last part of its URL.
    fn file_name(&self) -> &'static str {
        self.url.rsplit('/').next().unwrap_or(self.url)
    }

    /// Where to fetch it: its own URL, or the same file name under `mirror`.
    pub fn url_at(&self, mirror: Option<&str>) -> String {
        match mirror {
            Some(base) => format!("{}/{}", base.trim_end_matches('/'), self.file_name()),
            None => self.url.to_string(),
        }
    }

    /// What to do without a network.
    fn by_hand(&self, url: &str, to: &Path) -> String {
        format!(
            "To download it by hand: open {url} in a browser (or run `curl -LO {url}`), then \
             `catdog download {} --archive {} --to {}`.",
            self.name,
            self.file_name(),
            to.display()
        )
    }
}

/// Where to put the photos, and where the archive comes from.
#[derive(Clone, Debug)]
pub struct Request {
    /// The folder to create, with `cat/` and `dog/` inside.
    pub to: PathBuf,
    /// A server holding the same archive under the same file name, instead of `url`.
    pub mirror: Option<String>,
    /// An archive already on disk (downloaded by hand), instead of the network.
    pub archive: Option<PathBuf>,
}

/// What a download left in the folder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub source: String,
    pub to: PathBuf,
    /// Photos laid out per class: `cat`, `dog`.
    pub cats: usize,
    pub dogs: usize,
    /// Archive entries that are no photo of either class (notes, masks, `Thumbs.db`).
    pub other_entries: usize,
    /// Photos left out because they are empty or not images at all, with the reason.
    pub left_out: Vec<(String, String)>,
    /// Bytes fetched by this run (0 when resumed complete, or from `--archive`).
    #[serde(default)]
    pub fetched_bytes: u64,
    /// The folder was there from an earlier download; nothing was fetched.
    #[serde(default)]
    pub already_there: bool,
}

/// What a download is doing, for a progress display.
pub trait DownloadProgress {
    /// A step begins: `what` says it; `total` and `done` count bytes, or photos when
    /// `bytes` is false.
    fn step_started(&mut self, what: &str, bytes: bool, total: Option<u64>, done: u64);
    fn advanced(&mut self, by: u64);
    fn step_finished(&mut self);
}

/// No display (tests, libraries).
impl DownloadProgress for () {
    fn step_started(&mut self, _: &str, _: bool, _: Option<u64>, _: u64) {}
    fn advanced(&mut self, _: u64) {}
    fn step_finished(&mut self) {}
}

/// The record a finished download leaves in its folder, so that running it again is a no-op.
const MARKER: &str = ".catdog-download.json";

/// Fetches, verifies and unpacks `source` as `request` says.
pub fn download(
    source: &Source,
    request: &Request,
    progress: &mut dyn DownloadProgress,
) -> Result<Summary> {
    let to = &request.to;
    // The summary records the folder as text: a name that is not text is refused before any
    // work, not after the unpacking.
    ensure!(
        to.to_str().is_some(),
        "--to {}: the folder's name is not valid UTF-8 text, which catdog records it as; \
         choose a name of letters, digits and punctuation",
        to.display()
    );
    if let Some(summary) = finished_before(source, to)? {
        return Ok(summary);
    }
    let parent = folder_of(to);
    fs::create_dir_all(&parent)
        .with_context(|| format!("cannot create folder {}", parent.display()))?;
    let folder_name = to
        .file_name()
        .with_context(|| format!("--to {} names no folder", to.display()))?
        .to_string_lossy()
        .into_owned();
    // One download into a folder at a time: a second one would take the first's unpacking
    // folder for a leftover and remove it under it.
    let lock_path = parent.join(format!(".{folder_name}.catdog-lock"));
    let _lock = DownloadLock {
        _file: try_lock_file(&lock_path)?.with_context(|| {
            format!(
                "another `catdog download` is writing {} (it holds {}): wait for it to finish",
                to.display(),
                lock_path.display()
            )
        })?,
        path: lock_path.clone(),
    };
    // Another download may have finished it while this one waited for the lock.
    if let Some(summary) = finished_before(source, to)? {
        return Ok(summary);
    }

    let (archive_path, fetched_bytes) = match &request.archive {
        Some(path) => {
            ensure!(path.is_file(), "archive {} does not exist", path.display());
            (path.clone(), 0)
        }
        None => {
            let part = parent.join(format!("{folder_name}.{}.part", source.file_name()));
            let url = source.url_at(request.mirror.as_deref());
            // Room for the rest of the archive and for the photos unpacked from it.
            let room = |total: u64, have: u64| {
                let needed = total
                    .saturating_sub(have)
                    .checked_add(total)
                    .with_context(|| {
                        format!("{url} announces {total} bytes, more than any disk holds")
                    })?;
                check_room(&parent, needed, "the download and its photos")
            };
            let fetched =
                http::fetch(&url, &part, source.size, source.max_size, &room, progress)
                    .map_err(|err| anyhow::anyhow!("{err:#}\n{}", source.by_hand(&url, to)))?;
            (part, fetched)
        }
    };
    // A downloaded archive that fails a check is removed, so the next run fetches it afresh;
    // one named with --archive is the user's, and stays.
    let downloaded = request.archive.is_none();
    let checked = verify(source, &archive_path, progress)
        .and_then(|()| archive::plan(&archive_path, source.format, source.layout, progress));
    let plan = match checked {
        Ok(plan) => plan,
        Err(err) if downloaded => {
            http::remove_part(&archive_path)?;
            return Err(err.context(format!(
                "removed {}: run the same command again to download it afresh",
                archive_path.display()
            )));
        }
        Err(err) => return Err(err),
    };
    check_room(&parent, plan.bytes, "the photos")?;

    let unpacking = parent.join(format!(".{folder_name}.catdog-partial"));
    if unpacking.exists() {
        fs::remove_dir_all(&unpacking)
            .with_context(|| format!("cannot remove the leftover {}", unpacking.display()))?;
    }
    let unpacked = archive::unpack(&archive_path, source.format, &plan, &unpacking, progress);
    let summary = unpacked.and_then(|unpacked| {
        let summary = Summary {
            source: source.name.to_string(),
            to: to.clone(),
            cats: unpacked.photos[0],
            dogs: unpacked.photos[1],
            other_entries: plan.other_entries,
            left_out: unpacked.left_out,
            fetched_bytes,
            already_there: false,
        };
        let mut json = serde_json::to_vec_pretty(&summary)?;
        json.push(b'\n');
        write_atomically(&unpacking.join(MARKER), &json)?;
        move_into_place(&unpacking, to)?;
        Ok(summary)
    });
    match summary {
        Ok(summary) => {
            if downloaded {
                let _ = http::remove_part(&archive_path);
            }
            Ok(summary)
        }
        Err(err) => {
            let _ = fs::remove_dir_all(&unpacking);
            // An archive that cannot be read to its end (a bad CRC, a cut stream) is fetched
            // afresh next time, not unpacked again and again; one that failed for want of disk
            // space, say, is kept.
            if downloaded && err.downcast_ref::<archive::Damaged>().is_some() {
                http::remove_part(&archive_path)?;
                return Err(err.context(format!(
                    "removed {}: run the same command again to download it afresh",
                    archive_path.display()
                )));
            }
            Err(err)
        }
    }
}

/// The lock file of a download in progress, removed (while still locked) when it ends.
struct DownloadLock {
    _file: fs::File,
    path: PathBuf,
}

impl Drop for DownloadLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// The summary of an earlier download of `source` into `to`; an error if `to` holds
/// something else.
fn finished_before(source: &Source, to: &Path) -> Result<Option<Summary>> {
    if !to.exists() {
        return Ok(None);
    }
    if let Ok(text) = fs::read_to_string(to.join(MARKER))
        && let Ok(summary) = serde_json::from_str::<Summary>(&text)
        && summary.source == source.name
    {
        return Ok(Some(Summary {
            to: to.to_path_buf(),
            fetched_bytes: 0,
            already_there: true,
            ..summary
        }));
    }
    let empty = to.is_dir()
        && fs::read_dir(to)
            .with_context(|| format!("cannot read folder {}", to.display()))?
            .next()
            .is_none();
    if !empty {
        bail!(
            "{} already exists and is not a `catdog download {}` folder: choose another \
             --to, or remove it",
            to.display(),
            source.name
        );
    }
    Ok(None)
}

/// Checks the archive's size and MD5, where `source` knows them.
fn verify(source: &Source, path: &Path, progress: &mut dyn DownloadProgress) -> Result<()> {
    let size = fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if let Some(expected) = source.size {
        ensure!(
            size == expected,
            "{} has {size} bytes, {} has {expected}: it is not that archive, or not all of it",
            path.display(),
            source.name
        );
    }
    let Some(expected) = source.md5 else {
        return Ok(());
    };
    progress.step_started("checking the MD5", true, Some(size), 0);
    let mut file =
        fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut hasher = Md5::new();
    let mut buffer = vec![0; 1 << 20];
    loop {
        let n = std::io::Read::read(&mut file, &mut buffer)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        progress.advanced(n as u64);
    }
    progress.step_finished();
    let found: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    ensure!(
        found == expected,
        "{} has MD5 {found}, {} has {expected}: the file is damaged, or the server sent \
         another one",
        path.display(),
        source.name
    );
    Ok(())
}

/// Refuses to start when `dir`'s file system has fewer than `needed` bytes free.
fn check_room(dir: &Path, needed: u64, what: &str) -> Result<()> {
    let free = available_bytes(dir)?;
    ensure!(
        free >= needed,
        "{} has {} free, {what} need {}: free some space, or choose another --to",
        dir.display(),
        human_bytes(free),
        human_bytes(needed)
    );
    Ok(())
}

/// Renames the unpacked folder to `to` (an empty folder there is replaced).
fn move_into_place(unpacked: &Path, to: &Path) -> Result<()> {
    if to.is_dir() {
        fs::remove_dir(to).with_context(|| format!("cannot replace {}", to.display()))?;
    }
    fs::rename(unpacked, to)
        .with_context(|| format!("cannot rename {} to {}", unpacked.display(), to.display()))?;
    sync_folder(&folder_of(to));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_little_free_space_is_refused_with_both_figures() {
        let dir = tempfile::tempdir().unwrap();
        check_room(dir.path(), 1, "one byte").unwrap();
        let err = check_room(dir.path(), u64::MAX, "the photos")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("free, the photos need") && err.contains(" TiB"),
            "{err}"
        );
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
    }

    #[test]
    fn a_mirror_serves_the_same_file_name() {
        let pets = Source::named("oxford-pets").unwrap();
        assert_eq!(
            pets.url_at(Some("http://127.0.0.1:8000/sets/")),
            "http://127.0.0.1:8000/sets/images.tar.gz"
        );
        assert_eq!(pets.url_at(None), pets.url);
        assert!(Source::named("imagenet").is_none());
    }
}
