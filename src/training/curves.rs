//! `curves.svg`: a run's loss and accuracy per epoch, drawn beside the model it saved.

use std::path::Path;

use anyhow::Result;

use super::history::EpochStats;
use crate::chart::{self, Curves, Series};

/// Draws `history`, marking `kept_epoch`, to `path` (SVG or PNG by its extension).
pub(crate) fn write(history: &[EpochStats], kept_epoch: usize, path: &Path) -> Result<()> {
    let percent = |a: f64| a * 100.0;
    let curves = Curves {
        epochs: history.iter().map(|s| s.epoch as f64).collect(),
        loss: Series {
            training: history.iter().map(|s| s.train_loss).collect(),
            validation: history.iter().map(|s| s.val_loss).collect(),
        },
        accuracy: Series {
            training: history.iter().map(|s| percent(s.train_accuracy)).collect(),
            validation: history
                .iter()
                .map(|s| s.val_accuracy.map(percent))
                .collect(),
        },
        kept_epoch,
    };
    chart::write(&curves, path)
}
