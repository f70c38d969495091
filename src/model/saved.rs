//! The model folder: `model.safetensors` (the weights) and `catdog.json` (what prediction
//! needs to prepare a photo and name the classes).
//!
//! Each file is written under a temporary name and renamed into place, so a crash never
//! leaves half a file; `catdog.json` records the size and checksum of the weights it belongs
//! to, so a damaged file or a mismatched pair is refused instead of loaded.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use super::{ARCHITECTURE, SmallCnn, check_description};
use crate::data::Normalization;
use crate::device::BackendKind;
use crate::fs::{Checksum, read_checked, write_atomically};

const WEIGHTS_FILE: &str = "model.safetensors";
const INFO_FILE: &str = "catdog.json";
/// Version of the folder's format; bumped when `catdog.json` changes incompatibly.
pub const FORMAT_VERSION: u32 = 1;

/// Everything about a trained model except its weights: `catdog.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub format_version: u32,
    pub catdog_version: String,
    pub architecture: String,
    pub architecture_version: u32,
    /// Class names in label order.
    pub classes: Vec<String>,
    /// Photos are squashed to this many pixels square.
    pub image_size: u32,
    pub normalization: Normalization,
    /// Epochs of training behind these weights: the run's best epoch, which it kept.
    pub epochs: usize,
    /// Accuracy of these weights on the held-out photos; absent without validation.
    pub val_accuracy: Option<f64>,
    /// Where it was trained, and how fast once warmed up (photos per second: the median over
    /// the epochs after the first).
    pub backend: BackendKind,
    pub device: String,
    pub train_images_per_sec: f64,
    /// Size and CRC-32 of `model.safetensors`, to detect a damaged file or a folder whose two
    /// files do not belong together.
    pub weights_bytes: u64,
    pub weights_crc32: u32,
    /// The photos it learned from and the ones it held out; absent in models saved before
    /// catdog recorded them.
    #[serde(default)]
    pub trained_on: Option<TrainedOn>,
}

/// Which photos a model learned from, so that `catdog eval --held-out` scores it only on the
/// ones its training held out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainedOn {
    /// The photo folder as `catdog train` was given it; `None` for generated pictures.
    pub data: Option<PathBuf>,
    /// The folder's fingerprint then (see [`crate::data::Dataset`]).
    pub data_fingerprint: String,
    /// The share of each class held out, and the seed that chose them.
    pub val_split: f64,
    pub seed: u64,
}

/// Writes `model` and `info` into `dir` (created if needed). `info.weights_bytes` and
/// `info.weights_crc32` are filled in.
pub fn save(dir: &Path, model: &SmallCnn, info: &ModelInfo) -> Result<()> {
    fs::create_dir_all(dir)
        .with_context(|| format!("cannot create model folder {}", dir.display()))?;
    // One metadata entry instead of burn's three, which it keeps in a HashMap and so writes
    // in a random order: the same weights then always give the same file.
    let mut store = SafetensorsStore::from_bytes(None)
        .clear_metadata()
        .metadata("producer", concat!("catdog ", env!("CARGO_PKG_VERSION")));
    model
        .save_into(&mut store)
        .map_err(|err| anyhow::anyhow!("cannot serialise the weights: {err}"))?;
    let weights = store
        .get_bytes()
        .map_err(|err| anyhow::anyhow!("cannot serialise the weights: {err}"))?;
    let checksum = Checksum::of(&weights);
    let info = ModelInfo {
        weights_bytes: checksum.bytes,
        weights_crc32: checksum.crc32,
        ..info.clone()
    };
    let mut json = serde_json::to_vec_pretty(&info)?;
    json.push(b'\n');
    write_atomically(&dir.join(WEIGHTS_FILE), &weights)?;
    write_atomically(&dir.join(INFO_FILE), &json)?;
    Ok(())
}

/// Reads the model in `dir` onto `device`, checking that it is one this catdog can run.
pub(crate) fn load(dir: &Path, device: &Device) -> Result<(SmallCnn, ModelInfo)> {
    let info_path = dir.join(INFO_FILE);
    let weights_path = dir.join(WEIGHTS_FILE);
    if !dir.is_dir() {
        bail!(
            "model folder {} does not exist (train one with `catdog train --out {}`)",
            dir.display(),
            dir.display()
        );
    }
    let info = read_info(&info_path)?;
    let expected = Checksum {
        bytes: info.weights_bytes,
        crc32: info.weights_crc32,
    };
    let weights = read_checked(&weights_path, expected, &info_path)?;

    let mut model = SmallCnn::new(info.classes.len(), 0.0, device);
    let mut store = SafetensorsStore::from_bytes(Some(weights));
    let applied = model.load_from(&mut store).map_err(|err| {
        anyhow::anyhow!(
            "{} does not fit the {ARCHITECTURE} for {} classes that {} describes: {err}",
            weights_path.display(),
            info.classes.len(),
            info_path.display()
        )
    })?;
    ensure!(
        applied.errors.is_empty() && applied.missing.is_empty(),
        "{} does not fit a {ARCHITECTURE} for {} classes: {}",
        weights_path.display(),
        info.classes.len(),
        applied
            .errors
            .iter()
            .map(|err| format!("{err:?}"))
            .chain(
                applied
                    .missing
                    .iter()
                    .map(|(path, _)| format!("{path} missing"))
            )
            .collect::<Vec<_>>()
            .join("; ")
    );
    Ok((model, info))
}

fn read_info(path: &Path) -> Result<ModelInfo> {
    let text =
        fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let info: ModelInfo = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a catdog model description", path.display()))?;
    check_description(
        path,
        "format version",
        (info.format_version, FORMAT_VERSION),
        (&info.architecture, info.architecture_version),
    )?;
    ensure!(
        info.classes.len() >= 2 && info.image_size >= 16,
        "{} names {} classes at {} px: a model needs two classes or more, at 16 px or more",
        path.display(),
        info.classes.len(),
        info.image_size
    );
    Ok(info)
}
