//! Fitting what a model's validation photos look like inside it ([`Typical`]), so that
//! `predict` can call a photo unlike all of them unusual.

use anyhow::Result;

use super::calibration::calibration_of;
use super::{Readout, Runner};
use crate::data::ImageSet;
use crate::model::{Calibration, LOOK_BLOCK, Typical};

impl Runner<'_> {
    /// What training fits on `set` (a run's validation photos, at the runner's size) in one
    /// pass: the temperature ([`Runner::calibrate`]) and, for a network with looks,
    /// [`Typical`]. Either is `None` where there is nothing to fit (an empty set, photos that
    /// bound no temperature, a ResNet-18, fewer than [`crate::model::FIT_PHOTOS_AT_LEAST`]
    /// photos).
    pub fn calibrate_and_fit_typical(
        &self,
        set: &ImageSet,
    ) -> Result<(Option<Calibration>, Option<Typical>)> {
        if set.is_empty() {
            return Ok((None, None));
        }
        debug_assert_eq!(set.size(), self.size);
        let images: Vec<&[u8]> = (0..set.len()).map(|i| set.image(i)).collect();
        let (rows, typical) = self.read_and_fit(&images)?;
        Ok((calibration_of(&rows, set.labels()), typical))
    }

    /// The [`Typical`] of `images`; `None` for a network without looks or too few photos.
    pub(crate) fn fit_typical(&self, images: &[&[u8]]) -> Result<Option<Typical>> {
        if images.is_empty() || self.model.kind().look_size().is_none() {
            return Ok(None);
        }
        Ok(self.read_and_fit(images)?.1)
    }

    /// The plain log-probability rows of `images` and the [`Typical`] of their looks, from one
    /// pass.
    fn read_and_fit(&self, images: &[&[u8]]) -> Result<(Vec<Vec<f64>>, Option<Typical>)> {
        let readout = Readout {
            looks: true,
            ..Readout::PLAIN
        };
        let readings = self.with_readout(readout).run(images)?;
        Ok((
            readings.rows,
            readings
                .looks
                .and_then(|looks| Typical::fit(LOOK_BLOCK, &looks)),
        ))
    }
}
