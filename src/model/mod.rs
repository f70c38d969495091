//! The network and the model folder it is saved in.

mod network;
mod saved;

use std::path::Path;

use anyhow::{Result, ensure};

pub use network::SmallCnn;
pub use saved::{FORMAT_VERSION, ModelInfo, TrainedOn, save};

pub(crate) use saved::load;

/// Name and version written beside the weights, checked when a model is loaded.
pub const ARCHITECTURE: &str = "small-cnn";
pub const ARCHITECTURE_VERSION: u32 = 1;

/// Refuses a description file (`catdog.json`, a checkpoint's `state.json`) of another format
/// (`what`, e.g. "format version", found and expected) or of another network than this
/// catdog's.
pub(crate) fn check_description(
    path: &Path,
    what: &str,
    (found, expected): (u32, u32),
    (architecture, version): (&str, u32),
) -> Result<()> {
    ensure!(
        found == expected,
        "{} has {what} {found}, this catdog reads {what} {expected}",
        path.display()
    );
    ensure!(
        architecture == ARCHITECTURE && version == ARCHITECTURE_VERSION,
        "{} describes a {architecture} v{version}, this catdog runs \
         {ARCHITECTURE} v{ARCHITECTURE_VERSION}",
        path.display()
    );
    Ok(())
}
