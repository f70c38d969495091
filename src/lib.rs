//! catdog trains a small convolutional network to tell cats from dogs, on the GPU or the
//! CPU, and says honestly how many photos per second each one processes.
//!
//! The modules follow the photos' way:
//! [`dataset`] finds them on disk → [`decode`] turns them into resized pixels ([`images`]),
//! kept on disk by [`pixel_cache`] → [`batch`] into tensors, [`augment`]ed for training →
//! [`model`] is the network → [`train`] the training loop, which saves a [`checkpoint`] after
//! every epoch and stops cleanly on Ctrl-C ([`interrupt`]) → [`saved_model`] the model
//! folder, claimed by [`out_folder`] → [`predict`] prediction, and [`evaluation`] of a
//! model on labelled photos, its mistakes drawn on a [`contact_sheet`].
//! [`backend`] chooses where the work runs, from what [`hardware`] finds; [`synth`] draws the
//! built-in dataset; [`bench`] measures the backends side by side; [`progress`], [`report`] and
//! [`chart`] talk to people; [`cli`] is the command line; [`allocator`] keeps the CPU
//! backends' freed buffers for reuse.

pub mod allocator;
pub mod augment;
pub mod backend;
pub mod batch;
pub mod bench;
pub mod chart;
pub mod checkpoint;
pub mod cli;
pub mod contact_sheet;
pub mod dataset;
pub mod decode;
pub mod evaluation;
pub mod hardware;
pub mod images;
pub mod interrupt;
pub mod model;
pub mod out_folder;
pub mod pixel_cache;
pub mod predict;
pub mod progress;
pub mod report;
pub mod saved_model;
pub mod synth;
pub mod train;
