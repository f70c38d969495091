//! Speeds as waiting times: the article's "ready in 10 minutes" or "in 3 days", measured.

/// Photos in the full Kaggle Dogs vs. Cats training set, the article's example.
pub const KAGGLE_PHOTOS: usize = 25_000;
/// Epochs a real training run takes: the yardstick for the time a speed means.
pub const EPOCHS: usize = 10;

/// How long `epochs` passes over `photos` take at `photos_per_sec`.
pub fn training_time(photos: usize, epochs: usize, photos_per_sec: f64) -> String {
    human_duration((photos * epochs) as f64 / photos_per_sec)
}

/// "45 s", "12 min", "1 h 12 min", "3 days 4 h": two units at most, as people say it.
pub fn human_duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "forever".to_string();
    }
    if seconds < 0.5 {
        return "under a second".to_string();
    }
    let seconds = seconds.round() as u64;
    let (days, hours, minutes) = (seconds / 86_400, seconds / 3_600 % 24, seconds / 60 % 60);
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{seconds} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (1, 0, _) => "1 day".to_string(),
        (d, 0, _) => format!("{d} days"),
        (1, h, _) => format!("1 day {h} h"),
        (d, h, _) => format!("{d} days {h} h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human_duration(0.3), "under a second");
        assert_eq!(human_duration(44.6), "45 s");
        assert_eq!(human_duration(12.0 * 60.0 + 20.0), "12 min");
        assert_eq!(human_duration(3_600.0 + 12.0 * 60.0), "1 h 12 min");
        assert_eq!(human_duration(2.0 * 3_600.0), "2 h");
        assert_eq!(human_duration(86_400.0 + 60.0), "1 day");
        assert_eq!(human_duration(3.0 * 86_400.0 + 4.0 * 3_600.0), "3 days 4 h");
        assert_eq!(human_duration(f64::INFINITY), "forever");
        // The article's CPU: 10 photos/s, 10 epochs over the Kaggle set.
        assert_eq!(training_time(KAGGLE_PHOTOS, EPOCHS, 10.0), "6 h 56 min");
        assert_eq!(training_time(KAGGLE_PHOTOS, EPOCHS, 1_000.0), "4 min");
    }
}
