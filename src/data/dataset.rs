//! Finding labelled photos on disk, and holding some back for validation.
//!
//! Two layouts are understood: one sub-folder per class (`DIR/cat/*.jpg`, `DIR/dog/*.jpg`,
//! sub-folders of those included), and Kaggle's flat layout (`DIR/cat.123.jpg`), where the
//! class is the name's part before the first of two dots. Class names are lower case, so
//! `Cat/` and `cat.1.jpg` name the same class.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use super::fingerprint::{Times, fingerprint};

/// File extensions read as photos (any case).
pub const PHOTO_EXTENSIONS: [&str; 7] = ["jpg", "jpeg", "png", "webp", "bmp", "gif", "jfif"];

/// One photo and the index of its class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub path: PathBuf,
    pub label: usize,
}

impl AsRef<Path> for Sample {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// How the classes were laid out on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `DIR/<class>/<photo>`
    ClassFolders,
    /// `DIR/<class>.<anything>.<ext>`
    FlatNames,
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Layout::ClassFolders => "a sub-folder per class",
            Layout::FlatNames => "classes in the file names",
        })
    }
}

/// The photos of a folder, sorted by path, and their class names, sorted.
#[derive(Clone, Debug)]
pub struct Dataset {
    pub root: PathBuf,
    pub layout: Layout,
    pub classes: Vec<String>,
    pub samples: Vec<Sample>,
    /// Identifies the exact photos: their class, path inside `root`, size and modification
    /// time. Any photo added, removed, replaced or touched changes it; the path `root` is
    /// given by does not.
    pub fingerprint: String,
    /// The same without the modification times: class, path inside `root` and size. A copy
    /// of the folder keeps it.
    pub listing: String,
}

impl Dataset {
    /// Scans `root` in whichever layout it uses: refused where it holds no photos
    /// ([`Dataset::check_trainable`] says whether training can use it).
    pub fn scan(root: &Path) -> Result<Dataset> {
        if !root.exists() {
            bail!("data folder {} does not exist", root.display());
        }
        if !root.is_dir() {
            bail!("data folder {} is not a folder", root.display());
        }
        let (mut by_class, loose_photos) = class_folders(root)?;
        let layout = if by_class.is_empty() {
            by_class = classes_in_names(root, loose_photos)?;
            Layout::FlatNames
        } else {
            Layout::ClassFolders
        };
        check_classes(root, &by_class)?;
        let classes: Vec<String> = by_class.keys().cloned().collect();
        let samples: Vec<Sample> = by_class
            .into_values()
            .enumerate()
            .flat_map(|(label, paths)| paths.into_iter().map(move |path| Sample { path, label }))
            .collect();
        let fingerprint_with = |times| {
            let samples = samples.iter().map(|s| (s.path.as_path(), s.label));
            fingerprint(root, &classes, samples, times)
        };
        Ok(Dataset {
            root: root.to_path_buf(),
            layout,
            fingerprint: fingerprint_with(Times::Included),
            listing: fingerprint_with(Times::Left),
            classes,
            samples,
        })
    }

    /// Refuses a folder that cannot be trained on: fewer than two classes, or a class of one
    /// photo.
    pub fn check_trainable(&self) -> Result<()> {
        let root = self.root.display();
        let labels: Vec<usize> = self.samples.iter().map(|s| s.label).collect();
        let counts = count_labels(&labels, self.classes.len());
        if self.classes.len() < 2 {
            bail!(
                "found only one class ('{}') in {root}: training needs photos of at least two \
                 classes, e.g. {root}/cat/ and {root}/dog/",
                self.classes[0]
            );
        }
        if let Some(label) = counts.iter().position(|&count| count < 2) {
            let photo = self.samples.iter().find(|s| s.label == label).unwrap();
            bail!(
                "class '{}' has only one photo in {root} ({}): training holds some of each \
                 class back to check itself on, so it needs at least two of each class{}",
                self.classes[label],
                photo.path.display(),
                self.dates_note()
                    .map(|n| format!(". {n}"))
                    .unwrap_or_default()
            );
        }
        Ok(())
    }

    /// Where the classes are sub-folders named like years or dates (`pets/2023/`,
    /// `pets/2024/`), a sentence saying that these are what catdog takes for the classes.
    pub fn dates_note(&self) -> Option<String> {
        if self.layout != Layout::ClassFolders || !self.classes.iter().all(|c| looks_like_a_date(c))
        {
            return None;
        }
        let root = self.root.display();
        Some(format!(
            "The classes are the folders directly in {root}: {}, which look like years or \
             dates. To tell cats from dogs, put each class's photos in a folder of its own, \
             e.g. {root}/cat/ and {root}/dog/ (their sub-folders are fine)",
            self.classes.join(", ")
        ))
    }

    /// The same photos under the class names `names`, the model's: a folder class matches a
    /// name it equals, or its plural (`Cats/` is `cat`, `boxes/` is `box`; case never
    /// counts). `None` unless every folder class matches one name and every name one class.
    pub fn matched_to(&self, names: &[String]) -> Option<Dataset> {
        let names: Vec<String> = names.iter().map(|n| n.to_lowercase()).collect();
        if names.len() != self.classes.len() {
            return None;
        }
        let matches = |class: &str, name: &str| {
            class == name
                || class.strip_suffix('s') == Some(name)
                || class.strip_suffix("es") == Some(name)
        };
        let new_label: Vec<usize> = self
            .classes
            .iter()
            .map(|class| {
                let exact = names.iter().position(|n| n == class);
                exact.or_else(|| names.iter().position(|n| matches(class, n)))
            })
            .collect::<Option<_>>()?;
        let mut seen = new_label.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != names.len() {
            return None;
        }
        let mut matched = self.clone();
        matched.classes = names;
        for sample in &mut matched.samples {
            sample.label = new_label[sample.label];
        }
        Some(matched)
    }

    /// Splits the samples' indices into (train, validation), holding back `val_fraction` of
    /// every class. The same seed gives the same split.
    pub fn split(&self, val_fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
        let labels: Vec<usize> = self.samples.iter().map(|s| s.label).collect();
        stratified_split(&labels, val_fraction, seed)
    }
}

/// Photo paths by class name.
type ByClass = BTreeMap<String, Vec<PathBuf>>;

/// The photos of each class sub-folder of `root` (its own sub-folders included), by lower-case
/// class name, and the photos lying directly in `root`.
fn class_folders(root: &Path) -> Result<(ByClass, Vec<PathBuf>)> {
    let mut by_class = ByClass::new();
    let mut loose_photos = Vec::new();
    let entries: Vec<PathBuf> = read_dir_sorted(root)?
        .into_iter()
        .filter(|entry| !is_hidden(entry))
        .collect();
    // A class folder that is a link to another one, or to the data folder itself, would give
    // the same photos two labels: refused, naming both.
    let mut real_folders: Vec<(PathBuf, &Path)> = fs::canonicalize(root)
        .map(|real| vec![(real, root)])
        .unwrap_or_default();
    for entry in entries.iter().filter(|e| e.is_dir()) {
        let Ok(real) = fs::canonicalize(entry) else {
            continue;
        };
        if let Some((_, first)) = real_folders.iter().find(|(seen, _)| *seen == real) {
            bail!(
                "{} and {} are the same folder (one is a link to the other), so its photos \
                 would be counted under two labels: remove the link",
                first.display(),
                entry.display()
            );
        }
        real_folders.push((real, entry));
    }
    // A link inside a class folder back to the data folder or to another class folder
    // would give that class's photos a second label: such folders are never entered.
    let mut visited: HashSet<PathBuf> = std::iter::once(root)
        .chain(entries.iter().filter(|e| e.is_dir()).map(PathBuf::as_path))
        .filter_map(|dir| fs::canonicalize(dir).ok())
        .collect();
    for entry in entries {
        if entry.is_dir() {
            let mut photos = Vec::new();
            collect_photos(&entry, &mut visited, &mut photos)?;
            if !photos.is_empty() {
                let class = by_class
                    .entry(file_name(&entry).to_lowercase())
                    .or_default();
                class.extend(photos);
                class.sort();
            }
        } else if is_photo(&entry) {
            loose_photos.push(entry);
        }
    }
    Ok((by_class, loose_photos))
}

/// The photos of a folder without class sub-folders, by the class their names carry.
fn classes_in_names(root: &Path, photos: Vec<PathBuf>) -> Result<ByClass> {
    let mut by_class = ByClass::new();
    for photo in photos {
        let Some(class) = class_in_name(&photo) else {
            bail!(
                "{} names no class: in a folder without class sub-folders every photo is named \
                 like cat.1.jpg, its class before the first dot. Rename the photos, or put each \
                 class in a sub-folder ({}/cat/, {}/dog/)",
                photo.display(),
                root.display(),
                root.display()
            );
        };
        by_class.entry(class).or_default().push(photo);
    }
    Ok(by_class)
}

/// How many items each of `classes` classes has.
pub(crate) fn count_labels(labels: &[usize], classes: usize) -> Vec<usize> {
    let mut counts = vec![0; classes];
    for &label in labels {
        counts[label] += 1;
    }
    counts
}

/// Refuses a folder with no photos in either layout.
fn check_classes(root: &Path, by_class: &ByClass) -> Result<()> {
    if by_class.is_empty() {
        bail!(
            "no photos found in {} (looked for {} files, in class sub-folders or named like \
             cat.1.jpg)",
            root.display(),
            PHOTO_EXTENSIONS.join("/")
        );
    }
    Ok(())
}

/// Whether a folder name looks like a year or a date (`2023`, `2023-05`, `2023_05_14`): the
/// usual way photos are filed, and not a class.
fn looks_like_a_date(name: &str) -> bool {
    let digits: Vec<&str> = name.split(['-', '_', '.', ' ']).collect();
    let year = digits[0];
    year.len() == 4
        && (year.starts_with("19") || year.starts_with("20"))
        && digits.iter().all(|part| {
            !part.is_empty() && part.len() <= 4 && part.chars().all(|c| c.is_ascii_digit())
        })
}

/// Refuses a share of photos to hold back for validation that leaves too few to train on.
pub(crate) fn check_val_split(val_split: f64) -> Result<()> {
    if !(0.0..0.9).contains(&val_split) {
        bail!("--val-split must be at least 0 and below 0.9, not {val_split}");
    }
    Ok(())
}

/// Splits the indices of `labels` into (train, validation), holding back `val_fraction` of
/// every class (at least one item of a class with two or more, when the fraction is above
/// zero). Both lists are sorted; the same seed gives the same split.
pub fn stratified_split(
    labels: &[usize],
    val_fraction: f64,
    seed: u64,
) -> (Vec<usize>, Vec<usize>) {
    let classes = labels.iter().max().map_or(0, |max| max + 1);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut train = Vec::new();
    let mut val = Vec::new();
    for class in 0..classes {
        let mut members: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] == class).collect();
        members.shuffle(&mut rng);
        let mut held_back = (members.len() as f64 * val_fraction).round() as usize;
        if val_fraction > 0.0 && members.len() >= 2 {
            held_back = held_back.clamp(1, members.len() - 1);
        }
        val.extend_from_slice(&members[..held_back]);
        train.extend_from_slice(&members[held_back..]);
    }
    train.sort_unstable();
    val.sort_unstable();
    (train, val)
}

/// The photos in `dir` and its sub-folders, sorted by path within each folder; each folder
/// once, however symbolic links loop back.
pub fn photos_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut photos = Vec::new();
    let mut visited: HashSet<PathBuf> = fs::canonicalize(dir).into_iter().collect();
    collect_photos(dir, &mut visited, &mut photos)?;
    Ok(photos)
}

/// Adds the photos in `dir` and its sub-folders to `photos`, entering no folder of `visited`
/// (canonical paths), and adding each it enters.
fn collect_photos(
    dir: &Path,
    visited: &mut HashSet<PathBuf>,
    photos: &mut Vec<PathBuf>,
) -> Result<()> {
    for entry in read_dir_sorted(dir)? {
        if is_hidden(&entry) {
            continue;
        }
        if entry.is_dir() {
            let first_visit = fs::canonicalize(&entry).map_or(true, |real| visited.insert(real));
            if first_visit {
                collect_photos(&entry, visited, photos)?;
            }
        } else if is_photo(&entry) {
            photos.push(entry);
        }
    }
    Ok(())
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut entries = fs::read_dir(dir)
        .with_context(|| format!("cannot read folder {}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<Vec<_>>>()
        .with_context(|| format!("cannot read folder {}", dir.display()))?;
    entries.sort();
    Ok(entries)
}

/// Whether the file name has a photo extension.
pub fn is_photo(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| PHOTO_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()))
}

/// The class a flat folder's photo is named with: `cat` for `cat.123.jpg` (any case), `None`
/// for a name without one (`IMG_0001.jpg`, `cat.jpg`).
fn class_in_name(photo: &Path) -> Option<String> {
    let name = file_name(photo);
    let mut parts = name.split('.');
    let class = parts.next().filter(|class| !class.is_empty())?;
    (parts.count() >= 2).then(|| class.to_lowercase())
}

fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.to_string_lossy().starts_with('.'))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class_counts(data: &Dataset) -> Vec<usize> {
        let labels: Vec<usize> = data.samples.iter().map(|s| s.label).collect();
        count_labels(&labels, data.classes.len())
    }

    fn touch(path: &Path) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, b"not decoded by scanning").unwrap();
    }

    #[test]
    fn plural_and_capitalised_folders_match_a_model_s_singular_classes() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["Cats/1.jpg", "Cats/2.jpg", "Dogs/1.jpg"] {
            touch(&dir.path().join(name));
        }
        let data = Dataset::scan(dir.path()).unwrap();
        assert_eq!(data.classes, ["cats", "dogs"]);
        let names = ["cat".to_string(), "dog".to_string()];
        let matched = data.matched_to(&names).unwrap();
        assert_eq!(matched.classes, names);
        assert_eq!(class_counts(&matched), [2, 1]);
        // Another model's classes, or a name two folders would share, do not match.
        assert!(data.matched_to(&["cat".into(), "rex".into()]).is_none());
        assert!(data.matched_to(&["cat".into()]).is_none());
        touch(&dir.path().join("cat/3.jpg"));
        let both = Dataset::scan(dir.path()).unwrap();
        assert!(both.matched_to(&names).is_none(), "{:?}", both.classes);
        // The labels follow the model's order, not the folders'.
        let reversed = ["dog".to_string(), "cat".to_string()];
        let matched = data.matched_to(&reversed).unwrap();
        assert_eq!(class_counts(&matched), [1, 2]);
    }

    #[test]
    fn year_folders_are_called_the_classes_they_are_taken_for() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["2023/Cats/1.jpg", "2023/Dogs/1.jpg", "2024-06/Cats/2.jpg"] {
            touch(&dir.path().join(name));
        }
        let data = Dataset::scan(dir.path()).unwrap();
        assert_eq!(data.classes, ["2023", "2024-06"]);
        let note = data.dates_note().unwrap();
        assert!(
            note.contains("2023, 2024-06, which look like years or dates"),
            "{note}"
        );
        let err = data.check_trainable().unwrap_err().to_string();
        assert!(err.contains("class '2024-06' has only one photo"), "{err}");
        assert!(err.contains("look like years or dates"), "{err}");
        for name in ["cat/1.jpg", "dog/1.jpg"] {
            touch(&dir.path().join("plain").join(name));
        }
        let plain = Dataset::scan(&dir.path().join("plain")).unwrap();
        assert_eq!(plain.dates_note(), None);
        assert!(!looks_like_a_date("2cats") && !looks_like_a_date("1234"));
        assert!(looks_like_a_date("2023_05_14") && looks_like_a_date("1999"));
    }

    #[test]
    fn scans_class_folders_with_sorted_class_names() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "dog/a.jpg",
            "dog/b.PNG",
            "Dog/c.jpg",
            "cat/x.jpeg",
            "cat/2019/summer/y.jpg",
            "cat/notes.txt",
            "cat/.hidden.jpg",
        ] {
            touch(&dir.path().join(name));
        }
        fs::create_dir(dir.path().join("empty")).unwrap();
        let data = Dataset::scan(dir.path()).unwrap();
        assert_eq!(data.layout, Layout::ClassFolders);
        assert_eq!(data.classes, ["cat", "dog"], "Dog/ and dog/ are one class");
        assert_eq!(class_counts(&data), [2, 3]);
        assert_eq!(
            data.samples[0].path,
            dir.path().join("cat/2019/summer/y.jpg"),
            "photos in a class folder's sub-folders belong to the class"
        );
        assert_eq!(data.samples[0].label, 0);
    }

    #[test]
    fn a_folder_whose_names_carry_no_class_or_a_class_of_one_photo_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["Cat.1.jpg", "cat.2.jpg", "dog.1.jpg", "dog.2.jpg"] {
            touch(&dir.path().join(name));
        }
        let data = Dataset::scan(dir.path()).unwrap();
        assert_eq!(data.classes, ["cat", "dog"]);
        assert_eq!(class_counts(&data), [2, 2]);

        touch(&dir.path().join("IMG_0001.jpg"));
        let err = Dataset::scan(dir.path()).unwrap_err().to_string();
        assert!(err.contains("IMG_0001.jpg names no class"), "{err}");

        let folders = tempfile::tempdir().unwrap();
        for name in ["cat/1.jpg", "cat/2.jpg", "dog/1.jpg"] {
            touch(&folders.path().join(name));
        }
        let data = Dataset::scan(folders.path()).unwrap();
        let err = data.check_trainable().unwrap_err().to_string();
        assert!(
            err.contains("class 'dog' has only one photo") && err.contains("dog/1.jpg"),
            "{err}"
        );
    }

    /// `data/cat -> dog` would make every photo a cat and a dog at once.
    #[cfg(unix)]
    #[test]
    fn a_class_folder_linking_to_another_class_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["dog/1.jpg", "dog/2.jpg"] {
            touch(&dir.path().join(name));
        }
        std::os::unix::fs::symlink(dir.path().join("dog"), dir.path().join("cat")).unwrap();
        let err = Dataset::scan(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "{} and {} are the same folder",
                dir.path().join("cat").display(),
                dir.path().join("dog").display()
            )),
            "{err}"
        );
        // A link to the data folder itself, likewise.
        fs::remove_file(dir.path().join("cat")).unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("cat")).unwrap();
        let err = Dataset::scan(dir.path()).unwrap_err().to_string();
        assert!(err.contains("are the same folder"), "{err}");
    }

    #[test]
    fn scans_kaggle_flat_names() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "cat.0.jpg",
            "cat.1.jpg",
            "dog.0.jpg",
            "dog.1.jpg",
            "dog.2.jpg",
            "x.txt",
        ] {
            touch(&dir.path().join(name));
        }
        let data = Dataset::scan(dir.path()).unwrap();
        assert_eq!(data.layout, Layout::FlatNames);
        assert_eq!(data.classes, ["cat", "dog"]);
        assert_eq!(class_counts(&data), [2, 3]);
        assert!(data.samples.iter().all(|s| {
            let name = s.path.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(&data.classes[s.label])
        }));
    }

    #[test]
    fn split_is_stratified_and_fixed_by_seed() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..40 {
            touch(&dir.path().join(format!("cat/{i}.jpg")));
        }
        for i in 0..60 {
            touch(&dir.path().join(format!("dog/{i}.jpg")));
        }
        let data = Dataset::scan(dir.path()).unwrap();
        let (train, val) = data.split(0.1, 7);
        let labels = |indices: &[usize]| {
            indices
                .iter()
                .map(|&i| data.samples[i].label)
                .collect::<Vec<_>>()
        };
        assert_eq!(count_labels(&labels(&val), 2), [4, 6]);
        assert_eq!(count_labels(&labels(&train), 2), [36, 54]);
        let mut all: Vec<_> = train.iter().chain(&val).copied().collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 100, "train and validation must not overlap");

        assert_eq!(data.split(0.1, 7), (train.clone(), val.clone()));
        let (_, other_val) = data.split(0.1, 8);
        assert_ne!(other_val, val, "another seed holds back other photos");
    }

    #[test]
    fn errors_name_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let err = Dataset::scan(&missing).unwrap_err().to_string();
        assert!(
            err.contains("does not exist") && err.contains("nope"),
            "{err}"
        );

        let err = Dataset::scan(dir.path()).unwrap_err().to_string();
        assert!(err.contains("no photos found"), "{err}");

        touch(&dir.path().join("cat/1.jpg"));
        let one_class = Dataset::scan(dir.path()).unwrap();
        let err = one_class.check_trainable().unwrap_err().to_string();
        assert!(err.contains("only one class ('cat')"), "{err}");
    }
}
