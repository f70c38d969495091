//! A training run's pictures: a photo folder found, decoded (or read from the pixel cache)
//! and split into training and validation sets; or generated pictures, split the same way.

use std::path::Path;
use std::time::Instant;

use anyhow::{Result, bail};

use super::cache::{DecodeWatch, Source, load_or_decode};
use super::dataset::{Dataset, stratified_split};
use super::decode::Skipped;
use super::images::ImageSet;
use super::synth;

/// Hears how decoding goes, to draw it for a person. Every method does nothing by default.
pub trait DataProgress: Sync {
    /// A line worth telling the user ("training on generated pictures", a skipped photo).
    fn note(&mut self, _line: &str) {}
    fn decode_started(&mut self, _photos: usize) {}
    /// One more photo decoded; called from many threads.
    fn photo_decoded(&self) {}
    fn decode_finished(&mut self) {}
}

impl DataProgress for () {}

/// Where a run's pictures come from, and how they are split.
#[derive(Clone, Copy)]
pub struct DataSpec<'a> {
    /// A photo folder; `None` for [`synth`]'s generated pictures.
    pub folder: Option<&'a Path>,
    /// How many pictures to generate when there is no folder.
    pub generated_count: usize,
    pub image_size: u32,
    /// The share of each class held back for validation.
    pub val_split: f64,
    /// Seeds the split and the generated pictures.
    pub seed: u64,
    /// Asked between chunks of photos whether to stop decoding (Ctrl-C).
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

/// Training and validation pictures, decoded.
pub struct PreparedData {
    /// Where the pictures came from, e.g. "data/photos (a sub-folder per class)".
    pub description: String,
    pub classes: Vec<String>,
    pub train: ImageSet,
    pub val: ImageSet,
    pub skipped: Vec<Skipped>,
    /// Photos decoded per second, when photos were decoded now.
    pub decode_images_per_sec: Option<f64>,
    /// Identifies the exact pictures, so that a resumed run can check it has the same ones.
    pub fingerprint: String,
    /// The photo folder's listing ([`crate::data::Dataset::listing`]); `None` for generated
    /// pictures.
    pub listing: Option<String>,
}

/// The pictures `spec` names, decoded and split.
pub fn prepare(spec: DataSpec, progress: &mut dyn DataProgress) -> Result<PreparedData> {
    match spec.folder {
        Some(folder) => prepare_folder(folder, spec, progress),
        None => Ok(prepare_generated(spec, progress)),
    }
}

fn prepare_generated(spec: DataSpec, progress: &mut dyn DataProgress) -> PreparedData {
    progress.note(&format!(
        "No --data given: training on {} generated cat and dog faces \
         (see `catdog synth`); pass --data DIR to train on your own photos.",
        spec.generated_count
    ));
    let all = synth::generate(spec.generated_count, spec.image_size, spec.seed);
    let (train, val) = stratified_split(all.labels(), spec.val_split, spec.seed);
    PreparedData {
        description: format!("{} generated pictures", spec.generated_count),
        classes: synth::CLASSES.map(String::from).to_vec(),
        train: all.select(&train),
        val: all.select(&val),
        skipped: Vec::new(),
        decode_images_per_sec: None,
        fingerprint: generated_fingerprint(spec.generated_count, spec.image_size, spec.seed),
        listing: None,
    }
}

fn prepare_folder(
    dir: &Path,
    spec: DataSpec,
    progress: &mut dyn DataProgress,
) -> Result<PreparedData> {
    let dataset = Dataset::scan(dir)?;
    dataset.check_trainable()?;
    if let Some(note) = dataset.dates_note() {
        progress.note(&format!("{note}."));
    }
    progress.decode_started(dataset.samples.len());
    let started = Instant::now();
    let tick = || progress.photo_decoded();
    let watch = DecodeWatch {
        photo_done: &tick,
        stop: spec.stop,
    };
    let photos = load_or_decode(&dataset, spec.image_size, watch)?;
    let seconds = started.elapsed().as_secs_f64();
    progress.decode_finished();
    let decode_images_per_sec = match &photos.source {
        Source::Cache(path) => {
            progress.note(&format!(
                "Read the decoded photos from the cache {} ({:.1} s).",
                path.display(),
                seconds
            ));
            None
        }
        Source::DecodedAndCached(path) => {
            progress.note(&format!(
                "Cached the decoded photos in {}: later runs skip decoding.",
                path.display()
            ));
            Some(dataset.samples.len() as f64 / seconds)
        }
        Source::DecodedInMemory(why) => {
            progress.note(&format!(
                "Could not cache the decoded photos ({why}); the next run decodes them again."
            ));
            Some(dataset.samples.len() as f64 / seconds)
        }
    };

    for skip in &photos.skipped {
        progress.note(&format!("skipped {}: {}", skip.path.display(), skip.reason));
    }
    let (train_samples, val_samples) = dataset.split(spec.val_split, spec.seed);
    let decoded = |samples: Vec<usize>| -> Vec<usize> {
        samples
            .into_iter()
            .filter_map(|sample| photos.image_of_sample[sample])
            .collect()
    };
    let train = photos.images.select(&decoded(train_samples));
    let val = photos.images.select(&decoded(val_samples));
    if train.is_empty() {
        bail!("none of the photos in {} could be decoded", dir.display());
    }
    Ok(PreparedData {
        description: format!("{} ({})", dir.display(), dataset.layout),
        classes: dataset.classes,
        train,
        val,
        skipped: photos.skipped,
        decode_images_per_sec,
        fingerprint: dataset.fingerprint,
        listing: Some(dataset.listing),
    })
}

/// The fingerprint of `synth`'s generated pictures: they are fixed by these.
fn generated_fingerprint(count: usize, image_size: u32, seed: u64) -> String {
    format!("generated-{count}-{image_size}px-seed{seed}")
}
