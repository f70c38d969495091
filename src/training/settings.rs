//! What `catdog train` is asked to do: a run's settings ([`TrainSettings`], described once in
//! `model/settings.rs`), the folder it writes, and whether it continues the run there.

use std::path::PathBuf;

use anyhow::Result;

use crate::model::TrainSettings;

/// What `catdog train` is asked to do.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    pub settings: TrainSettings,
    /// The model folder to write; it also holds the run's checkpoint.
    pub out: PathBuf,
    /// Continue the run whose checkpoint is in `out` instead of starting afresh.
    pub resume: bool,
}

/// Where `catdog train` saves a model of photos without `--out`; `predict` and `eval` use
/// the model there without `--model`.
pub const PHOTOS_OUT: &str = "models/catdog";
/// Where the speed demo (generated pictures) saves its model without `--out`.
pub const DEMO_OUT: &str = "models/demo";

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            settings: TrainSettings::default(),
            out: PathBuf::from(PHOTOS_OUT),
            resume: false,
        }
    }
}

impl TrainOptions {
    /// Refuses values no run can use, naming the flag that sets them.
    pub fn check(&self) -> Result<()> {
        self.settings.check()
    }
}
