//! catdog trains a small convolutional network to tell cats from dogs, on the GPU or the
//! CPU, and says honestly how many photos per second each one processes.
//!
//! The folders follow the photos' way, each using only those listed after it:
//! - [`cli`]: the command line, one file per command; the only module that knows clap.
//! - [`serve`]: `catdog serve`, the page in the browser, on the library below.
//! - [`output`]: what people and programs read (text, JSON, progress bars).
//! - [`bench`]: `catdog bench`, every backend measured the same way.
//! - [`training`]: [`training::train`], the training loop in `training/fit.rs`, checkpoints
//!   and resuming.
//! - [`inference`]: prediction and evaluation, through one forward-and-read-back loop.
//! - [`model`]: the network and the model folder it is saved in.
//! - [`data`]: folder → decoded, cached pixels → split → batches.
//! - [`download`]: `catdog download`, an archive of photos fetched, checked and unpacked.
//! - [`device`]: the backend choice (`device/backend.rs`) and what hardware there is.
//! - [`chart`] draws pictures; `fs` writes files that are never seen half-written, and
//!   `numbers` writes numbers, sizes and durations as people read them.

mod bench;
mod chart;
pub mod cli;
pub mod data;
pub mod device;
pub mod download;
mod fs;
pub mod inference;
pub mod model;
pub mod numbers;
mod output;
pub mod serve;
pub mod training;
