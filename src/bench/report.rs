//! What a bench found: each backend's figures, the machine, the settings, and the photos it
//! left out. `output/` renders it; `compare.rs` reads it.

use serde::Serialize;

use super::{BenchSettings, Measurement};
use crate::device::{self, BackendKind, CpuInfo, GpuAdapter, Precision};

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

impl Machine {
    /// This one.
    pub fn this() -> Machine {
        Machine {
            cpu: device::cpu_info().clone(),
            gpus: device::all_gpu_adapters().into_iter().cloned().collect(),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
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
