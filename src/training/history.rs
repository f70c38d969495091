//! A run's history, epoch by epoch, and what it decides: which epoch is the best one, which
//! one the run keeps, and when patience runs out.

use serde::{Deserialize, Serialize};

/// How one epoch went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochStats {
    /// Counted from 1; 0 for the one pass of `--epochs 0`, which fits a pretrained network's
    /// last layer alone.
    pub epoch: usize,
    pub train_loss: f64,
    /// Share of the training photos (augmented, when augmenting) the network got right while
    /// it learned from them: a running figure over the epoch, as PyTorch scripts report it.
    pub train_accuracy: f64,
    pub val_loss: Option<f64>,
    pub val_accuracy: Option<f64>,
    /// Training photos per wall-clock second over the whole epoch: batching, copying to the
    /// device, forward, backward and optimizer step (validation not included).
    pub train_images_per_sec: f64,
    pub train_seconds: f64,
}

impl EpochStats {
    /// Whether this is the one pass of `--epochs 0`: the last layer fitted alone, no training
    /// steps.
    pub fn is_last_layer_alone(&self) -> bool {
        self.epoch == 0
    }
}

/// The epoch with the best validation accuracy, if any was validated; between equal
/// accuracies, the lower validation loss, then the earlier epoch.
pub fn best_epoch(history: &[EpochStats]) -> Option<usize> {
    let better = |a: &EpochStats, b: &EpochStats| {
        (a.val_accuracy, -a.val_loss.unwrap_or(f64::INFINITY))
            > (b.val_accuracy, -b.val_loss.unwrap_or(f64::INFINITY))
    };
    history
        .iter()
        .filter(|stats| stats.val_accuracy.is_some())
        .fold(None, |best: Option<&EpochStats>, stats| match best {
            Some(best) if !better(stats, best) => Some(best),
            _ => Some(stats),
        })
        .map(|stats| stats.epoch)
}

/// True when `patience` epochs have passed since the best one: time to stop early.
pub fn out_of_patience(history: &[EpochStats], patience: Option<usize>) -> bool {
    match (patience, best_epoch(history), history.last()) {
        (Some(patience), Some(best), Some(last)) => last.epoch - best >= patience,
        _ => false,
    }
}

/// The network of the best epoch so far, serialised as a checkpoint keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct BestEpoch {
    pub epoch: usize,
    pub model: Vec<u8>,
}

/// Training photos per second once warmed up: the median over the epochs after the first (on
/// wgpu the first also compiles and tunes its kernels), or the first's in a one-epoch run.
pub fn steady_images_per_sec(history: &[EpochStats]) -> f64 {
    let mut rates: Vec<f64> = match history {
        [only] => vec![only.train_images_per_sec],
        [_, later @ ..] => later.iter().map(|e| e.train_images_per_sec).collect(),
        [] => return 0.0,
    };
    rates.sort_by(f64::total_cmp);
    crate::numbers::median(&rates)
}

/// The epoch whose network a run saves: the best validated one, or the last without
/// validation. (A run of `--epochs 0` has one, epoch 0: its last layer fitted alone.)
pub fn kept_epoch(history: &[EpochStats]) -> &EpochStats {
    let last = history.last().expect("training runs at least one epoch");
    best_epoch(history)
        .and_then(|best| history.iter().find(|stats| stats.epoch == best))
        .unwrap_or(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(epoch: usize, val: Option<(f64, f64)>) -> EpochStats {
        EpochStats {
            epoch,
            train_loss: 0.5,
            train_accuracy: 0.8,
            val_loss: val.map(|(loss, _)| loss),
            val_accuracy: val.map(|(_, accuracy)| accuracy),
            train_images_per_sec: 1.0,
            train_seconds: 1.0,
        }
    }

    #[test]
    fn the_best_epoch_has_the_best_accuracy_then_the_lowest_loss() {
        let history = [
            epoch(1, Some((0.6, 0.70))),
            epoch(2, Some((0.5, 0.80))),
            epoch(3, Some((0.4, 0.80))),
            epoch(4, Some((0.3, 0.75))),
        ];
        assert_eq!(best_epoch(&history), Some(3));
        assert_eq!(kept_epoch(&history).epoch, 3);
        assert!(!out_of_patience(&history, Some(2)));
        assert!(out_of_patience(&history, Some(1)));
        assert!(!out_of_patience(&history, None));

        let unvalidated = [epoch(1, None), epoch(2, None)];
        assert_eq!(best_epoch(&unvalidated), None);
        assert_eq!(kept_epoch(&unvalidated).epoch, 2, "the last epoch is kept");
        assert!(!out_of_patience(&unvalidated, Some(1)));
    }

    #[test]
    fn the_steady_speed_leaves_the_first_epoch_out() {
        let speeds = |rates: &[f64]| -> Vec<EpochStats> {
            rates
                .iter()
                .enumerate()
                .map(|(i, &rate)| EpochStats {
                    train_images_per_sec: rate,
                    ..epoch(i + 1, None)
                })
                .collect()
        };
        assert_eq!(
            steady_images_per_sec(&speeds(&[3.0, 100.0, 90.0, 110.0])),
            100.0
        );
        assert_eq!(steady_images_per_sec(&speeds(&[3.0, 100.0, 90.0])), 95.0);
        assert_eq!(steady_images_per_sec(&speeds(&[3.0])), 3.0);
    }
}
