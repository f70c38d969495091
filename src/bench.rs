//! `catdog bench`: photos per second of every backend, measured the same way for each.
//!
//! Every backend trains the same network (`SmallCnn`, or ResNet-18 with `--network resnet18`)
//! on the same batches of the same pictures, at the
//! same image and batch size. After a warm-up (which also lets wgpu compile and autotune its
//! kernels), each figure is taken over `repeats` timed windows of at least `seconds` each, and
//! reported as the median with the min and max. A training step is forward, backward and
//! AdamW step (training's default weight decay), with the loss read back to the host, which
//! waits for the device: the clock stops only when the work is done. An inference step reads
//! the class probabilities back.
//!
//! Each batch size of `--batch-size 32,128,512` is measured in turn, so that each device can
//! show its best: a big GPU is idle at batch 32. Batches are made on the host and uploaded in
//! every step, as in training; with `--data-on-device` they are uploaded once, before the
//! clock starts, so that the figures are the device's alone.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use burn::module::Module;
use burn::tensor::Tensor;
use serde::Serialize;

use crate::data::{
    AugmentEpoch, Augmentation, Dataset, DecodeWatch, DeviceBatch, HostBatch, ImageSet,
    Normalization, Sample, batch_indices, batch_rng, decode_photos, load_or_decode, prefetch,
    synth,
};
use crate::device::{
    self, Backend, BackendChoice, BackendKind, Batch, CpuInfo, GpuAdapter, Precision, explain_panic,
};
use crate::inference::{Readout, class_probabilities, log_probabilities_on_device};
use crate::model::NetworkKind;
use crate::training::{FitSettings, Trainer, median};

/// AdamW's learning rate in the bench: constant, as in the PyTorch reference.
const LEARNING_RATE: f64 = 1e-3;

/// How to measure.
#[derive(Clone, Debug, Serialize)]
pub struct BenchSettings {
    /// The network every backend trains.
    pub network: NetworkKind,
    pub image_size: u32,
    /// Each is measured in turn.
    pub batch_sizes: Vec<usize>,
    /// Batches uploaded once and kept on the device, instead of made and uploaded each step.
    pub data_on_device: bool,
    /// Minimum length of one timed window.
    pub seconds: f64,
    /// Timed windows per figure.
    pub repeats: usize,
    /// Untimed steps before the first window.
    pub warmup_steps: usize,
    /// Photos to time the data pipeline and end-to-end training with; generated pictures
    /// are used for the pure training and inference figures either way.
    pub data: Option<PathBuf>,
    /// Set to stop the bench at the next step (the page's "Stop"); `None` runs it to the end.
    #[serde(skip)]
    pub cancel: Option<Arc<AtomicBool>>,
}

impl BenchSettings {
    /// Ends the bench with an error where it was asked to stop.
    fn go_on(&self) -> Result<()> {
        match &self.cancel {
            Some(cancel) if cancel.load(Ordering::SeqCst) => bail!("stopped before the end"),
            _ => Ok(()),
        }
    }
}

impl Default for BenchSettings {
    fn default() -> Self {
        BenchSettings {
            network: NetworkKind::SmallCnn,
            image_size: 64,
            batch_sizes: vec![32],
            data_on_device: false,
            seconds: 3.0,
            repeats: 3,
            warmup_steps: 3,
            data: None,
            cancel: None,
        }
    }
}

/// Photos per second over several windows.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Photos per second of each window, in the order they ran.
    pub windows: Vec<f64>,
}

impl Measurement {
    fn from_windows(windows: Vec<f64>) -> Measurement {
        let mut sorted = windows.clone();
        sorted.sort_by(f64::total_cmp);
        Measurement {
            median: median(&sorted),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            windows,
        }
    }
}

/// One backend's figures.
#[derive(Clone, Debug, Serialize)]
pub struct BackendRun {
    pub backend: BackendKind,
    pub device: String,
    pub batch_size: usize,
    /// The float type it computed in.
    pub precision: Precision,
    /// Whether `device` is a real GPU (wgpu can also run on a software rasterizer).
    pub hardware_gpu: bool,
    /// Training photos per second (median): the headline figure.
    pub train_images_per_sec: f64,
    pub infer_images_per_sec: f64,
    pub train: Measurement,
    pub infer: Measurement,
    /// Decode + resize photos per second from the photo files, with `--data`.
    pub decode: Option<Measurement>,
    /// Photos per second made into augmented training batches from the pixel cache (one
    /// thread, no decoding), with `--data`.
    pub cached_batches: Option<Measurement>,
    /// Training photos per second as `catdog train --augment` runs it, with `--data`:
    /// augmented batches from the pixel cache, prepared on a helper thread while the device
    /// trains.
    pub end_to_end_train: Option<Measurement>,
    /// Seconds the training warm-up took (wgpu compiles and tunes its kernels then).
    pub warmup_seconds: f64,
    /// Seconds the inference warm-up took (as many batches as training's warm-up steps).
    pub infer_warmup_seconds: f64,
}

/// The machine a bench ran on.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub cpu: CpuInfo,
    pub gpus: Vec<GpuAdapter>,
    pub os: String,
}

/// Everything `catdog bench --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub catdog_version: String,
    pub machine: Machine,
    pub settings: BenchSettings,
    pub runs: Vec<BackendRun>,
    /// Photos of `--data` that do not decode: left out of every figure.
    pub skipped: Vec<SkippedPhoto>,
}

/// A photo the bench left out, and why.
#[derive(Clone, Debug, Serialize)]
pub struct SkippedPhoto {
    pub path: String,
    pub reason: String,
}

/// The backends `catdog bench` measures when none are named: wgpu where there is a hardware
/// GPU, then flex, and ndarray for SmallCnn (either width).
pub fn default_choices(network: NetworkKind) -> Vec<BackendChoice> {
    let mut choices = vec![BackendChoice::Flex];
    if network != NetworkKind::ResNet18 {
        choices.push(BackendChoice::Ndarray);
    }
    if device::hardware_gpu().is_some() {
        choices.insert(0, BackendChoice::Gpu);
    }
    choices
}

/// Why `default_choices` leaves ndarray out for ResNet-18, for the user who wonders.
pub const NDARRAY_LEFT_OUT: &str = "ndarray left out: it trains ResNet-18 so slowly that one \
    step takes minutes; `--backends flex,ndarray` measures it anyway";

/// Bytes of memory a training step on a CPU backend takes per float of its input batch,
/// with room to spare: the activations kept for the backward pass, their gradients and the
/// batch. Measured on flex on 2026-12-05 (the peak resident memory of `catdog bench`): 177
/// for SmallCnn at 64 px (between batches of 128 and 512: 364 and 1,200 MB), about 300 for
/// ResNet-18 at 224 px, batch 32 (1.45 GB, the network and its optimizer included).
const STEP_BYTES_PER_INPUT_FLOAT: u64 = 400;

/// Whether a backend of `kind` on `adapter` computes in this machine's memory: the CPU
/// backends, and wgpu on a software rasterizer (lavapipe, llvmpipe), which runs on the CPU.
pub fn in_host_memory(kind: BackendKind, adapter: Option<&GpuAdapter>) -> bool {
    kind != BackendKind::Wgpu || adapter.is_some_and(|a| !a.kind.is_hardware())
}

/// Refuses settings whose largest training step would take more than half of this machine's
/// memory on a CPU backend, before any work: at 1024 px and batch 4096 it would take
/// petabytes and end the process. The rule of `catdog bench` and of `catdog serve`'s race.
pub fn check_cpu_memory(settings: &BenchSettings) -> Result<()> {
    let memory = device::cpu_info().memory_bytes;
    let batch = settings.batch_sizes.iter().copied().max().unwrap_or(0) as u64;
    let floats = batch * u64::from(settings.image_size).pow(2) * 3;
    let needed = floats.saturating_mul(STEP_BYTES_PER_INPUT_FLOAT);
    if memory > 0 && needed > memory / 2 {
        bail!(
            "a training step of {batch} pictures of {} px takes about {} on the CPU, more than \
             half of this computer's {} of memory: give a smaller batch size or image size",
            settings.image_size,
            crate::fs::human_bytes(needed),
            crate::fs::human_bytes(memory)
        );
    }
    Ok(())
}

/// Opens each backend of `choices` once (`gpu` and `wgpu` are one), wgpu computing in
/// `precision`; `note` hears which GPU adapter opened and why, and that the CPU backends
/// compute in f32 whatever `precision` says.
pub fn open_backends(
    choices: &[BackendChoice],
    precision: Precision,
    note: &mut dyn FnMut(String),
) -> Result<Vec<Backend>> {
    let mut backends: Vec<Backend> = Vec::new();
    for &choice in choices {
        let selection = device::select(choice)?;
        let mut backend = selection.backend;
        if backends.iter().any(|b| b.kind == backend.kind) {
            continue;
        }
        if backend.kind == BackendKind::Wgpu {
            backend.set_precision(precision)?;
            note(format!(
                "wgpu on {}. {}",
                backend.device_name, selection.reason
            ));
        } else if precision != Precision::F32 {
            note(format!(
                "{} computes in f32 only; --precision {} applies to wgpu",
                backend.kind,
                precision.name()
            ));
        }
        backends.push(backend);
    }
    Ok(backends)
}

/// What the bench is doing, for a person watching.
pub trait BenchProgress {
    fn started(&mut self, _backend: &Backend, _what: &str) {}
}

impl BenchProgress for () {}

/// Benchmarks each backend in turn.
pub fn run(
    backends: &[Backend],
    settings: &BenchSettings,
    progress: &mut dyn BenchProgress,
) -> Result<BenchReport> {
    if settings.repeats == 0 || settings.batch_sizes.is_empty() || settings.batch_sizes.contains(&0)
    {
        bail!("the bench needs at least one window and one photo per batch");
    }
    if backends.iter().any(|b| in_host_memory(b.kind, b.adapter)) {
        check_cpu_memory(settings)?;
    }
    let mut skipped = Vec::new();
    let photos = match &settings.data {
        Some(dir) => {
            let data = Dataset::scan(dir)?;
            let cached = load_or_decode(&data, settings.image_size, DecodeWatch::NONE)?;
            if cached.images.is_empty() {
                bail!("none of the photos in {} could be decoded", dir.display());
            }
            // Only the photos that decode are timed, as `catdog train` trains only on them.
            let decodable: Vec<Sample> = data
                .samples
                .into_iter()
                .zip(&cached.image_of_sample)
                .filter_map(|(sample, image)| image.map(|_| sample))
                .collect();
            skipped = cached
                .skipped
                .iter()
                .map(|skip| SkippedPhoto {
                    path: skip.path.to_string_lossy().into_owned(),
                    reason: skip.reason.clone(),
                })
                .collect();
            Some((decodable, cached.images))
        }
        None => None,
    };
    let mut runs = Vec::new();
    for &batch_size in &settings.batch_sizes {
        // Eight batches of pictures, cycled through: the same data for every backend.
        let pictures = synth::generate(batch_size * 8, settings.image_size, 7);
        for backend in backends {
            runs.push(bench_backend(
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
        machine: Machine {
            cpu: device::cpu_info().clone(),
            gpus: device::all_gpu_adapters().into_iter().cloned().collect(),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        },
        settings: settings.clone(),
        runs,
        skipped,
    })
}

fn bench_backend(
    backend: &Backend,
    batch_size: usize,
    pictures: &ImageSet,
    photos: Option<&(Vec<Sample>, ImageSet)>,
    settings: &BenchSettings,
    progress: &mut dyn BenchProgress,
) -> Result<BackendRun> {
    let normalization = Normalization::default();
    let batches: Vec<Vec<usize>> = (0..pictures.len())
        .collect::<Vec<_>>()
        .chunks(batch_size)
        .map(<[usize]>::to_vec)
        .collect();
    let host_batch = |step: usize| {
        HostBatch::new(
            pictures,
            &batches[step % batches.len()],
            &normalization,
            None,
        )
    };
    let mut trainer = Trainer::new(
        synth::CLASSES.len(),
        &backend.device,
        &FitSettings {
            network: settings.network,
            seed: 7,
            ..FitSettings::default()
        },
    );

    // With --data-on-device, every batch uploaded once, for training and for inference.
    let resident: Vec<(DeviceBatch, Tensor<4>)> = if settings.data_on_device {
        (0..batches.len())
            .map(|step| {
                let training = host_batch(step).upload(trainer.device());
                let inference = host_batch(step).upload(&backend.device).images;
                (training, inference)
            })
            .collect()
    } else {
        Vec::new()
    };
    let train_step = |trainer: &mut Trainer, step: usize| match resident.get(step % batches.len()) {
        Some((batch, _)) => trainer.step_on_device(batch.clone(), LEARNING_RATE),
        None => trainer.step(host_batch(step), LEARNING_RATE),
    };

    progress.started(backend, "warming up");
    let warmup_seconds = warm_up(settings, settings.warmup_steps, |step| {
        train_step(&mut trainer, step)
    })?;

    progress.started(backend, "training");
    let mut step = 0;
    let train = measure(settings, || {
        step += 1;
        train_step(&mut trainer, step)?;
        Ok(batches[step % batches.len()].len())
    })?;

    progress.started(backend, "inference");
    // As `predict` and `eval` run it.
    let model = trainer.model().valid().folded();
    let mut step = 0;
    let mut infer_step = || {
        step += 1;
        let indices = &batches[step % batches.len()];
        match resident.get(step % batches.len()) {
            Some((_, images)) => explain_panic(Batch::Chosen(indices.len()), || {
                log_probabilities_on_device(&model, images.clone(), Readout::PLAIN);
            })?,
            None => {
                let images: Vec<&[u8]> = indices.iter().map(|&i| pictures.image(i)).collect();
                class_probabilities(
                    &model,
                    &images,
                    pictures.size(),
                    &normalization,
                    &backend.device,
                    false,
                )?;
            }
        }
        Ok(indices.len())
    };
    // Prediction runs other kernels than training (no gradients, batch norm folded into the
    // convolutions), which wgpu compiles and tunes at their first use: untimed too.
    let infer_warmup_seconds = warm_up(settings, settings.warmup_steps, |_| infer_step())?;
    let infer = measure(settings, infer_step)?;

    let (decode, cached_batches, end_to_end_train) = match photos {
        Some((samples, cached)) => {
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
            let needed = (train.median * settings.seconds * (settings.repeats + 1) as f64 * 3.0
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
            (Some(decode), Some(cached_batches), Some(end_to_end))
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

/// Runs `step` (which returns the photos it processed) in `settings.repeats` windows of at
/// least `settings.seconds` each.
/// Runs `step` (given its number) `steps` times, untimed: wgpu compiles and tunes its
/// kernels then. Returns the seconds it took.
fn warm_up<T>(
    settings: &BenchSettings,
    steps: usize,
    mut step: impl FnMut(usize) -> Result<T>,
) -> Result<f64> {
    let started = Instant::now();
    for number in 0..steps {
        settings.go_on()?;
        step(number)?;
    }
    Ok(started.elapsed().as_secs_f64())
}

fn measure(
    settings: &BenchSettings,
    mut step: impl FnMut() -> Result<usize>,
) -> Result<Measurement> {
    let mut windows = Vec::with_capacity(settings.repeats);
    for _ in 0..settings.repeats {
        let started = Instant::now();
        let mut photos = 0;
        while photos == 0 || started.elapsed().as_secs_f64() < settings.seconds {
            settings.go_on()?;
            photos += step()?;
        }
        windows.push(photos as f64 / started.elapsed().as_secs_f64());
    }
    Ok(Measurement::from_windows(windows))
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
