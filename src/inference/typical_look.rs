//! Fitting what a model's validation photos look like inside it ([`Typical`]), so that
//! `predict` can call a photo unlike all of them unusual.

use anyhow::Result;
use burn::tensor::Device;

use super::calibration::calibration_of;
use super::{Readout, read_out};
use crate::data::{ImageSet, Normalization};
use crate::device::Batch;
use crate::model::{Calibration, LOOK_BLOCK, Network, Typical};

/// What training fits on `set` (a run's validation photos) in one pass of `model`: the
/// temperature ([`super::calibrate`]) and, for a network with looks, [`Typical`]. Either is
/// `None` where there is nothing to fit (an empty set, photos that bound no temperature, a
/// ResNet-18, fewer than [`crate::model::FIT_PHOTOS_AT_LEAST`] photos).
pub fn calibrate_and_fit_typical(
    model: &Network,
    set: &ImageSet,
    normalization: &Normalization,
    device: &Device,
    batch_size: usize,
) -> Result<(Option<Calibration>, Option<Typical>)> {
    if set.is_empty() {
        return Ok((None, None));
    }
    let images: Vec<&[u8]> = (0..set.len()).map(|i| set.image(i)).collect();
    let batch = Batch::Chosen(batch_size);
    let (rows, typical) = read_and_fit(model, &images, set.size(), normalization, device, batch)?;
    Ok((calibration_of(&rows, set.labels()), typical))
}

/// The [`Typical`] of `images` (each `size × size × 3` bytes) through `model`; `None` for a
/// network without looks or too few photos.
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
    Ok(read_and_fit(model, images, size, normalization, device, batch)?.1)
}

/// The log-probability rows of `images` and the [`Typical`] of their looks, from one pass.
fn read_and_fit(
    model: &Network,
    images: &[&[u8]],
    size: u32,
    normalization: &Normalization,
    device: &Device,
    batch: Batch,
) -> Result<(Vec<Vec<f64>>, Option<Typical>)> {
    let readout = Readout {
        looks: true,
        ..Readout::PLAIN
    };
    let (rows, looks) = read_out(model, images, size, normalization, device, readout, batch)?;
    Ok((
        rows,
        looks.and_then(|looks| Typical::fit(LOOK_BLOCK, &looks)),
    ))
}
