//! What people and programs read: each command's report as text or JSON, the bench's
//! Markdown and chart, and the progress bars on a terminal.

mod bench;
mod devices;
mod download;
mod eval;
mod model;
mod predict;
mod progress;
mod train;
mod verdict;

use std::path::Path;

pub use bench::{bench_chart, bench_markdown, bench_text};
pub use devices::{devices_json, devices_text};
pub use download::download_summary;
pub use eval::{evaluation_text, reliability_diagram};
pub use model::{REAL_PHOTOS, generated_model_note, model_line, model_name};
pub use predict::{answer_words, prediction_json, prediction_line, prediction_speed};
pub use progress::{TerminalBenchProgress, TerminalDownloadProgress, TerminalProgress};
pub use train::{train_json, train_summary};
pub use verdict::{bench_verdict, networks_line};

/// A path as JSON text: file names that are not UTF-8 get U+FFFD where a byte is invalid.
fn lossy(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
