//! Fitting what a model's validation photos look like inside it ([`Typical`]), so that
//! `predict` can call a photo unlike all of them unusual.

use anyhow::Result;
use burn::tensor::Device;

use super::{Readout, read_out};
use crate::data::{ImageSet, Normalization};
use crate::device::Batch;
use crate::model::{LOOK_BLOCK, Network, Typical};

/// Fits [`Typical`] on the looks of `set` (a run's validation photos) through `model`; `None`
/// for a network without looks (ResNet-18) or too few photos
/// ([`crate::model::FIT_PHOTOS_AT_LEAST`]).
pub fn fit_typical(
    model: &Network,
    set: &ImageSet,
    normalization: &Normalization,
    device: &Device,
    batch_size: usize,
) -> Result<Option<Typical>> {
    let images: Vec<&[u8]> = (0..set.len()).map(|i| set.image(i)).collect();
    let batch = Batch::Chosen(batch_size);
    fit_on(model, &images, set.size(), normalization, device, batch)
}

/// [`fit_typical`] on `images`, each `size × size × 3` bytes.
pub(crate) fn fit_on(
    model: &Network,
    images: &[&[u8]],
    size: u32,
    normalization: &Normalization,
    device: &Device,
    batch: Batch,
) -> Result<Option<Typical>> {
    if images.is_empty() || model.kind().look_size().is_none() {
        return Ok(None);
    }
    let readout = Readout {
        looks: true,
        ..Readout::PLAIN
    };
    let (_, looks) = read_out(model, images, size, normalization, device, readout, batch)?;
    Ok(looks.and_then(|looks| Typical::fit(LOOK_BLOCK, &looks)))
}
