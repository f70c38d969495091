//! Reading a downloaded archive: which entries are photos of which class (and refusing any
//! entry that would land outside the folder), then writing those photos out.
//!
//! An entry is written to `<class>/<file name>` under the new folder, a name catdog makes: an
//! archive's own paths never choose where a file lands. They are still checked, and an
//! archive with a `..`, an absolute path or a link in it is refused whole: it was not made
//! for unpacking.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use rayon::prelude::*;

use super::DownloadProgress;
use crate::data::is_photo;
use crate::fs::sync_folder;

/// The two classes, in label order, as the folders are named.
const CLASSES: [&str; 2] = ["cat", "dog"];
/// An entry larger than this is no photo of a pet.
const MAX_PHOTO_BYTES: u64 = 64 << 20;

/// How an archive is packed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    TarGz,
    Zip,
}

/// Where an archive says which class a photo shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `images/Abyssinian_1.jpg` (Oxford-IIIT Pet): a breed name with a capital letter is a
    /// cat breed, one in lower case a dog breed.
    BreedCase,
    /// `PetImages/Cat/1.jpg`, `PetImages/Dog/1.jpg` (Microsoft's Kaggle copy): the folder
    /// holding the photo names the class, in any case.
    ClassFolders,
}

impl Layout {
    /// The class (index into [`CLASSES`]) and file name of the photo at `path` inside the
    /// archive; `None` for entries that are not photos of either class.
    fn place(self, path: &str) -> Option<(usize, String)> {
        let mut parts = path.rsplit(['/', '\\']).filter(|p| !p.is_empty());
        let name = parts.next()?;
        if !is_photo(Path::new(name)) {
            return None;
        }
        let class = match self {
            Layout::BreedCase => match name.chars().next()? {
                c if c.is_uppercase() => 0,
                c if c.is_lowercase() => 1,
                _ => return None,
            },
            Layout::ClassFolders => {
                let folder = parts.next()?.to_lowercase();
                CLASSES.iter().position(|class| *class == folder)?
            }
        };
        Some((class, name.to_string()))
    }
}

/// The photos to write: entry number, class, file name.
pub(super) struct Plan {
    photos: Vec<(usize, usize, String)>,
    /// Entries that are no photo of either class.
    pub other_entries: usize,
    /// The photos' bytes, for the free-space check.
    pub bytes: u64,
}

/// What unpacking wrote.
pub(super) struct Unpacked {
    /// Photos per class, in [`CLASSES`] order.
    pub photos: [usize; 2],
    /// Photos left out: file name inside the archive, and why.
    pub left_out: Vec<(String, String)>,
}

/// Lists every entry of the archive at `path`: the structure check before anything is
/// unpacked. Refuses entries that would land outside the folder, links, and an archive
/// without photos of both classes.
pub(super) fn plan(
    path: &Path,
    format: Format,
    layout: Layout,
    progress: &mut dyn DownloadProgress,
) -> Result<Plan> {
    let size = fs::metadata(path).map_or(0, |m| m.len());
    progress.step_started("checking the archive's structure", false, None, 0);
    let mut plan = Plan {
        photos: Vec::new(),
        other_entries: 0,
        bytes: 0,
    };
    let mut names = HashSet::new();
    let mut add = |index: usize, entry: EntryKind, name: &str, bytes: u64| -> Result<()> {
        check_inside(name)
            .with_context(|| format!("{} holds the entry {name:?}", path.display()))?;
        match entry {
            EntryKind::Folder => {}
            EntryKind::Link => bail!(
                "{} holds the link {name:?}: an archive of photos has none, so it is refused",
                path.display()
            ),
            EntryKind::File => match layout.place(name) {
                Some((class, file)) if names.insert((class, file.clone())) => {
                    plan.photos.push((index, class, file));
                    plan.bytes = plan.bytes.checked_add(bytes).with_context(|| {
                        format!(
                            "{} declares more bytes of photos than any disk holds (its entry \
                             {name:?} says {bytes}): a damaged or hostile archive, refused",
                            path.display()
                        )
                    })?;
                }
                _ => plan.other_entries += 1,
            },
        }
        Ok(())
    };
    let damaged = |err: &dyn std::fmt::Display| {
        format!(
            "{} ({size} bytes) is not a whole {} archive: {err}",
            path.display(),
            match format {
                Format::TarGz => "tar.gz",
                Format::Zip => "zip",
            }
        )
    };
    match format {
        Format::TarGz => {
            let mut archive = open_tar(path)?;
            let entries = archive
                .entries()
                .map_err(|e| anyhow::anyhow!(damaged(&e)))?;
            for (index, entry) in entries.enumerate() {
                let entry = entry.map_err(|e| anyhow::anyhow!(damaged(&e)))?;
                let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
                add(index, tar_kind(&entry, path, &name)?, &name, entry.size())?;
            }
        }
        Format::Zip => {
            let mut archive = open_zip(path).map_err(|e| anyhow::anyhow!(damaged(&e)))?;
            for index in 0..archive.len() {
                let entry = archive
                    .by_index_raw(index)
                    .map_err(|e| anyhow::anyhow!(damaged(&e)))?;
                let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
                let kind = match (entry.is_symlink(), entry.is_dir()) {
                    (true, _) => EntryKind::Link,
                    (false, true) => EntryKind::Folder,
                    (false, false) => EntryKind::File,
                };
                add(index, kind, &name, entry.size())?;
            }
        }
    }
    progress.step_finished();
    for (class, name) in CLASSES.iter().enumerate() {
        ensure!(
            plan.photos.iter().any(|(_, c, _)| *c == class),
            "{} holds no {name} photos: it is not the archive catdog expects",
            path.display()
        );
    }
    Ok(plan)
}

/// Writes the planned photos into `into/cat/` and `into/dog/`, leaving out files that are
/// empty or not images at all (catdog's own checks deal with the rest when training).
pub(super) fn unpack(
    path: &Path,
    format: Format,
    plan: &Plan,
    into: &Path,
    progress: &mut dyn DownloadProgress,
) -> Result<Unpacked> {
    for class in CLASSES {
        let dir = into.join(class);
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut unpacked = Unpacked {
        photos: [0, 0],
        left_out: Vec::new(),
    };
    progress.step_started(
        &format!("unpacking into {}", into.display()),
        false,
        Some(plan.photos.len() as u64),
        0,
    );
    let mut planned = plan.photos.iter().peekable();
    let mut written: Vec<PathBuf> = Vec::with_capacity(plan.photos.len());
    let mut write = |index: usize, name: &str, reader: &mut dyn Read| -> Result<()> {
        let Some((_, class, file)) = planned.next_if(|(i, _, _)| *i == index) else {
            return Ok(());
        };
        let mut bytes = Vec::new();
        reader
            .take(MAX_PHOTO_BYTES + 1)
            .read_to_end(&mut bytes)
            .with_context(|| Damaged(format!("cannot read {name} from {}", path.display())))?;
        let problem = match bytes.len() as u64 {
            0 => Some("empty"),
            n if n > MAX_PHOTO_BYTES => Some("larger than any photo"),
            _ if image::guess_format(&bytes).is_err() => Some("not an image"),
            _ => None,
        };
        match problem {
            Some(reason) => unpacked
                .left_out
                .push((name.to_string(), reason.to_string())),
            None => {
                let target = into.join(CLASSES[*class]).join(file);
                fs::write(&target, &bytes)
                    .with_context(|| format!("cannot write {}", target.display()))?;
                written.push(target);
                unpacked.photos[*class] += 1;
            }
        }
        progress.advanced(1);
        Ok(())
    };
    match format {
        Format::TarGz => {
            let mut archive = open_tar(path)?;
            let entries = archive
                .entries()
                .with_context(|| format!("cannot read {}", path.display()))?;
            for (index, entry) in entries.enumerate() {
                let mut entry =
                    entry.with_context(|| Damaged(format!("cannot read {}", path.display())))?;
                let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
                write(index, &name, &mut entry)?;
            }
        }
        Format::Zip => {
            let mut archive =
                open_zip(path).with_context(|| format!("cannot read {}", path.display()))?;
            for &(index, _, _) in &plan.photos {
                let mut entry = archive
                    .by_index(index)
                    .with_context(|| Damaged(format!("cannot read {}", path.display())))?;
                let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
                write(index, &name, &mut entry)?;
            }
        }
    }
    progress.step_finished();
    // Every photo on disk before the folder is marked complete: after a power cut, a folder
    // marked complete never holds empty photos. In parallel, so that the file system can
    // commit many at once.
    written.par_iter().try_for_each(|photo| {
        // Written to (Windows' FlushFileBuffers needs a handle that may write).
        fs::OpenOptions::new()
            .write(true)
            .open(photo)
            .and_then(|file| file.sync_all())
            .with_context(|| format!("cannot write {}", photo.display()))
    })?;
    for class in CLASSES {
        sync_folder(&into.join(class));
    }
    Ok(unpacked)
}

/// An archive that could not be read to its end while unpacking: damaged, so not worth
/// unpacking again (the error's context, found with `downcast_ref`).
#[derive(Debug)]
pub(super) struct Damaged(String);

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

enum EntryKind {
    File,
    Folder,
    Link,
}

fn tar_kind<R: Read>(entry: &tar::Entry<R>, path: &Path, name: &str) -> Result<EntryKind> {
    use tar::EntryType;
    Ok(match entry.header().entry_type() {
        EntryType::Regular | EntryType::Continuous => EntryKind::File,
        EntryType::Directory => EntryKind::Folder,
        EntryType::Symlink | EntryType::Link => EntryKind::Link,
        other => bail!(
            "{} holds {name:?}, a {other:?} entry: an archive of photos has none, so it is \
             refused",
            path.display()
        ),
    })
}

/// Refuses a path that would land outside the folder it is unpacked into, or that Windows
/// reads as something else, on every platform (an archive is the same file everywhere):
/// absolute, a drive or server prefix in any part (`PetImages/Cat/C:x.jpg` is `C:x.jpg` on
/// drive C), climbing out with `..`, a name Windows reserves for a device (`CON`, `NUL`,
/// `COM1`, … with any extension), or a part ending in a dot or a space, which Windows drops.
fn check_inside(name: &str) -> Result<()> {
    let outside = || bail!("it would land outside the folder, so the archive is refused");
    if name.starts_with(['/', '\\']) {
        return outside();
    }
    let platform_says_outside = Path::new(name).components().any(|part| {
        !matches!(
            part,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    if platform_says_outside {
        return outside();
    }
    for part in name.split(['/', '\\']) {
        if part == ".." || part.contains(':') {
            return outside();
        }
        let stem = part.split('.').next().unwrap_or(part).to_ascii_uppercase();
        let reserved = matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
            || (stem.len() == 4
                && (stem.starts_with("COM") || stem.starts_with("LPT"))
                && stem.as_bytes()[3].is_ascii_digit());
        if reserved || (part != "." && part.ends_with(['.', ' '])) {
            bail!(
                "its part {part:?} names a device or changes its name on Windows, so the \
                 archive is refused"
            );
        }
    }
    Ok(())
}

fn open_tar(path: &Path) -> Result<tar::Archive<flate2::read::GzDecoder<BufReader<File>>>> {
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(tar::Archive::new(flate2::read::GzDecoder::new(
        BufReader::new(file),
    )))
}

fn open_zip(path: &Path) -> Result<zip::ZipArchive<BufReader<File>>> {
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(zip::ZipArchive::new(BufReader::new(file))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_layout_finds_the_class_of_a_photo_and_nothing_else() {
        use Layout::*;
        assert_eq!(
            BreedCase.place("images/Abyssinian_1.jpg"),
            Some((0, "Abyssinian_1.jpg".into()))
        );
        assert_eq!(
            BreedCase.place("images/beagle_12.jpg"),
            Some((1, "beagle_12.jpg".into()))
        );
        assert_eq!(BreedCase.place("images/Abyssinian_100.mat"), None);
        assert_eq!(
            ClassFolders.place("PetImages/Cat/1.jpg"),
            Some((0, "1.jpg".into()))
        );
        assert_eq!(
            ClassFolders.place("PetImages/Dog/1.jpg"),
            Some((1, "1.jpg".into()))
        );
        assert_eq!(ClassFolders.place("PetImages/Dog/Thumbs.db"), None);
        assert_eq!(ClassFolders.place("readme[1].txt"), None);
        assert_eq!(ClassFolders.place("1.jpg"), None);
    }

    #[test]
    fn paths_outside_the_folder_are_refused() {
        for bad in [
            "../x.jpg",
            "a/../../x.jpg",
            "/etc/x.jpg",
            "\\\\server\\x.jpg",
            "C:x.jpg",
            "a\\..\\b",
            "PetImages/Cat/C:x.jpg",
            "PetImages\\Cat\\D:\\x.jpg",
            "PetImages/Cat/CON",
            "PetImages/nul.jpg",
            "PetImages/Com1.txt/x.jpg",
            "PetImages/Cat./x.jpg",
            "PetImages/Cat/x.jpg ",
            "PetImages/x.jpg:stream",
        ] {
            assert!(check_inside(bad).is_err(), "{bad}");
        }
        for good in [
            "a/b.jpg",
            "./a.jpg",
            "a..b/c.jpg",
            "images/",
            "PetImages/Cat/console.jpg",
            "PetImages/Cat/COM.jpg",
            "PetImages/Cat/LPTX.jpg",
        ] {
            assert!(check_inside(good).is_ok(), "{good}");
        }
    }
}
