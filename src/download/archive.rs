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
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};

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
                    plan.bytes += bytes;
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
    let mut write = |index: usize, name: &str, reader: &mut dyn Read| -> Result<()> {
        let Some((_, class, file)) = planned.next_if(|(i, _, _)| *i == index) else {
            return Ok(());
        };
        let mut bytes = Vec::new();
        reader
            .take(MAX_PHOTO_BYTES + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {name} from {}", path.display()))?;
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
                let mut entry = entry.with_context(|| format!("cannot read {}", path.display()))?;
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
                    .with_context(|| format!("cannot read {}", path.display()))?;
                let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
                write(index, &name, &mut entry)?;
            }
        }
    }
    progress.step_finished();
    for class in CLASSES {
        sync_folder(&into.join(class));
    }
    Ok(unpacked)
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

/// Refuses a path that would land outside the folder it is unpacked into: absolute, with a
/// drive letter, or climbing out with `..`.
fn check_inside(name: &str) -> Result<()> {
    let absolute = name.starts_with(['/', '\\']) || name.as_bytes().get(1) == Some(&b':');
    let climbs = name.split(['/', '\\']).any(|part| part == "..");
    if absolute || climbs {
        bail!("it would land outside the folder, so the archive is refused");
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
        ] {
            assert!(check_inside(bad).is_err(), "{bad}");
        }
        for good in ["a/b.jpg", "./a.jpg", "a..b/c.jpg", "images/"] {
            assert!(check_inside(good).is_ok(), "{good}");
        }
    }
}
