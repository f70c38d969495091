//! Whether a model's probabilities mean what they say: of the photos it calls "dog 0.9", are
//! nine in ten dogs? The expected calibration error measures it ([`Reliability`]); one
//! temperature that divides the logits before the softmax, fitted on a run's validation
//! photos ([`Runner::calibrate`]), brings it down without changing a single label.

use anyhow::Result;
use serde::Serialize;

use super::{Readout, Runner};
use crate::data::ImageSet;
use crate::model::{Calibration, TEMPERATURES};

/// Equal-width confidence bins of the calibration error and the reliability diagram.
pub const BINS: usize = 10;

/// Below this probability `predict` says "not sure" instead of a bare label, unless told
/// another threshold.
pub const NOT_SURE_BELOW: f32 = 0.8;

impl Runner<'_> {
    /// Fits the network's temperature on the labelled pictures `set` (a run's validation
    /// photos, at the runner's size), read out plainly; `None` for an empty set, or one that
    /// does not bound it (see [`fit_temperature`]).
    pub fn calibrate(&self, set: &ImageSet) -> Result<Option<Calibration>> {
        if set.is_empty() {
            return Ok(None);
        }
        debug_assert_eq!(set.size(), self.size);
        let images: Vec<&[u8]> = (0..set.len()).map(|i| set.image(i)).collect();
        let rows = self
            .with_readout(Readout::PLAIN)
            .log_probabilities(&images)?;
        Ok(calibration_of(&rows, set.labels()))
    }
}

/// The temperature fitted to log-probability `rows` of photos labelled `labels`, and the
/// calibration error before and after; `None` where [`fit_temperature`] finds none.
pub(crate) fn calibration_of(rows: &[Vec<f64>], labels: &[usize]) -> Option<Calibration> {
    let fitted = fit_temperature(rows, labels)?;
    // Never sharper than the network itself: a temperature below 1 fitted on validation
    // photos like the training ones made a model surer on photos unlike them, and wrong
    // more often at 0.95 or more (docs/accuracy.md, 2026-12-03: 10 such answers of 2,002
    // at 1, 21 at the fitted 0.88).
    let temperature = fitted.max(1.0);
    let error_at = |temperature: f64| {
        let scaled: Vec<Vec<f64>> = rows.iter().map(|r| scale(r, temperature)).collect();
        Reliability::of_log_probabilities(&scaled, labels).error
    };
    Some(Calibration {
        temperature,
        fitted,
        photos: rows.len(),
        error_before: error_at(1.0),
        error_after: error_at(temperature),
    })
}

/// The temperature `T` that minimises the mean negative log-likelihood of `labels` under
/// `softmax(row / T)`. Each row may be logits or log-probabilities (the softmax of either,
/// divided by `T`, is the same). The likelihood is convex in `1 / T`, so a golden-section
/// search over `1 / T` finds the one minimum, within catdog's range of temperatures. `None`
/// where it is at the cold end: photos all answered right keep rewarding a colder
/// temperature, which would make every answer 1.00 and "not sure" never said. The hot end
/// stays: a model no better than a coin toss on them is told to answer about 0.5, not sure.
pub fn fit_temperature(rows: &[Vec<f64>], labels: &[usize]) -> Option<f64> {
    let loss = |inverse: f64| {
        rows.iter()
            .zip(labels)
            .map(|(row, &label)| -scale_by_inverse(row, inverse)[label])
            .sum::<f64>()
    };
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut low, mut high) = (1.0 / TEMPERATURES.end(), 1.0 / TEMPERATURES.start());
    let mut a = high - ratio * (high - low);
    let mut b = low + ratio * (high - low);
    let (mut loss_a, mut loss_b) = (loss(a), loss(b));
    while high - low > 1e-6 * high {
        if loss_a <= loss_b {
            high = b;
            (b, loss_b) = (a, loss_a);
            a = high - ratio * (high - low);
            loss_a = loss(a);
        } else {
            low = a;
            (a, loss_a) = (b, loss_b);
            b = low + ratio * (high - low);
            loss_b = loss(b);
        }
    }
    let temperature = 2.0 / (low + high);
    if temperature < TEMPERATURES.start() * 1.01 {
        return None;
    }
    // A round figure, as catdog.json shows it: the third decimal changes no answer.
    Some((temperature * 1000.0).round() / 1000.0)
}

/// A row of logits or log-probabilities divided by `temperature`, as log-probabilities.
pub fn scale(row: &[f64], temperature: f64) -> Vec<f64> {
    scale_by_inverse(row, 1.0 / temperature)
}

fn scale_by_inverse(row: &[f64], inverse: f64) -> Vec<f64> {
    let scaled: Vec<f64> = row.iter().map(|v| v * inverse).collect();
    let max = scaled.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let log_sum = scaled.iter().map(|v| (v - max).exp()).sum::<f64>().ln() + max;
    scaled.iter().map(|v| v - log_sum).collect()
}

/// One confidence bin: the photos whose top probability fell in `low..high`, how sure the
/// model was of them on average, and how many it got right.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bin {
    pub low: f64,
    pub high: f64,
    pub photos: usize,
    pub mean_confidence: f64,
    pub accuracy: f64,
}

/// How well probabilities match outcomes: per bin, and as the expected calibration error
/// (the photo-weighted mean gap between confidence and accuracy; 0 is perfect).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reliability {
    pub bins: Vec<Bin>,
    pub error: f64,
}

impl Reliability {
    /// From each photo's top probability and whether that answer was right.
    pub fn of(answers: &[(f64, bool)]) -> Reliability {
        let mut sums = vec![(0usize, 0.0f64, 0usize); BINS];
        for &(confidence, right) in answers {
            let bin = ((confidence * BINS as f64) as usize).min(BINS - 1);
            sums[bin].0 += 1;
            sums[bin].1 += confidence;
            sums[bin].2 += usize::from(right);
        }
        let total = answers.len().max(1) as f64;
        let mut error = 0.0;
        let bins = sums
            .into_iter()
            .enumerate()
            .map(|(i, (photos, confidence, right))| {
                let count = photos.max(1) as f64;
                let (mean_confidence, accuracy) = (confidence / count, right as f64 / count);
                error += photos as f64 / total * (mean_confidence - accuracy).abs();
                Bin {
                    low: i as f64 / BINS as f64,
                    high: (i + 1) as f64 / BINS as f64,
                    photos,
                    mean_confidence,
                    accuracy,
                }
            })
            .collect();
        Reliability { bins, error }
    }

    /// From rows of log-probabilities and the labels.
    pub fn of_log_probabilities(rows: &[Vec<f64>], labels: &[usize]) -> Reliability {
        let answers: Vec<(f64, bool)> = rows
            .iter()
            .zip(labels)
            .map(|(row, &label)| {
                let (best, log_probability) = row
                    .iter()
                    .copied()
                    .enumerate()
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .unwrap_or((0, 0.0));
                (log_probability.exp(), best == label)
            })
            .collect();
        Reliability::of(&answers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Photos whose true probability of "class 1" is known, with a model that reports
    /// logits `stretch` times too large: over-confident for `stretch > 1`.
    fn overconfident(stretch: f64, photos: usize) -> (Vec<Vec<f64>>, Vec<usize>) {
        let mut rng = StdRng::seed_from_u64(5);
        (0..photos)
            .map(|_| {
                let logit: f64 = rng.random_range(-4.0..4.0);
                let p_one = 1.0 / (1.0 + (-logit).exp());
                let label = usize::from(rng.random_bool(p_one));
                (vec![0.0, logit * stretch], label)
            })
            .unzip()
    }

    #[test]
    fn an_overconfident_model_gets_its_stretch_back_as_temperature() {
        let (rows, labels) = overconfident(2.5, 20_000);
        let temperature = fit_temperature(&rows, &labels).unwrap();
        assert!((2.3..2.7).contains(&temperature), "{temperature}");
        let before = Reliability::of_log_probabilities(&rows, &labels).error;
        let scaled: Vec<Vec<f64>> = rows.iter().map(|r| scale(r, temperature)).collect();
        let after = Reliability::of_log_probabilities(&scaled, &labels).error;
        assert!(before > 0.08 && after < 0.02, "{before} → {after}");
        // The same photos, honestly reported, need no temperature.
        let (honest, labels) = overconfident(1.0, 20_000);
        let temperature = fit_temperature(&honest, &labels).unwrap();
        assert!((0.9..1.1).contains(&temperature), "{temperature}");
    }

    /// Photos all answered right do not bound the temperature: no fit, rather than the
    /// coldest one allowed. Photos all answered wrong get the hottest: answers near 0.5.
    #[test]
    fn photos_all_right_fit_no_temperature_and_all_wrong_the_hottest() {
        let rows = vec![vec![0.0, 1.5], vec![0.3, 0.0], vec![0.0, 0.2]];
        assert_eq!(fit_temperature(&rows, &[1, 0, 1]), None);
        let hottest = fit_temperature(&rows, &[0, 1, 0]).unwrap();
        assert!(hottest > 99.0, "{hottest}");
        let mixed = fit_temperature(&rows, &[1, 1, 1]).unwrap();
        assert!(mixed > 0.0 && mixed < 99.0, "{mixed}");
    }

    #[test]
    fn scaling_keeps_every_label_and_sums_to_one() {
        let row = [-0.1f64.ln(), -0.9f64.ln()].map(|v| -v).to_vec();
        for temperature in [0.5, 1.0, 3.0] {
            let scaled = scale(&row, temperature);
            let total: f64 = scaled.iter().map(|v| v.exp()).sum();
            assert!((total - 1.0).abs() < 1e-12);
            assert!(scaled[1] > scaled[0]);
        }
        assert!((scale(&row, 1.0)[1].exp() - 0.9).abs() < 1e-12);
        assert!(scale(&row, 3.0)[1].exp() < 0.9 && scale(&row, 0.5)[1].exp() > 0.9);
    }

    #[test]
    fn the_calibration_error_weighs_each_bin_by_its_photos() {
        // Ten photos at 0.95, all right (gap 0.05), and ten at 0.65, half right (gap 0.15).
        let mut answers = vec![(0.95, true); 10];
        answers.extend((0..10).map(|i| (0.65, i % 2 == 0)));
        let reliability = Reliability::of(&answers);
        assert!((reliability.error - 0.1).abs() < 1e-12, "{reliability:?}");
        assert_eq!(reliability.bins.len(), BINS);
        let top = &reliability.bins[9];
        assert_eq!((top.photos, top.accuracy), (10, 1.0));
        assert_eq!(reliability.bins[6].photos, 10);
        // A probability of exactly 1 falls in the top bin.
        assert_eq!(Reliability::of(&[(1.0, true)]).bins[9].photos, 1);
    }
}
