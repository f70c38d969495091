//! What the specifications share: the `catdog` command builder and its assertions, the
//! fixtures they make, training runs stopped on purpose, and the optional parts of the
//! machine that tests skip without (unless CI asks for them).

pub mod command;
pub mod fixtures;
pub mod optional;
pub mod runs;

pub use command::{Catdog, assert_fails_with, assert_success, catdog, stderr, stdout, text};
pub use fixtures::{
    black_picture, copy_folder, eval, fixture, path, root, synth, train_one_epoch,
    train_one_epoch_generated, trained_model, weights_file, weights_header,
};
pub use optional::{browser_or_skip, real_photos_or_skip, strace_or_skip, wgpu_or_skip};
