//! Timing: untimed warm-up steps, then timed windows of at least a given length, each giving
//! photos per second; a figure is their median, with the min and max.

use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use super::BenchSettings;
use crate::numbers::median;

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
    pub fn from_windows(windows: Vec<f64>) -> Measurement {
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

/// Runs `step` (given its number) `steps` times, untimed: wgpu compiles and tunes its
/// kernels then. Returns the seconds it took.
pub(super) fn warm_up<T>(
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

/// Runs `step` (which returns the photos it processed) in `settings.repeats` windows of at
/// least `settings.seconds` each.
pub(super) fn measure(
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
