//! Training progress for a person at a terminal: indicatif bars on stderr, and one line per
//! epoch that stays in the scroll-back (and in logs, where bars are not drawn).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::bench::BenchProgress;
use crate::data::DataProgress;
use crate::device::Backend;
use crate::download::DownloadProgress;
use crate::training::{BatchStats, EpochStats, TrainProgress};

/// Draws decoding and each epoch as a progress bar on stderr.
pub struct TerminalProgress {
    bar: ProgressBar,
}

impl Default for TerminalProgress {
    fn default() -> Self {
        TerminalProgress {
            bar: ProgressBar::hidden(),
        }
    }
}

impl TerminalProgress {
    fn start_bar(&mut self, length: usize, template: &str) {
        let style = ProgressStyle::with_template(template)
            .expect("progress templates are valid")
            .progress_chars("=> ");
        self.bar = ProgressBar::new(length as u64).with_style(style);
        self.bar.enable_steady_tick(Duration::from_millis(200));
    }
}

impl DataProgress for TerminalProgress {
    fn note(&mut self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    fn decode_started(&mut self, photos: usize) {
        self.start_bar(
            photos,
            "decoding  [{bar:30}] {pos}/{len} photos, {per_sec}, ETA {eta}",
        );
    }

    fn photo_decoded(&self) {
        self.bar.inc(1);
    }

    fn decode_finished(&mut self) {
        self.bar.finish_and_clear();
    }
}

impl TrainProgress for TerminalProgress {
    fn epoch_started(&mut self, epoch: usize, epochs: usize, batches: usize) {
        let what = match epochs {
            0 => "fitting the last layer".to_string(),
            _ => format!("epoch {epoch}/{epochs}"),
        };
        self.start_bar(
            batches,
            &format!("{what} [{{bar:30}}] {{pos}}/{{len}} batches, ETA {{eta}}, {{msg}}"),
        );
    }

    fn batch_finished(&mut self, stats: &BatchStats) {
        let speed = format!("{:.0} photos/s", stats.photos_per_sec);
        self.bar.set_message(match stats.mean_loss {
            Some(loss) => format!("loss {loss:.3}, {speed}"),
            None => speed,
        });
        self.bar.inc(1);
    }

    fn epoch_finished(&mut self, stats: &EpochStats, epochs: usize) {
        self.bar.finish_and_clear();
        let validation = match (stats.val_loss, stats.val_accuracy) {
            (Some(loss), Some(accuracy)) => {
                format!(
                    ", val loss {loss:.3}, val accuracy {:.1} %",
                    accuracy * 100.0
                )
            }
            _ => String::new(),
        };
        let what = match epochs {
            0 => "last layer fitted".to_string(),
            _ => format!("epoch {}/{epochs}", stats.epoch),
        };
        eprintln!(
            "{what}: train loss {:.3}, accuracy {:.1} %{validation}, \
             {:.0} photos/s ({:.1} s)",
            stats.train_loss,
            stats.train_accuracy * 100.0,
            stats.train_images_per_sec,
            stats.train_seconds
        );
    }
}

/// Says on stderr what the bench is measuring.
pub struct TerminalBenchProgress;

impl BenchProgress for TerminalBenchProgress {
    fn started(&mut self, backend: &Backend, what: &str) {
        eprintln!("bench: {} on {}: {what}", backend.kind, backend.device_name);
    }
}

/// Draws each step of a download as a bar on stderr: bytes, speed and ETA while fetching.
#[derive(Default)]
pub struct TerminalDownloadProgress {
    bar: TerminalProgress,
}

impl DownloadProgress for TerminalDownloadProgress {
    fn step_started(&mut self, what: &str, bytes: bool, total: Option<u64>, done: u64) {
        eprintln!("{what}");
        let template = match (bytes, total) {
            (true, Some(_)) => "  [{bar:30}] {bytes}/{total_bytes}, {bytes_per_sec}, ETA {eta}",
            (true, None) => "  {bytes}, {bytes_per_sec}",
            (false, Some(_)) => "  [{bar:30}] {pos}/{len} photos, ETA {eta}",
            (false, None) => "  {spinner} {elapsed}",
        };
        self.bar.start_bar(total.unwrap_or(0) as usize, template);
        self.bar.bar.set_position(done);
        // Speed and ETA from this run's bytes, not from those a resumed part already had.
        self.bar.bar.reset_eta();
    }

    fn advanced(&mut self, by: u64) {
        self.bar.bar.inc(by);
    }

    fn step_finished(&mut self) {
        self.bar.bar.finish_and_clear();
    }
}
