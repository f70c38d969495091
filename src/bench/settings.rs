//! What a bench measures and how: the settings, their defaults, and the one check that the
//! command line and `catdog serve`'s race both pass them through.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Result, bail};
use serde::Serialize;

use super::backends::check_cpu_memory;
use crate::model::{IMAGE_SIZES, NetworkKind};

/// The largest batch a bench takes: 4,096 photos a step.
pub const BATCH_SIZES: std::ops::RangeInclusive<usize> = 1..=4096;

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

impl BenchSettings {
    /// Refuses settings no bench can run, before any work: an image size the network cannot
    /// take, a batch size outside [`BATCH_SIZES`], a window that is no positive number of
    /// seconds, no window at all, and, where a backend computes in this machine's memory
    /// (`on_the_cpu`), a training step that would not fit in half of it.
    pub fn check(&self, on_the_cpu: bool) -> Result<()> {
        let smallest = (*IMAGE_SIZES.start()).max(self.network.smallest_image_size());
        if self.image_size < smallest {
            bail!(
                "the image size must be at least {smallest} px for {}, not {}",
                self.network.title(),
                self.image_size
            );
        }
        if self.image_size > *IMAGE_SIZES.end() {
            bail!(
                "the image size must be at most {} px, not {}",
                IMAGE_SIZES.end(),
                self.image_size
            );
        }
        if self.batch_sizes.is_empty() {
            bail!("the bench needs at least one batch size");
        }
        if let Some(bad) = self.batch_sizes.iter().find(|b| !BATCH_SIZES.contains(b)) {
            bail!(
                "the batch size must be {} to {}, not {bad}",
                BATCH_SIZES.start(),
                BATCH_SIZES.end()
            );
        }
        if !(self.seconds > 0.0 && self.seconds.is_finite()) {
            bail!(
                "a timed window must last a positive number of seconds, not {}",
                self.seconds
            );
        }
        if self.repeats == 0 {
            bail!("the bench needs at least one timed window");
        }
        if on_the_cpu {
            check_cpu_memory(self)?;
        }
        Ok(())
    }

    /// Ends the bench with an error where it was asked to stop.
    pub(super) fn go_on(&self) -> Result<()> {
        match &self.cancel {
            Some(cancel) if cancel.load(Ordering::SeqCst) => bail!("stopped before the end"),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_refuses_what_no_bench_can_run_and_names_it() {
        let refusal = |change: &dyn Fn(&mut BenchSettings)| {
            let mut settings = BenchSettings::default();
            change(&mut settings);
            format!("{:#}", settings.check(false).unwrap_err())
        };
        assert!(BenchSettings::default().check(true).is_ok());
        assert_eq!(
            refusal(&|s| {
                s.network = NetworkKind::ResNet18;
                s.image_size = 16;
            }),
            "the image size must be at least 32 px for ResNet-18, not 16"
        );
        assert_eq!(
            refusal(&|s| s.image_size = 2000),
            "the image size must be at most 1024 px, not 2000"
        );
        assert_eq!(
            refusal(&|s| s.batch_sizes = vec![32, 5000]),
            "the batch size must be 1 to 4096, not 5000"
        );
        assert_eq!(
            refusal(&|s| s.seconds = f64::NAN),
            "a timed window must last a positive number of seconds, not NaN"
        );
        assert_eq!(
            refusal(&|s| s.repeats = 0),
            "the bench needs at least one timed window"
        );
        let huge = BenchSettings {
            image_size: 1024,
            batch_sizes: vec![4096],
            ..BenchSettings::default()
        };
        assert!(huge.check(false).is_ok(), "a GPU's memory is its own");
        assert!(
            format!("{:#}", huge.check(true).unwrap_err()).contains("more than half"),
            "on the CPU"
        );
    }
}
