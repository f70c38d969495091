//! The helper thread that prepares the next batches, augmented where asked, while the device
//! trains on this one.

use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::Scope;

use super::augment::{Augmentation, batch_rng};
use super::batch::{HostBatch, Normalization};
use super::images::ImageSet;

/// Batches prepared ahead of the one training: enough to hide a slow batch, and the only
/// batches held in memory besides the one in use.
const PREFETCH_BATCHES: usize = 2;

/// Augmentation for one epoch of a run: which kind, and its draws' run seed and epoch.
#[derive(Clone, Copy, Debug)]
pub struct AugmentEpoch {
    pub kind: Augmentation,
    pub seed: u64,
    pub epoch: usize,
}

/// `batches[first..]` of `set`, prepared in order on a thread of `scope` while the caller
/// trains; at most [`PREFETCH_BATCHES`] wait ready. Dropping the receiver stops the thread.
pub fn prefetch<'scope>(
    scope: &'scope Scope<'scope, '_>,
    set: &'scope ImageSet,
    batches: &'scope [Vec<usize>],
    first: usize,
    normalization: &'scope Normalization,
    augmentation: Option<AugmentEpoch>,
) -> Receiver<HostBatch> {
    let (ready, receiver) = sync_channel(PREFETCH_BATCHES);
    scope.spawn(move || {
        for (number, indices) in batches.iter().enumerate().skip(first) {
            let mut rng = augmentation.map(|a| (a.kind, batch_rng(a.seed, a.epoch, number)));
            let augment = rng.as_mut().map(|(kind, rng)| (*kind, rng));
            let batch = HostBatch::new(set, indices, normalization, augment);
            if ready.send(batch).is_err() {
                return; // the training loop stopped early
            }
        }
    });
    receiver
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::batch::batch_indices;

    #[test]
    fn prefetched_batches_arrive_in_order_and_match_batches_made_directly() {
        let set = crate::data::synth::generate(20, 16, 3);
        let batches = batch_indices(set.len(), 6, Some(1));
        let norm = Normalization::default();
        let kind = Augmentation::Photo;
        let augmentation = Some(AugmentEpoch {
            kind,
            seed: 5,
            epoch: 2,
        });
        let received: Vec<HostBatch> = std::thread::scope(|scope| {
            prefetch(scope, &set, &batches, 1, &norm, augmentation)
                .into_iter()
                .collect()
        });
        assert_eq!(received.len(), batches.len() - 1, "starts at batch 1");
        for (number, batch) in received.iter().enumerate().map(|(i, b)| (i + 1, b)) {
            let mut rng = batch_rng(5, 2, number);
            let direct = HostBatch::new(&set, &batches[number], &norm, Some((kind, &mut rng)));
            assert_eq!(batch.labels, direct.labels);
            assert_eq!(batch.images, direct.images);
            let plain = HostBatch::new(&set, &batches[number], &norm, None);
            assert_ne!(batch.images, plain.images, "augmented");
        }
    }
}
