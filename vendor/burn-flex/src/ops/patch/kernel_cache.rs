//! Winograd-transformed kernels kept from call to call for the fused inference convolutions
//! (`conv2d_then`, `conv2d_max_pool2x2_relu`), whose weights stay the same from one batch to
//! the next. Transforming them again at every call wrote 36 values per kernel pair (113 MB
//! for ResNet-18's 3×3 layers) and took a tenth of its inference at batch 16.
//!
//! An entry holds the weights' shared data itself, so their buffer cannot be freed and its
//! address reused, nor written in place (flex writes in place only into data it alone
//! holds): the same data and layout are the same weights. Entries whose data only entries
//! hold any more (their model is gone) are dropped at the next call, and the oldest ones
//! when the kept kernels would pass [`MAX_BYTES`].

extern crate std;

use alloc::sync::Arc;
use alloc::vec::Vec;
use std::sync::Mutex;

use burn_std::Bytes;

use crate::{FlexTensor, Layout};

/// The most bytes of transformed kernels kept: ResNet-18's take 113 MB.
const MAX_BYTES: usize = 256 << 20;

struct Entry {
    weights: Arc<Bytes>,
    layout: Layout,
    kernels: Arc<Vec<f32>>,
}

static KEPT: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// The transformed kernels of `weights`: kept ones where these weights have been seen
/// before, otherwise `transform`'s, then kept.
pub(super) fn transformed(
    weights: &FlexTensor,
    transform: impl FnOnce() -> Vec<f32>,
) -> Arc<Vec<f32>> {
    let data = weights.data_arc();
    let layout = weights.layout().clone();
    let find = |kept: &[Entry]| {
        kept.iter()
            .find(|entry| Arc::ptr_eq(&entry.weights, &data) && entry.layout == layout)
            .map(|entry| Arc::clone(&entry.kernels))
    };
    {
        let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Kept data that only entries hold (one, or several for one buffer under several
        // layouts): its model is gone.
        let held = |entry: &Entry| {
            let entries = kept.iter().filter(|e| Arc::ptr_eq(&e.weights, &entry.weights));
            Arc::strong_count(&entry.weights) > entries.count()
        };
        let alive: Vec<bool> = kept.iter().map(held).collect();
        let mut alive = alive.into_iter();
        kept.retain(|_| alive.next().unwrap_or(false));
        if let Some(kernels) = find(&kept) {
            return kernels;
        }
    }
    let kernels = Arc::new(transform());
    let bytes = |kernels: &Vec<f32>| kernels.len() * size_of::<f32>();
    if bytes(&kernels) <= MAX_BYTES {
        let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Another thread may have transformed the same weights meanwhile: keep one entry.
        if let Some(kernels) = find(&kept) {
            return kernels;
        }
        let mut total: usize = kept.iter().map(|entry| bytes(&entry.kernels)).sum();
        while total + bytes(&kernels) > MAX_BYTES {
            total -= bytes(&kept.remove(0).kernels);
        }
        kept.push(Entry {
            weights: data,
            layout,
            kernels: Arc::clone(&kernels),
        });
    }
    kernels
}
