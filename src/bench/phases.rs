//! One backend at one batch size, phase by phase: training, inference, and with `--data` the
//! photo pipeline (decoding, batches from the pixel cache, training from it).

use anyhow::{Context, Result, bail};
use burn::module::Module;
use burn::tensor::Tensor;

use super::measure::{measure, warm_up};
use super::{BackendRun, BenchProgress, BenchSettings, Measurement};
use crate::data::{
    AugmentEpoch, Augmentation, DeviceBatch, HostBatch, ImageSet, Normalization, Sample,
    batch_indices, batch_rng, decode_photos, prefetch, synth,
};
use crate::device::Backend;
use crate::inference::Runner;
use crate::model::TrainSettings;
use crate::training::Trainer;

/// AdamW's learning rate in the bench: constant, as in the PyTorch reference.
const LEARNING_RATE: f64 = 1e-3;

/// Photos of `--data` that decode, and their pixels at the bench's size.
pub(super) type Photos = (Vec<Sample>, ImageSet);

/// The generated pictures every backend is measured on at one batch size, in the same
/// batches, and, with `--data-on-device`, those batches uploaded once.
struct Workload<'a> {
    pictures: &'a ImageSet,
    batches: Vec<Vec<usize>>,
    normalization: Normalization,
    /// Each batch on the device, for training and for inference; empty unless
    /// `--data-on-device`.
    resident: Vec<(DeviceBatch, Tensor<4>)>,
}

impl Workload<'_> {
    fn batch(&self, step: usize) -> &[usize] {
        &self.batches[step % self.batches.len()]
    }

    fn host_batch(&self, step: usize) -> HostBatch {
        HostBatch::new(self.pictures, self.batch(step), &self.normalization, None)
    }

    fn resident(&self, step: usize) -> Option<&(DeviceBatch, Tensor<4>)> {
        self.resident.get(step % self.batches.len())
    }
}

/// Measures `backend` at `batch_size`: the phases in the order they run.
pub(super) fn bench_backend(
    backend: &Backend,
    batch_size: usize,
    pictures: &ImageSet,
    photos: Option<&Photos>,
    settings: &BenchSettings,
    progress: &mut dyn BenchProgress,
) -> Result<BackendRun> {
    let mut trainer = Trainer::new(
        synth::CLASSES.len(),
        &backend.device,
        &TrainSettings {
            network: settings.network,
            seed: 7,
            ..TrainSettings::default()
        },
    )?;
    let mut workload = Workload {
        pictures,
        batches: (0..pictures.len())
            .collect::<Vec<_>>()
            .chunks(batch_size)
            .map(<[usize]>::to_vec)
            .collect(),
        normalization: Normalization::default(),
        resident: Vec::new(),
    };
    if settings.data_on_device {
        workload.resident = (0..workload.batches.len())
            .map(|step| {
                let training = workload.host_batch(step).upload(trainer.device());
                let inference = workload.host_batch(step).upload(&backend.device).images;
                (training, inference)
            })
            .collect();
    }

    let (warmup_seconds, train) = training(backend, &mut trainer, &workload, settings, progress)?;
    let (infer_warmup_seconds, infer) =
        inference(backend, &trainer, &workload, settings, progress)?;
    let (decode, cached_batches, end_to_end_train) = match photos {
        Some(photos) => {
            let (decode, cached, end_to_end) = photo_pipeline(
                backend,
                &mut trainer,
                batch_size,
                photos,
                train.median,
                settings,
                progress,
            )?;
            (Some(decode), Some(cached), Some(end_to_end))
        }
        None => (None, None, None),
    };

    Ok(BackendRun {
        backend: backend.kind,
        device: backend.device_name.clone(),
        batch_size,
        precision: backend.precision,
        hardware_gpu: backend.is_hardware_gpu(),
        train_images_per_sec: train.median,
        infer_images_per_sec: infer.median,
        train,
        infer,
        decode,
        cached_batches,
        end_to_end_train,
        warmup_seconds,
        infer_warmup_seconds,
    })
}

/// Training steps: the warm-up's seconds, then the timed windows.
fn training(
    backend: &Backend,
    trainer: &mut Trainer,
    workload: &Workload,
    settings: &BenchSettings,
    progress: &mut dyn BenchProgress,
) -> Result<(f64, Measurement)> {
    let train_step = |trainer: &mut Trainer, step: usize| match workload.resident(step) {
        Some((batch, _)) => trainer.step_on_device(batch.clone(), LEARNING_RATE),
        None => trainer.step(workload.host_batch(step), LEARNING_RATE),
    };
    progress.started(backend, "warming up");
    let warmup_seconds = warm_up(settings, settings.warmup_steps, |step| {
        train_step(trainer, step)
    })?;
    progress.started(backend, "training");
    let mut step = 0;
    let train = measure(settings, || {
        step += 1;
        train_step(trainer, step)?;
        Ok(workload.batch(step).len())
    })?;
    Ok((warmup_seconds, train))
}

/// Inference with the trained network, as `predict` and `eval` run it: the warm-up's seconds
/// (other kernels than training's, compiled and tuned at their first use), then the windows.
fn inference(
    backend: &Backend,
    trainer: &Trainer,
    workload: &Workload,
    settings: &BenchSettings,
    progress: &mut dyn BenchProgress,
) -> Result<(f64, Measurement)> {
    progress.started(backend, "inference");
    let model = trainer.model().valid().folded();
    let mut step = 0;
    let mut infer_step = || {
        step += 1;
        let indices = workload.batch(step);
        let pictures = workload.pictures;
        let runner = Runner::new(
            &model,
            pictures.size(),
            &workload.normalization,
            &backend.device,
            indices.len(),
        );
        match workload.resident(step) {
            Some((_, images)) => {
                runner.log_probabilities_on_device(images.clone())?;
            }
            None => {
                let images: Vec<&[u8]> = indices.iter().map(|&i| pictures.image(i)).collect();
                runner.probabilities(&images)?;
            }
        }
        Ok(indices.len())
    };
    let infer_warmup_seconds = warm_up(settings, settings.warmup_steps, |_| infer_step())?;
    let infer = measure(settings, infer_step)?;
    Ok((infer_warmup_seconds, infer))
}

/// With `--data`: decoding the photos, augmented batches from the pixel cache, and training
/// from the pixel cache with batches prepared on a helper thread, as `catdog train` does.
fn photo_pipeline(
    backend: &Backend,
    trainer: &mut Trainer,
    batch_size: usize,
    (samples, cached): &Photos,
    train_rate: f64,
    settings: &BenchSettings,
    progress: &mut dyn BenchProgress,
) -> Result<(Measurement, Measurement, Measurement)> {
    let normalization = Normalization::default();
    progress.started(backend, "decoding photos");
    let mut next = 0;
    let decode = measure(settings, || {
        let batch: Vec<&Sample> = (0..batch_size * 4)
            .map(|i| &samples[(next + i) % samples.len()])
            .collect();
        next += batch.len();
        decode_batch(&batch, settings.image_size)
    })?;

    progress.started(backend, "batches from the pixel cache");
    let order = batch_indices(cached.len(), batch_size, Some(7));
    let mut number = 0;
    let cached_batches = measure(settings, || {
        number += 1;
        let mut rng = batch_rng(7, 1, number);
        let indices = &order[number % order.len()];
        let augment = Some((Augmentation::Light, &mut rng));
        Ok(HostBatch::new(cached, indices, &normalization, augment).len())
    })?;

    progress.started(backend, "training from the pixel cache");
    // Enough batches for every window even at three times the pure training speed.
    let needed = (train_rate * settings.seconds * (settings.repeats + 1) as f64 * 3.0
        / batch_size as f64) as usize
        + 8;
    let cycled: Vec<Vec<usize>> = order.iter().cycle().take(needed).cloned().collect();
    let augmentation = Some(AugmentEpoch {
        kind: Augmentation::Light,
        seed: 7,
        epoch: 1,
    });
    let end_to_end = std::thread::scope(|scope| {
        let mut ready =
            prefetch(scope, cached, &cycled, 0, &normalization, augmentation).into_iter();
        measure(settings, || {
            let batch = ready
                .next()
                .context("the bench ran out of prepared batches")?;
            let photos = batch.len();
            trainer.step(batch, LEARNING_RATE)?;
            Ok(photos)
        })
    })?;
    Ok((decode, cached_batches, end_to_end))
}

/// Decodes a batch of photos on every core, as the first run over a folder does; returns
/// how many decoded (all of them, unless photos changed since the folder was cached).
fn decode_batch(samples: &[&Sample], size: u32) -> Result<usize> {
    let decoded = decode_photos(samples, size, &|| {});
    match decoded.iter().filter(|photo| photo.is_ok()).count() {
        0 => bail!(
            "the photos no longer decode: {:#}",
            decoded[0].as_ref().unwrap_err()
        ),
        photos => Ok(photos),
    }
}
