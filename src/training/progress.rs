//! What a training run tells whoever watches it: decoding (from [`DataProgress`]), then every
//! batch and epoch.

use super::history::EpochStats;
use crate::data::DataProgress;

/// Hears how training goes, to draw it for a person. Every method does nothing by default,
/// so `&mut ()` trains silently.
pub trait TrainProgress: DataProgress {
    fn epoch_started(&mut self, _epoch: usize, _epochs: usize, _batches: usize) {}
    fn batch_finished(&mut self, _stats: &BatchStats) {}
    fn epoch_finished(&mut self, _stats: &EpochStats, _epochs: usize) {}
}

impl TrainProgress for () {}

/// The epoch in progress, after a batch.
#[derive(Clone, Copy, Debug)]
pub struct BatchStats {
    /// Mean training loss over the epoch's photos so far; `None` while `--epochs 0` gathers
    /// the features its last layer is fitted to.
    pub mean_loss: Option<f64>,
    /// Training photos per second since the epoch started (or resumed).
    pub photos_per_sec: f64,
}
