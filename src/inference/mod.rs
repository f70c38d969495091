//! A trained network at work: class probabilities for photos ([`predict`]), accuracy on
//! labelled photos ([`Runner::evaluate`], [`evaluate_folder`]), and a contact sheet of its
//! mistakes.
//!
//! Validation during training, `catdog eval`, `catdog predict` and the bench's inference all go
//! through one forward-and-read-back loop, [`Runner`], so they can never disagree.

mod calibration;
mod contact_sheet;
mod evaluation;
mod predict;
mod typical_look;

use anyhow::Result;
use burn::tensor::{Device, Tensor};

use crate::data::{Normalization, images_on};
use crate::device::{Batch, explain_panic, is_cpu};
use crate::model::{ImagenetNetwork, ImagenetView, Network};

pub use calibration::{BINS, Bin, NOT_SURE_BELOW, Reliability, fit_temperature, scale};
pub use predict::{Answer, CAT_OR_DOG_AT_LEAST, Neither, Prediction, Predictor};

pub(crate) use contact_sheet::{
    check_path as check_contact_sheet_path, write as write_contact_sheet,
};
pub(crate) use evaluation::{
    Evaluation, Mistake, Photos, SURE, evaluate_folder, fit_typical_on, held_out_photos,
};

#[cfg(test)]
pub(crate) use evaluation::NotSure;

/// Photos sent to the device at once by `predict` and `eval`.
const BATCH: usize = 64;

/// How the network's logits become probabilities.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Readout {
    /// Average each image's probabilities with its mirror image's (test-time augmentation).
    pub flip: bool,
    /// Divide the logits by this before the softmax (temperature scaling; 1 leaves them).
    pub temperature: f64,
    /// Read each image's look out too ([`Network::forward_with_look`]), from the unflipped
    /// pass, where the network has one.
    pub looks: bool,
}

impl Readout {
    /// The network's own softmax, one pass per image.
    pub const PLAIN: Readout = Readout {
        flip: false,
        temperature: 1.0,
        looks: false,
    };
}

/// What a pass over some images read out: log-probability rows, each image's look where
/// [`Readout::looks`] asked for them and the network has them, and what ImageNet's network
/// makes of each (of the image as it is, not its mirror) where the runner has it.
#[derive(Default)]
pub(crate) struct Readings {
    pub rows: Vec<Vec<f64>>,
    pub looks: Option<Vec<Vec<f32>>>,
    pub views: Option<Vec<ImagenetView>>,
}

impl Readings {
    fn extend(&mut self, more: Readings) {
        self.rows.extend(more.rows);
        if let Some(looks) = more.looks {
            self.looks.get_or_insert_with(Vec::new).extend(looks);
        }
        if let Some(views) = more.views {
            self.views.get_or_insert_with(Vec::new).extend(views);
        }
    }
}

/// A network ready to answer: the model, the pictures' side (each `size × size × 3` bytes) and
/// normalisation, the device, how the logits are read out, and how many photos go to the
/// device at once. Prediction, evaluation, calibration, the typical-look fit and the bench's
/// inference all run through it.
#[derive(Clone, Copy)]
pub struct Runner<'a> {
    model: &'a Network,
    size: u32,
    normalization: &'a Normalization,
    device: &'a Device,
    readout: Readout,
    batch: Batch,
    /// ImageNet's own network, to say what each image looks like too.
    imagenet: Option<&'a ImagenetNetwork>,
}

impl<'a> Runner<'a> {
    /// `model` on `device`, `batch_size` pictures at a time (`--batch-size`), read out plainly.
    pub fn new(
        model: &'a Network,
        size: u32,
        normalization: &'a Normalization,
        device: &'a Device,
        batch_size: usize,
    ) -> Runner<'a> {
        Runner {
            model,
            size,
            normalization,
            device,
            readout: Readout::PLAIN,
            batch: Batch::Chosen(batch_size),
            imagenet: None,
        }
    }

    /// The same runner, reading the logits out as `readout` says.
    pub fn with_readout(self, readout: Readout) -> Runner<'a> {
        Runner { readout, ..self }
    }

    /// Natural logarithms of the class probabilities of `images`, one row per image, and
    /// their looks and ImageNet's view where asked for; sent to the device a batch at a
    /// time. A device failing (out of memory, lost) is an error saying what to try.
    pub(crate) fn run(&self, images: &[&[u8]]) -> Result<Readings> {
        let mut readings = Readings {
            rows: Vec::with_capacity(images.len()),
            ..Readings::default()
        };
        for chunk in images.chunks(self.batch.size().max(1)) {
            let pixels = self.normalization.to_chw(chunk.iter().copied(), self.size);
            readings.extend(explain_panic(self.batch, || {
                self.pass(images_on(pixels, self.device))
            })?);
        }
        Ok(readings)
    }

    /// [`Runner::run`]'s log-probability rows alone.
    pub(crate) fn log_probabilities(&self, images: &[&[u8]]) -> Result<Vec<Vec<f64>>> {
        Ok(self.run(images)?.rows)
    }

    /// Class probabilities of `images`, one row per image.
    pub fn probabilities(&self, images: &[&[u8]]) -> Result<Vec<Vec<f32>>> {
        Ok(probabilities(self.log_probabilities(images)?))
    }

    /// [`Runner::log_probabilities`] of one batch already on the device, normalised.
    pub(crate) fn log_probabilities_on_device(&self, input: Tensor<4>) -> Result<Vec<Vec<f64>>> {
        explain_panic(self.batch, || self.pass(input).rows)
    }

    /// One batch on the device through the network, read out. With a flip, each pass is scaled
    /// by the temperature before the two are averaged. On the CPU, a batch of no more photos
    /// than it has threads leaves cores idle in each pass, so then the passes (ImageNet's, the
    /// plain one and the mirror's) go side by side; larger batches, and a GPU's, go one pass
    /// at a time, so as not to hold several batches' activations at once.
    fn pass(&self, input: Tensor<4>) -> Readings {
        let side_by_side = is_cpu(self.device) && input.dims()[0] <= rayon::current_num_threads();
        let mirror = self.readout.flip.then(|| input.clone().flip([3]));
        let (views, ((plain, looks), mirrored)) = both(
            side_by_side,
            || self.imagenet.map(|imagenet| imagenet.views(input.clone())),
            || {
                both(
                    side_by_side,
                    || self.plain(input.clone()),
                    || mirror.map(|m| self.scaled(log_softmax_rows(self.model.forward(m)))),
                )
            },
        );
        let Some(mirrored) = mirrored else {
            return Readings {
                rows: plain,
                looks,
                views,
            };
        };
        let rows = plain
            .into_iter()
            .zip(mirrored)
            .map(|(a, b)| {
                a.iter()
                    .zip(&b)
                    .map(|(a, b)| ((a.exp() + b.exp()) / 2.0).ln())
                    .collect()
            })
            .collect();
        Readings { rows, looks, views }
    }

    /// The plain pass: scaled log-probability rows, and the looks where asked for.
    fn plain(&self, input: Tensor<4>) -> (Vec<Vec<f64>>, Option<Vec<Vec<f32>>>) {
        let (logits, looks) = if self.readout.looks {
            let (logits, look) = self.model.forward_with_look(input);
            (logits, look.map(float_rows))
        } else {
            (self.model.forward(input), None)
        };
        (self.scaled(log_softmax_rows(logits)), looks)
    }

    /// `rows` divided by the readout's temperature.
    fn scaled(&self, rows: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
        if self.readout.temperature == 1.0 {
            return rows;
        }
        rows.iter()
            .map(|r| scale(r, self.readout.temperature))
            .collect()
    }
}

/// `a()` and `b()`, on two threads at once where `together`, else one after the other.
pub(crate) fn both<A: Send, B: Send>(
    together: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    match together {
        true => rayon::join(a, b),
        false => (a(), b()),
    }
}

/// A `[rows, columns]` tensor read back to the host, row by row.
pub(crate) fn float_rows(tensor: Tensor<2>) -> Vec<Vec<f32>> {
    let data = tensor.into_data();
    let columns = data.shape()[1];
    let values: Vec<f32> = data.iter::<f32>().collect();
    values.chunks(columns).map(<[f32]>::to_vec).collect()
}

/// Log-probability rows as probabilities.
fn probabilities(log_probabilities: Vec<Vec<f64>>) -> Vec<Vec<f32>> {
    log_probabilities
        .into_iter()
        .map(|row| row.into_iter().map(|lp| lp.exp() as f32).collect())
        .collect()
}

/// The logits read back to the host, as log-softmax rows computed in f64 (no underflow for
/// a confidently wrong photo).
fn log_softmax_rows(logits: Tensor<2>) -> Vec<Vec<f64>> {
    let data = logits.into_data();
    let classes = data.shape()[1];
    let values: Vec<f64> = data.iter::<f32>().map(f64::from).collect();
    values
        .chunks(classes)
        .map(|row| {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let log_sum = row.iter().map(|v| (v - max).exp()).sum::<f64>().ln() + max;
            row.iter().map(|v| v - log_sum).collect()
        })
        .collect()
}

/// The index and probability of the most probable class.
pub(crate) fn most_probable(probabilities: &[f32]) -> (usize, f32) {
    probabilities
        .iter()
        .copied()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{CpuBackend, cpu_backend};
    use crate::model::NetworkKind;

    /// A panic inside the network (burn's way of reporting a device out of memory or lost)
    /// comes back from prediction as an error, not as a crash. Here the panic is a real one
    /// from burn: the network is on ndarray, the photos are sent to flex.
    #[test]
    fn a_panic_in_the_network_is_an_error() {
        let device = cpu_backend(CpuBackend::Ndarray).device;
        let model = Network::new(NetworkKind::SmallCnn, 2, 0.0, &device);
        let flex = cpu_backend(CpuBackend::Flex).device;
        let photos = [[0u8; 3 * 8 * 8]; 3];
        let photos: Vec<&[u8]> = photos.iter().map(|p| p.as_slice()).collect();
        let normalization = Normalization::default();
        let runner = Runner {
            batch: Batch::Fixed(2),
            ..Runner::new(&model, 8, &normalization, &flex, 2)
        };
        let err = runner.log_probabilities(&photos).unwrap_err().to_string();
        assert!(err.contains("the computation stopped"), "{err}");
    }
}
