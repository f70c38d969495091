//! The article catdog answers: its figures, and the one job they are turned into waiting times
//! for ("ready in 10 minutes" or "in 3 days").

use crate::numbers::human_duration;

/// The article's figures: training a dog-vs-cat classifier, photos per second.
pub const ARTICLE_CPU: f64 = 10.0;
pub const ARTICLE_GPU: f64 = 1_000.0;

/// Multiply-adds of one photo's forward pass through the networks such articles mean, at
/// 224 px (torchvision's published figures for `resnet18` and `resnet50`).
pub const RESNET18_MULTIPLY_ADDS: f64 = 1.81e9;
pub const RESNET50_MULTIPLY_ADDS: f64 = 4.09e9;

/// Photos in the full Kaggle Dogs vs. Cats training set, the article's example.
pub const KAGGLE_PHOTOS: usize = 25_000;
/// Epochs a real training run takes: the yardstick for the time a speed means.
pub const EPOCHS: usize = 10;

/// How long `epochs` passes over `photos` take at `photos_per_sec`.
pub fn training_time(photos: usize, epochs: usize, photos_per_sec: f64) -> String {
    human_duration((photos * epochs) as f64 / photos_per_sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_articles_job_takes_hours_on_its_cpu_and_minutes_on_its_gpu() {
        // The article's CPU: 10 photos/s, 10 epochs over the Kaggle set.
        assert_eq!(
            training_time(KAGGLE_PHOTOS, EPOCHS, ARTICLE_CPU),
            "6 h 56 min"
        );
        assert_eq!(training_time(KAGGLE_PHOTOS, EPOCHS, ARTICLE_GPU), "4 min");
    }
}
