//! `catdog bench`: photos per second of every backend, measured the same way for each.
//!
//! Every backend trains the same network (`SmallCnn`, or ResNet-18 with `--network resnet18`)
//! on the same batches of the same pictures, at the same image and batch size. After a
//! warm-up (which also lets wgpu compile and autotune its kernels), each figure is taken over
//! `repeats` timed windows of at least `seconds` each, and reported as the median with the min
//! and max. A training step is forward, backward and AdamW step (training's default weight
//! decay), with the loss read back to the host, which waits for the device: the clock stops
//! only when the work is done. An inference step reads the class probabilities back.
//!
//! Each batch size of `--batch-size 32,128,512` is measured in turn, so that each device can
//! show its best: a big GPU is idle at batch 32. Batches are made on the host and uploaded in
//! every step, as in training; with `--data-on-device` they are uploaded once, before the
//! clock starts, so that the figures are the device's alone.
//!
//! - `settings.rs`: what to measure, its defaults and the one check of them;
//! - `backends.rs`: which backends, opened once, and the memory rule for the CPU;
//! - `phases.rs`: one backend at one batch size, phase by phase; `measure.rs` times them;
//! - `report.rs`: what was found; `compare.rs`: CPU against GPU, and the best batch size;
//! - `article.rs`: the article's figures and its job, for the comparison.

mod article;
mod backends;
mod compare;
mod measure;
mod phases;
mod report;
mod settings;

use anyhow::{Result, bail};

pub use article::{
    ARTICLE_CPU, ARTICLE_GPU, EPOCHS, KAGGLE_PHOTOS, RESNET18_MULTIPLY_ADDS,
    RESNET50_MULTIPLY_ADDS, training_time,
};
pub use backends::{any_in_host_memory, default_choices, ndarray_left_out, open_backends};
pub use compare::{Sides, best_run, cpu_range};
pub use measure::Measurement;
pub use report::{BackendRun, BenchReport, Machine, SkippedPhoto};
pub use settings::{BATCH_SIZES, BenchSettings};

use crate::data::{Dataset, DecodeWatch, Sample, load_or_decode, synth};
use crate::device::Backend;

/// What the bench is doing, for a person watching.
pub trait BenchProgress {
    fn started(&mut self, _backend: &Backend, _what: &str) {}
}

impl BenchProgress for () {}

/// Benchmarks each backend in turn, at each batch size, after checking `settings`.
pub fn run(
    backends: &[Backend],
    settings: &BenchSettings,
    progress: &mut dyn BenchProgress,
) -> Result<BenchReport> {
    settings.check(
        backends
            .iter()
            .any(|b| backends::in_host_memory(b.kind, b.adapter)),
    )?;
    let (photos, skipped) = match &settings.data {
        Some(dir) => {
            let (photos, skipped) = decodable_photos(dir, settings.image_size)?;
            (Some(photos), skipped)
        }
        None => (None, Vec::new()),
    };
    let mut runs = Vec::new();
    for &batch_size in &settings.batch_sizes {
        // Eight batches of pictures, cycled through: the same data for every backend.
        let pictures = synth::generate(batch_size * 8, settings.image_size, 7);
        for backend in backends {
            runs.push(phases::bench_backend(
                backend,
                batch_size,
                &pictures,
                photos.as_ref(),
                settings,
                progress,
            )?);
        }
    }
    Ok(BenchReport {
        catdog_version: env!("CARGO_PKG_VERSION").to_string(),
        machine: Machine::this(),
        settings: settings.clone(),
        runs,
        skipped,
    })
}

/// The photos of `dir` that decode, with their pixels at `size` from the pixel cache, and
/// those that do not: only the first are timed, as `catdog train` trains only on them.
fn decodable_photos(
    dir: &std::path::Path,
    size: u32,
) -> Result<(phases::Photos, Vec<SkippedPhoto>)> {
    let data = Dataset::scan(dir)?;
    let cached = load_or_decode(&data, size, DecodeWatch::NONE)?;
    if cached.images.is_empty() {
        bail!("none of the photos in {} could be decoded", dir.display());
    }
    let decodable: Vec<Sample> = data
        .samples
        .into_iter()
        .zip(&cached.image_of_sample)
        .filter_map(|(sample, image)| image.map(|_| sample))
        .collect();
    let skipped = cached
        .skipped
        .iter()
        .map(|skip| SkippedPhoto {
            path: skip.path.to_string_lossy().into_owned(),
            reason: skip.reason.clone(),
        })
        .collect();
    Ok(((decodable, cached.images), skipped))
}
