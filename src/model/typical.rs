//! What the photos a model learned from look like inside it, to tell a photo unlike all of
//! them (a car, a face, a page of text) from a cat or a dog it is unsure of.
//!
//! A SmallCnn's third block sees textures and parts of shapes; the mean and spread of each of
//! its channels over the picture (its "look", [`super::SmallCnn::forward_with_look`]) sum a
//! photo up. Fitted on a run's validation photos, each of those numbers has a mean and a
//! spread; a photo whose look lies further from them (mean squared distance in spreads) than
//! all but [`UNUSUAL_SHARE`] of those photos is "unusual", and `predict` says "not sure".
//! On 22 sample pictures of scikit-image and scikit-learn (no cat, no dog) the built-in model
//! calls 15 unusual, and 2.1 % of Kaggle's originals; a full covariance did little better and
//! would have cost 1 MB (docs/accuracy.md).

use anyhow::{Result, ensure};
use serde::{Deserialize, Serialize};

/// The share of the fitting photos that lie beyond the limit: of photos like those the model
/// learned from, about this many are called unusual.
pub const UNUSUAL_SHARE: f64 = 0.02;

/// Fewer validation photos than this fit nothing: their spread would say little.
pub const FIT_PHOTOS_AT_LEAST: usize = 20;

/// Added to every variance, so that a channel that never fired on the fitting photos does not
/// divide by zero.
const VARIANCE_FLOOR: f64 = 1e-6;

/// The mean and spread of each number of the look of a model's validation photos, and the
/// distance beyond which a photo is unusual.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Typical {
    /// The block whose output the look sums up (0-based): [`super::small_cnn::LOOK_BLOCK`].
    pub block: usize,
    pub mean: Vec<f32>,
    /// Standard deviations, [`VARIANCE_FLOOR`] included.
    pub spread: Vec<f32>,
    /// Photos further than this ([`Typical::distance`]) are unusual.
    pub limit: f64,
    /// The photos it was fitted on, and the share of them beyond `limit` (ties aside):
    /// [`UNUSUAL_SHARE`], rounded down to whole photos.
    pub photos: usize,
    pub share: f64,
}

impl Typical {
    /// Fits the looks of `block`'s output of photos like those a model learned from; `None`
    /// for fewer than [`FIT_PHOTOS_AT_LEAST`] different looks (copies of one photo count
    /// once: many copies of a few photos would make every other photo unusual), looks that
    /// are not all numbers of one size, or looks all alike (a network whose block outputs
    /// nothing), which leave no limit.
    pub fn fit(block: usize, looks: &[Vec<f32>]) -> Option<Typical> {
        let looks = distinct(looks);
        let size = looks.first()?.len();
        if looks.len() < FIT_PHOTOS_AT_LEAST
            || size == 0
            || looks
                .iter()
                .any(|l| l.len() != size || l.iter().any(|v| !v.is_finite()))
        {
            return None;
        }
        let n = looks.len() as f64;
        let mean: Vec<f64> = (0..size)
            .map(|i| looks.iter().map(|l| f64::from(l[i])).sum::<f64>() / n)
            .collect();
        let spread: Vec<f64> = (0..size)
            .map(|i| {
                let variance = looks
                    .iter()
                    .map(|l| (f64::from(l[i]) - mean[i]).powi(2))
                    .sum::<f64>()
                    / n;
                (variance + VARIANCE_FLOOR).sqrt()
            })
            .collect();
        let mut typical = Typical {
            block,
            mean: mean.iter().map(|&m| m as f32).collect(),
            spread: spread.iter().map(|&s| s as f32).collect(),
            limit: 0.0,
            photos: looks.len(),
            share: 0.0,
        };
        let mut distances: Vec<f64> = looks.iter().map(|l| typical.distance(l)).collect();
        distances.sort_by(f64::total_cmp);
        let beyond = (UNUSUAL_SHARE * n).floor() as usize;
        typical.limit = distances[looks.len() - 1 - beyond];
        typical.share = beyond as f64 / n;
        (typical.limit.is_finite() && typical.limit > 0.0).then_some(typical)
    }

    /// How far `look` lies from the fitting photos': the mean over its numbers of the squared
    /// distance from their mean, in spreads (about 1 for a typical photo).
    pub fn distance(&self, look: &[f32]) -> f64 {
        let sum: f64 = look
            .iter()
            .zip(&self.mean)
            .zip(&self.spread)
            .map(|((&x, &m), &s)| ((f64::from(x) - f64::from(m)) / f64::from(s)).powi(2))
            .sum();
        sum / self.mean.len().max(1) as f64
    }

    /// Whether `look` lies beyond the limit; a look with a NaN is unusual too.
    pub fn is_unusual(&self, look: &[f32]) -> bool {
        let distance = self.distance(look);
        distance.is_nan() || distance > self.limit
    }

    /// Refuses a description that cannot be this network's: `size` numbers a look (`None` for
    /// a network without one), at `block`.
    pub(crate) fn check(&self, block: usize, size: Option<usize>) -> Result<()> {
        ensure!(
            size == Some(self.mean.len()) && self.block == block,
            "it describes the look of {} numbers at block {}, which this network does not have",
            self.mean.len(),
            self.block
        );
        ensure!(
            self.spread.len() == self.mean.len()
                && self.mean.iter().all(|m| m.is_finite())
                && self.spread.iter().all(|s| s.is_finite() && *s > 0.0)
                && self.limit.is_finite()
                && self.limit > 0.0,
            "its typical look has a spread of zero, numbers that are not, or a limit of {}",
            self.limit
        );
        ensure!(
            (0.0..=1.0).contains(&self.share),
            "its typical look says a share of {} of its photos lie beyond the limit: a share \
             is from 0 to 1",
            self.share
        );
        Ok(())
    }
}

/// `looks` with each repeated look (the same photo twice, bit for bit) kept once, in order.
fn distinct(looks: &[Vec<f32>]) -> Vec<&Vec<f32>> {
    let mut seen = std::collections::HashSet::new();
    looks
        .iter()
        .filter(|look| seen.insert(look.iter().map(|v| v.to_bits()).collect::<Vec<u32>>()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Looks of `n` photos spread evenly around (1, 2, 3).
    fn looks(n: usize) -> Vec<Vec<f32>> {
        (0..n)
            .map(|i| {
                let t = (i as f32 / n as f32 - 0.5) * 0.2;
                vec![1.0 + t, 2.0 - t, 3.0 + t * t]
            })
            .collect()
    }

    #[test]
    fn photos_like_the_fitting_ones_pass_and_others_do_not() {
        let fitting = looks(200);
        let typical = Typical::fit(2, &fitting).unwrap();
        assert_eq!(typical.photos, 200);
        assert!(
            (typical.mean[0] - 0.9995).abs() < 1e-3,
            "{:?}",
            typical.mean
        );
        let beyond = fitting.iter().filter(|l| typical.is_unusual(l)).count();
        // 2 % of 200, ties aside.
        assert!(beyond <= 4, "{beyond} of 200 fitting photos unusual");
        assert!(!typical.is_unusual(&[1.0, 2.0, 3.0]));
        assert!(typical.is_unusual(&[1.5, 2.0, 3.0]));
        assert!(typical.is_unusual(&[1.0, 2.0, f32::NAN]));
        assert!(typical.distance(&[1.0, 2.0, 3.0]) < typical.limit);
    }

    #[test]
    fn too_few_or_mismatched_looks_fit_nothing() {
        assert!(Typical::fit(2, &looks(FIT_PHOTOS_AT_LEAST - 1)).is_none());
        assert!(Typical::fit(2, &looks(FIT_PHOTOS_AT_LEAST)).is_some());
        let mut uneven = looks(50);
        uneven[3].pop();
        assert!(Typical::fit(2, &uneven).is_none());
        let mut nan = looks(50);
        nan[3][0] = f32::NAN;
        assert!(Typical::fit(2, &nan).is_none());
        // All alike: every distance 0, so no limit a photo could stay within.
        assert!(Typical::fit(2, &vec![vec![0.0; 3]; 50]).is_none());
        assert_eq!(Typical::fit(2, &looks(50)).unwrap().share, 0.02);
        assert_eq!(Typical::fit(2, &looks(49)).unwrap().share, 0.0);
    }

    /// 400 copies of two photos are two photos: too few to fit, where they gave a limit
    /// that called every other photo unusual; copies of enough photos fit as those photos.
    #[test]
    fn copies_of_a_photo_count_once() {
        let two = looks(2);
        let copies: Vec<Vec<f32>> = (0..400).map(|i| two[i % 2].clone()).collect();
        assert!(Typical::fit(2, &copies).is_none());
        let thirty = looks(30);
        let tenfold: Vec<Vec<f32>> = (0..300).map(|i| thirty[i % 30].clone()).collect();
        assert_eq!(Typical::fit(2, &tenfold), Typical::fit(2, &thirty));
        assert_eq!(Typical::fit(2, &tenfold).unwrap().photos, 30);
    }

    #[test]
    fn a_description_of_another_network_is_refused() {
        let typical = Typical::fit(2, &looks(50)).unwrap();
        typical.check(2, Some(3)).unwrap();
        assert!(typical.check(2, Some(4)).is_err());
        assert!(typical.check(1, Some(3)).is_err());
        assert!(typical.check(2, None).is_err());
        let share = Typical {
            share: 7.5,
            ..typical.clone()
        };
        let err = share.check(2, Some(3)).unwrap_err().to_string();
        assert!(err.contains("a share of 7.5"), "{err}");
        let zero = Typical {
            spread: vec![0.0; 3],
            ..typical
        };
        assert!(zero.check(2, Some(3)).is_err());
    }
}
