//! The comparison a bench's figures are read for: the fastest CPU backend against the fastest
//! hardware GPU, at one batch size or each at its best, and the speed-ups over the CPU
//! backends. `output/` only puts these into words.

use super::{BackendRun, BenchReport};
use crate::device::BackendKind;

/// The fastest CPU backend and the fastest hardware GPU among some runs, and wgpu on a
/// software rasterizer where it ran.
pub struct Sides<'a> {
    pub cpu: Option<&'a BackendRun>,
    pub gpu: Option<&'a BackendRun>,
    pub software: Option<&'a BackendRun>,
}

impl<'a> Sides<'a> {
    pub fn of(runs: &[&'a BackendRun]) -> Sides<'a> {
        let fastest =
            |keep: &dyn Fn(&BackendRun) -> bool| fastest(runs.iter().copied().filter(|r| keep(r)));
        Sides {
            cpu: fastest(&|r| r.backend != BackendKind::Wgpu),
            gpu: fastest(&|r| r.hardware_gpu),
            software: fastest(&|r| r.backend == BackendKind::Wgpu && !r.hardware_gpu),
        }
    }

    /// The sides at the first batch size `report` measured, the one its answer compares at.
    pub fn at_first_batch(report: &'a BenchReport) -> Sides<'a> {
        let first = report.settings.batch_sizes[0];
        let runs: Vec<&BackendRun> = report
            .runs
            .iter()
            .filter(|r| r.batch_size == first)
            .collect();
        Sides::of(&runs)
    }

    /// Each side at its own best batch size.
    pub fn at_best_batch(report: &'a BenchReport) -> Sides<'a> {
        let all: Vec<&BackendRun> = report.runs.iter().collect();
        Sides::of(&all)
    }

    /// How many times the GPU's training rate the CPU's is, where both ran.
    pub fn gpu_over_cpu(&self) -> Option<f64> {
        let (cpu, gpu) = (self.cpu?, self.gpu?);
        Some(gpu.train_images_per_sec / cpu.train_images_per_sec)
    }
}

/// The run with the most training photos per second.
fn fastest<'a>(runs: impl Iterator<Item = &'a BackendRun>) -> Option<&'a BackendRun> {
    runs.max_by(|a, b| a.train_images_per_sec.total_cmp(&b.train_images_per_sec))
}

/// `backend`'s run with the most training photos per second over every batch size, if it ran.
pub fn best_run(report: &BenchReport, backend: BackendKind) -> Option<&BackendRun> {
    fastest(report.runs.iter().filter(|r| r.backend == backend))
}

/// The slowest and the fastest CPU backend's training rate at `batch_size`, the bases of the
/// table's speed-ups.
pub fn cpu_range(report: &BenchReport, batch_size: usize) -> Option<(f64, f64)> {
    let rates = report
        .runs
        .iter()
        .filter(|r| r.backend != BackendKind::Wgpu && r.batch_size == batch_size)
        .map(|r| r.train_images_per_sec);
    rates.fold(None, |range, rate| match range {
        None => Some((rate, rate)),
        Some((low, high)) => Some((f64::min(low, rate), f64::max(high, rate))),
    })
}
