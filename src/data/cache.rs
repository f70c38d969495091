//! Decoded, resized pixels kept on disk, so that only the first run over a folder decodes.
//!
//! The first `catdog train --data DIR` decodes every photo once, streaming the pixels into
//! `pixels-<size>px-<key>.u8` in the user's cache folder (`$XDG_CACHE_HOME/catdog/<folder>`
//! or `~/.cache/catdog/<folder>`, not among the photos; `DIR/.catdog-cache` only where that
//! cannot be written, and read where an earlier catdog wrote it); later runs read that file
//! instead. The key
//! covers the file list, sizes, modification times, classes and image size, so a changed folder
//! is decoded again. Files are written under a temporary name, flushed to disk and renamed,
//! the index (`.json`) last, so neither a killed run nor a power cut leaves a cache that looks
//! whole; a killed run's temporary files are swept by the next writer.
//!
//! A cache that fits in a quarter of the machine's memory is read into memory. A larger one is
//! memory-mapped, which costs no heap; the OS then ends catdog with SIGBUS should another
//! program truncate the file while catdog runs. catdog itself never changes a cache file in
//! place: it only ever replaces one by renaming a new file over it, which a running catdog,
//! holding the old file open, does not see.

use std::fs::{self, File};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use memmap2::Mmap;
use serde::{Deserialize, Serialize};

use super::dataset::{Dataset, Sample};
use super::decode::{Skipped, decode_photos};
use super::images::{ImageSet, Pixels, image_bytes};
use crate::device::cpu_info;
use crate::fs::{
    DESCRIPTION_LIMIT, partial_file_in, read_regular, regular_file_length, remove_partial_files,
    sync_folder, user_cache_dir, write_atomically,
};

/// Bumped whenever decoding or the file layout changes, which invalidates old caches.
const FORMAT_VERSION: u32 = 1;
/// Photos decoded at a time while writing a cache: bounds the memory the first run needs.
const CHUNK_PHOTOS: usize = 512;

/// The photos of a folder, decoded.
#[derive(Debug)]
pub struct DecodedPhotos {
    /// The photos that decoded, in the order of the samples.
    pub images: ImageSet,
    /// For each sample, its index in `images`; `None` for a photo that was skipped.
    pub image_of_sample: Vec<Option<usize>>,
    pub skipped: Vec<Skipped>,
    /// Where the pixels came from.
    pub source: Source,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// Read from a cache written by an earlier run.
    Cache(PathBuf),
    /// Decoded now and cached for later runs.
    DecodedAndCached(PathBuf),
    /// Decoded now into memory: no cache folder could be written (the reason).
    DecodedInMemory(String),
}

/// The index beside the pixels.
#[derive(Serialize, Deserialize)]
struct Index {
    format_version: u32,
    image_size: u32,
    fingerprint: String,
    samples: usize,
    /// Sample number and reason of every photo that did not decode.
    skipped: Vec<(usize, String)>,
}

/// Who watches decoding: told of every photo decoded, and asked between chunks of photos
/// whether to stop (Ctrl-C), so that a long first decode stops within a second or so.
#[derive(Clone, Copy)]
pub struct DecodeWatch<'a> {
    pub photo_done: &'a (dyn Fn() + Sync),
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

impl DecodeWatch<'static> {
    /// Nobody watches: nothing is told, decoding never stops early.
    pub const NONE: DecodeWatch<'static> = DecodeWatch {
        photo_done: &|| {},
        stop: &|| false,
    };
}

/// The photos of `dataset` as `size` px pixels: from the cache when it is current, otherwise
/// decoded on every core and cached. Fails, leaving no cache behind, when `watch` asks to
/// stop.
pub fn load_or_decode(dataset: &Dataset, size: u32, watch: DecodeWatch) -> Result<DecodedPhotos> {
    let (data, samples) = (&dataset.root, &dataset.samples[..]);
    // Names the cache and is stored in it: a changed folder gets a new one.
    let fingerprint = &dataset.fingerprint;
    let folders = cache_folders(data);
    let name = format!(
        "pixels-{size}px-{:08x}",
        crc32fast::hash(fingerprint.as_bytes())
    );
    for folder in &folders {
        if let Some(found) = open(&folder.join(&name), samples, fingerprint, size) {
            return Ok(found);
        }
    }
    let mut reasons = Vec::new();
    for folder in &folders {
        match write(folder, &name, samples, fingerprint, size, watch) {
            Ok(written) => return Ok(written),
            // Asked to stop: not a reason to try the next folder.
            Err(err) if (watch.stop)() => return Err(err),
            Err(err) => reasons.push(format!("{}: {err:#}", folder.display())),
        }
    }
    let mut pixels = Vec::new();
    let skipped = decode_all(samples, size, watch, |chunk| {
        pixels.extend_from_slice(chunk);
        Ok(())
    })?;
    Ok(assemble(
        samples,
        size,
        Pixels::Owned(pixels),
        skipped,
        Source::DecodedInMemory(reasons.join("; ")),
    ))
}

/// Where the pixels of the photos in `data` are cached, in the order tried: the user's cache
/// folder (one folder per photo folder, by its absolute path), so that nothing is written
/// among the user's photos; then `DATA/.catdog-cache`, which earlier catdogs wrote and which
/// is read, and written only where the user's cache folder cannot be (no home folder, or one
/// that cannot be written). A photo folder marked read-only is left alone even where writing
/// would succeed (as root).
fn cache_folders(data: &Path) -> Vec<PathBuf> {
    let mut folders = Vec::new();
    if let Some(user_cache) = user_cache_dir() {
        let absolute = fs::canonicalize(data).unwrap_or_else(|_| data.to_path_buf());
        let folder_key = crc32fast::hash(absolute.as_os_str().as_encoded_bytes());
        folders.push(user_cache.join(format!("{folder_key:08x}")));
    }
    if fs::metadata(data).is_ok_and(|meta| !meta.permissions().readonly()) {
        folders.push(data.join(".catdog-cache"));
    }
    folders
}

/// The cache at `base` (`.json` + `.u8`), if it is whole and for exactly these photos.
fn open(base: &Path, samples: &[Sample], fingerprint: &str, size: u32) -> Option<DecodedPhotos> {
    let index: Index = serde_json::from_slice(
        &read_regular(&base.with_extension("json"), DESCRIPTION_LIMIT).ok()?,
    )
    .ok()?;
    let current = index.format_version == FORMAT_VERSION
        && index.image_size == size
        && index.fingerprint == fingerprint
        && index.samples == samples.len()
        && index
            .skipped
            .iter()
            .all(|(sample, _)| *sample < samples.len())
        && index.skipped.windows(2).all(|pair| pair[0].0 < pair[1].0);
    if !current {
        return None;
    }
    // Only a regular file: opening a pipe put there would wait for ever.
    regular_file_length(&base.with_extension("u8"), u64::MAX).ok()?;
    let file = File::open(base.with_extension("u8")).ok()?;
    let decoded = samples.len() - index.skipped.len();
    let pixels = read_pixels(file, decoded * image_bytes(size)).ok()??;
    Some(assemble(
        samples,
        size,
        pixels,
        index.skipped,
        Source::Cache(base.with_extension("u8")),
    ))
}

/// The `bytes` bytes of a cache file: read into memory when that fits in a quarter of the
/// machine's, mapped otherwise (see the module's notes on SIGBUS). `None` when the file is
/// not that long.
fn read_pixels(mut file: File, bytes: usize) -> Result<Option<Pixels>> {
    if file.metadata()?.len() != bytes as u64 {
        return Ok(None);
    }
    if (bytes as u64) <= cpu_info().memory_bytes / 4 {
        let mut pixels = vec![0; bytes];
        file.seek(SeekFrom::Start(0))?;
        file.read_exact(&mut pixels)?;
        return Ok(Some(Pixels::Owned(pixels)));
    }
    // Safety: catdog never changes a cache file in place (only renames a new one over it);
    // another program truncating it is the risk the module's notes describe.
    let map = unsafe { Mmap::map(&file) }?;
    Ok(Some(Pixels::Mapped(map)))
}

/// Decodes `samples` into `folder/name.u8` and its index, replacing older caches of this size,
/// and returns the photos from the file just written (kept open: another run's cleanup may
/// remove its name at once).
fn write(
    folder: &Path,
    name: &str,
    samples: &[Sample],
    fingerprint: &str,
    size: u32,
    watch: DecodeWatch,
) -> Result<DecodedPhotos> {
    fs::create_dir_all(folder).context("cannot create the cache folder")?;
    remove_partial_files(folder);
    let mut pixels_file = partial_file_in(folder).context("cannot write in the cache folder")?;
    let mut writer = BufWriter::new(pixels_file.as_file_mut());
    let skipped = decode_all(samples, size, watch, |chunk| {
        writer.write_all(chunk)?;
        Ok(())
    })?;
    writer.flush()?;
    drop(writer);
    pixels_file.as_file().sync_all()?;
    let index = Index {
        format_version: FORMAT_VERSION,
        image_size: size,
        fingerprint: fingerprint.to_string(),
        samples: samples.len(),
        skipped,
    };
    let base = folder.join(name);
    let path = base.with_extension("u8");
    remove_older_caches(folder, size, name);
    let file = pixels_file.persist(&path)?;
    sync_folder(folder);
    write_atomically(&base.with_extension("json"), &serde_json::to_vec(&index)?)?;
    let decoded = samples.len() - index.skipped.len();
    let pixels = read_pixels(file, decoded * image_bytes(size))?
        .with_context(|| format!("the cache just written at {} is short", path.display()))?;
    Ok(assemble(
        samples,
        size,
        pixels,
        index.skipped,
        Source::DecodedAndCached(path),
    ))
}

/// Other caches of the same image size in `folder`: a folder's old contents.
fn remove_older_caches(folder: &Path, size: u32, keep: &str) {
    let prefix = format!("pixels-{size}px-");
    for entry in fs::read_dir(folder).into_iter().flatten().flatten() {
        let file_name = entry.file_name().to_string_lossy().to_string();
        if file_name.starts_with(&prefix) && !file_name.starts_with(keep) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Decodes `samples` in chunks on every core, handing each chunk's pixels to `sink`;
/// returns the (sample, reason) of every photo that failed.
fn decode_all(
    samples: &[Sample],
    size: u32,
    watch: DecodeWatch,
    mut sink: impl FnMut(&[u8]) -> Result<()>,
) -> Result<Vec<(usize, String)>> {
    let mut skipped = Vec::new();
    for (chunk_number, chunk) in samples.chunks(CHUNK_PHOTOS).enumerate() {
        if (watch.stop)() {
            bail!(
                "decoding stopped after {} of {} photos",
                chunk_number * CHUNK_PHOTOS,
                samples.len()
            );
        }
        let decoded = decode_photos(chunk, size, watch.photo_done);
        let mut pixels = Vec::with_capacity(chunk.len() * image_bytes(size));
        for (offset, result) in decoded.into_iter().enumerate() {
            match result {
                Ok(image) => pixels.extend_from_slice(&image),
                Err(err) => skipped.push((
                    chunk_number * CHUNK_PHOTOS + offset,
                    format!("{:#}", err.root_cause()),
                )),
            }
        }
        sink(&pixels)?;
    }
    Ok(skipped)
}

fn assemble(
    samples: &[Sample],
    size: u32,
    pixels: Pixels,
    skipped: Vec<(usize, String)>,
    source: Source,
) -> DecodedPhotos {
    let mut image_of_sample = vec![None; samples.len()];
    let mut labels = Vec::new();
    let mut next_skipped = skipped.iter().map(|(sample, _)| *sample).peekable();
    for (sample_number, sample) in samples.iter().enumerate() {
        if next_skipped.peek() == Some(&sample_number) {
            next_skipped.next();
            continue;
        }
        image_of_sample[sample_number] = Some(labels.len());
        labels.push(sample.label);
    }
    DecodedPhotos {
        images: ImageSet::from_pixels(size, pixels, labels),
        image_of_sample,
        skipped: skipped
            .into_iter()
            .map(|(sample, reason)| Skipped {
                path: samples[sample].path.clone(),
                reason,
            })
            .collect(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn photo(path: &Path, color: [u8; 3]) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        image::RgbImage::from_pixel(90, 40, image::Rgb(color))
            .save_with_format(path, image::ImageFormat::Jpeg)
            .unwrap();
    }

    fn load(dir: &Path) -> DecodedPhotos {
        load_or_decode(&Dataset::scan(dir).unwrap(), 16, DecodeWatch::NONE).unwrap()
    }

    #[test]
    fn the_second_run_reads_the_cache_and_a_changed_folder_is_decoded_again() {
        let dir = tempfile::tempdir().unwrap();
        photo(&dir.path().join("cat/1.jpg"), [200, 30, 10]);
        fs::write(dir.path().join("cat/2.jpg"), b"this is not a jpeg").unwrap();
        photo(&dir.path().join("dog/0.jpg"), [10, 30, 200]);
        photo(&dir.path().join("dog/1.jpg"), [10, 30, 200]);

        let first = load(dir.path());
        let Source::DecodedAndCached(cache) = &first.source else {
            panic!("{:?}", first.source)
        };
        assert_eq!(first.images.len(), 3);
        assert_eq!(first.image_of_sample, [Some(0), None, Some(1), Some(2)]);
        assert_eq!(first.skipped.len(), 1);
        assert!(first.skipped[0].path.ends_with("cat/2.jpg"));
        let pixel = &first.images.image(0)[..3];
        assert!(pixel[0] > 180 && pixel[2] < 40, "{pixel:?}");

        let second = load(dir.path());
        assert_eq!(second.source, Source::Cache(cache.clone()));
        assert_eq!(second.image_of_sample, first.image_of_sample);
        assert_eq!(second.skipped[0].path, first.skipped[0].path);
        assert_eq!(second.skipped[0].reason, first.skipped[0].reason);
        for i in 0..3 {
            assert_eq!(second.images.image(i), first.images.image(i));
        }

        // A small cache is read into memory: truncating its file under a running catdog, as
        // another program might, cannot end it with SIGBUS.
        let copy = fs::read(cache).unwrap();
        fs::OpenOptions::new()
            .write(true)
            .open(cache)
            .unwrap()
            .set_len(0)
            .unwrap();
        for i in 0..3 {
            assert_eq!(second.images.image(i), first.images.image(i));
        }
        fs::write(cache, copy).unwrap();

        photo(&dir.path().join("dog/2.jpg"), [10, 200, 30]);
        let third = load(dir.path());
        let Source::DecodedAndCached(new_cache) = &third.source else {
            panic!("{:?}", third.source)
        };
        assert_eq!(third.images.len(), 4);
        assert!(!cache.exists(), "the old folder's cache is removed");

        // A damaged cache is never used: it is decoded and written again. (Replaced, not
        // changed in place: `third` still maps the old file.)
        let last_picture = third.images.image(3).to_vec();
        fs::remove_file(new_cache).unwrap();
        fs::write(new_cache, b"short").unwrap();
        let fourth = load(dir.path());
        assert!(
            matches!(fourth.source, Source::DecodedAndCached(_)),
            "{:?}",
            fourth.source
        );
        assert_eq!(fourth.images.image(3), last_picture);
    }

    #[test]
    fn decoding_stops_between_chunks_when_asked_and_leaves_no_cache() {
        let dir = tempfile::tempdir().unwrap();
        let photos = CHUNK_PHOTOS + 10;
        for i in 0..photos {
            let class = ["cat", "dog"][i % 2];
            let path = dir.path().join(format!("{class}/{i}.png"));
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            image::RgbImage::new(2, 2).save(&path).unwrap();
        }
        let dataset = Dataset::scan(dir.path()).unwrap();
        let decoded = std::sync::atomic::AtomicUsize::new(0);
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let watch = DecodeWatch {
            photo_done: &|| {
                decoded.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            },
            // Yes from the second question on: after the first chunk.
            stop: &|| asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= 1,
        };
        let err = load_or_decode(&dataset, 16, watch).unwrap_err();
        assert!(format!("{err:#}").contains("decoding stopped"), "{err:#}");
        assert_eq!(
            decoded.into_inner(),
            CHUNK_PHOTOS,
            "one chunk, not the folder"
        );
        let cache = cache_folders(dir.path()).remove(0);
        assert!(!cache.starts_with(dir.path()), "not among the photos");
        let left: Vec<_> = fs::read_dir(&cache).unwrap().flatten().collect();
        assert!(
            left.is_empty(),
            "nothing is left in the cache folder: {left:?}"
        );
    }
}
