//! The model folder: `model-<crc32>.safetensors` (the weights) and `catdog.json` (what
//! prediction needs to prepare a photo and name the classes, and which weights file is its).
//!
//! Saving writes the new weights under their own name first, then `catdog.json` naming them,
//! then removes the old weights: the rename of `catdog.json` switches the pair in one step, so
//! a crash leaves the old model or the new one, never a mix. Each file is written under a
//! temporary name, flushed and renamed into place; `catdog.json` records the size and checksum
//! of its weights, so a damaged file is refused instead of loaded.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use burn::module::Module;
use burn::store::{
    BurnToPyTorchAdapter, ChainAdapter, FloatCastAdapter, KeyRemapper, ModuleSnapshot,
    PyTorchToBurnAdapter, SafetensorsStore,
};
use burn::tensor::{DType, Device};
use serde::{Deserialize, Serialize};

use super::typical::Typical;
use super::{IMAGE_SIZES, LOOK_BLOCK, Network, NetworkKind, TrainSettings, check_description};
use crate::data::Normalization;
use crate::device::BackendKind;
use crate::fs::{Checksum, is_plain_name, read_checked, read_description, write_atomically};

/// The weights file of a model saved before catdog named them by their checksum.
const LEGACY_WEIGHTS_FILE: &str = "model.safetensors";
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
    /// The weights file in the folder, and its size and CRC-32, to detect a damaged file.
    #[serde(default = "legacy_weights_file")]
    pub weights_file: String,
    pub weights_bytes: u64,
    pub weights_crc32: u32,
    /// The photos it learned from and the ones it held out; absent in models saved before
    /// catdog recorded them.
    #[serde(default)]
    pub trained_on: Option<TrainedOn>,
    /// Every setting of the run that trained it (`epochs` there is what was asked; the
    /// `epochs` above is the epoch kept); absent in models saved before catdog recorded them,
    /// the built-in one among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<TrainSettings>,
    /// The temperature its logits are divided by before the softmax, so that its probabilities
    /// mean what they say, and what it was fitted on; absent in models saved before catdog
    /// calibrated them (which then answer with temperature 1).
    #[serde(default)]
    pub calibration: Option<Calibration>,
    /// What its validation photos look like inside it, to call a photo unlike all of them
    /// unusual; absent for ResNet-18 and in models saved before catdog fitted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typical: Option<Typical>,
}

/// Temperature scaling fitted on a run's validation photos: the one temperature that gives
/// their labels the highest likelihood (`fitted`), the one applied (`temperature`: the fitted
/// one, but never below 1), and the calibration error before and after.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub temperature: f64,
    pub fitted: f64,
    /// Validation photos it was fitted on.
    pub photos: usize,
    /// Expected calibration error (10 bins) on those photos at temperature 1, and at this one.
    pub error_before: f64,
    pub error_after: f64,
}

/// Temperatures a model description may hold: a wider range would only come from a damaged
/// or hand-edited file.
pub const TEMPERATURES: std::ops::RangeInclusive<f64> = 0.01..=100.0;

impl ModelInfo {
    /// The network it describes (`architecture`, which loading checks is one catdog knows).
    pub fn network(&self) -> NetworkKind {
        NetworkKind::from_name(&self.architecture).unwrap_or_default()
    }

    /// The temperature to divide the logits by: the fitted one, or 1.
    pub fn temperature(&self) -> f64 {
        self.calibration.map_or(1.0, |c| c.temperature)
    }
}

/// Which photos a model learned from, so that `catdog eval --held-out` scores it only on the
/// ones its training held out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainedOn {
    /// The photo folder as `catdog train` was given it; `None` for generated pictures.
    pub data: Option<PathBuf>,
    /// The folder's fingerprint then (see [`crate::data::Dataset`]).
    pub data_fingerprint: String,
    /// Its listing then (names and sizes, no times), which a copy of the folder keeps; absent
    /// in models saved before catdog recorded it.
    #[serde(default)]
    pub data_listing: Option<String>,
    /// The share of each class held out, and the seed that chose them.
    pub val_split: f64,
    pub seed: u64,
}

impl TrainedOn {
    /// The record of a run of `settings` on photos identified by `fingerprint` (and `listing`).
    pub fn new(settings: &TrainSettings, fingerprint: &str, listing: Option<&str>) -> TrainedOn {
        TrainedOn {
            data: settings.data.clone(),
            data_fingerprint: fingerprint.to_string(),
            data_listing: listing.map(str::to_string),
            val_split: settings.val_split,
            seed: settings.seed,
        }
    }
}

fn legacy_weights_file() -> String {
    LEGACY_WEIGHTS_FILE.to_string()
}

/// Replaces the description `catdog.json` in `dir` with `info`, the same model's with other
/// figures (its weights file, size and checksum must stay those of the weights there).
pub fn save_info(dir: &Path, info: &ModelInfo) -> Result<()> {
    let path = dir.join(INFO_FILE);
    check_typical(info, &path)?;
    let now = parse_info(&read_description(&path)?, &path)?;
    ensure!(
        (&now.weights_file, now.weights_bytes, now.weights_crc32)
            == (&info.weights_file, info.weights_bytes, info.weights_crc32)
            && now.architecture == info.architecture,
        "{} describes other weights now; not replaced",
        path.display()
    );
    let mut json = serde_json::to_vec_pretty(info)?;
    json.push(b'\n');
    write_atomically(&path, &json)
}

/// Writes `model` and `info` into `dir` (created if needed), replacing the model there in
/// one step. `info.weights_file`, `weights_bytes` and `weights_crc32` are filled in.
pub fn save(dir: &Path, model: &Network, info: &ModelInfo) -> Result<()> {
    fs::create_dir_all(dir)
        .with_context(|| format!("cannot create model folder {}", dir.display()))?;
    // One metadata entry instead of burn's three, which it keeps in a HashMap and so writes
    // in a random order: the same weights then always give the same file.
    // f32 whatever precision trained it.
    let store = SafetensorsStore::from_bytes(None)
        .clear_metadata()
        .metadata("producer", concat!("catdog ", env!("CARGO_PKG_VERSION")))
        .skip_enum_variants(true);
    let to_f32 = FloatCastAdapter::to(DType::F32);
    let mut store = match model.kind() {
        NetworkKind::SmallCnn | NetworkKind::SmallCnnWide => store.with_to_adapter(to_f32),
        // torchvision's names and layouts: batch norm's `weight` and `bias`, a linear layer's
        // weight `[out, in]`, the shortcut's `downsample.0` and `.1`.
        NetworkKind::ResNet18 => store
            .with_to_adapter(ChainAdapter::new(to_f32, BurnToPyTorchAdapter))
            .remap(renamed(&[
                (r"\.downsample\.conv\.", ".downsample.0."),
                (r"\.downsample\.norm\.", ".downsample.1."),
            ])),
        // The PyTorch port's names: every field's with an underscore before it
        // (`_blocks.3._depthwise_conv.weight`), its tensors' own names without.
        NetworkKind::EfficientNetLite0 => store
            .with_to_adapter(ChainAdapter::new(to_f32, BurnToPyTorchAdapter))
            .remap(renamed(&[(r"(^|\.)([a-z][a-z0-9_]*)\.", "${1}_${2}.")])),
    };
    model
        .save_into(&mut store)
        .map_err(|err| anyhow::anyhow!("cannot serialise the weights: {err}"))?;
    let weights = store
        .get_bytes()
        .map_err(|err| anyhow::anyhow!("cannot serialise the weights: {err}"))?;
    let checksum = Checksum::of(&weights);
    check_typical(info, &dir.join(INFO_FILE))?;
    let info = ModelInfo {
        weights_file: format!("model-{:08x}.safetensors", checksum.crc32),
        weights_bytes: checksum.bytes,
        weights_crc32: checksum.crc32,
        ..info.clone()
    };
    let mut json = serde_json::to_vec_pretty(&info)?;
    json.push(b'\n');
    // The weights the description there names now: catdog's, which the new ones replace.
    // Any other file in the folder is someone else's and stays.
    let previous = read_description(&dir.join(INFO_FILE))
        .ok()
        .and_then(|text| parse_info(&text, &dir.join(INFO_FILE)).ok())
        .map(|old| old.weights_file);
    write_atomically(&dir.join(&info.weights_file), &weights)?;
    write_atomically(&dir.join(INFO_FILE), &json)?;
    if let Some(previous) = previous
        && previous != info.weights_file
    {
        let _ = fs::remove_file(dir.join(previous));
    }
    Ok(())
}

/// The model description in the model folder `dir`.
pub(crate) fn info_path(dir: &Path) -> PathBuf {
    dir.join(INFO_FILE)
}

/// Whether `dir` holds a model's description (it may still fail to load).
pub(crate) fn is_model_folder(dir: &Path) -> bool {
    info_path(dir).is_file()
}

/// Reads the weights in `dir` onto `device` that `info`, its checked description
/// ([`describe`]), names.
pub(crate) fn load_described(dir: &Path, info: &ModelInfo, device: &Device) -> Result<Network> {
    let info_path = dir.join(INFO_FILE);
    let model = Network::new(info.network(), info.classes.len(), 0.0, device);
    check_weights_size(info, &model, &info_path)?;
    let weights_path = dir.join(&info.weights_file);
    let weights = read_checked(&weights_path, expected_checksum(info), &info_path)?;
    let store = SafetensorsStore::from_bytes(Some(weights));
    network_from(model, store, info, device, &weights_path, &info_path)
}

/// What `dir`'s `catdog.json` says of the model there, checked before any weights are read.
pub(crate) fn describe(dir: &Path) -> Result<ModelInfo> {
    let info_path = dir.join(INFO_FILE);
    if !dir.is_dir() {
        let in_models = Path::new("models").join(dir);
        if dir.is_relative() && is_model_folder(&in_models) {
            bail!(
                "model folder {} does not exist; did you mean `--model {}`?",
                dir.display(),
                in_models.display()
            );
        }
        bail!(
            "model folder {} does not exist (train one with `catdog train --out {}`, \
             or use `--model builtin`)",
            dir.display(),
            dir.display()
        );
    }
    let text = read_description(&info_path)?;
    parse_info(&text, &info_path)
}

/// [`load_described`] for a model whose weights are in memory (the built-in one); `name`
/// stands for the folder in errors.
pub(crate) fn load_described_from_memory(
    info: &ModelInfo,
    weights: &'static [u8],
    name: &Path,
    device: &Device,
) -> Result<Network> {
    let info_path = name.join(INFO_FILE);
    let weights_path = name.join(&info.weights_file);
    ensure!(
        Checksum::of(weights) == expected_checksum(info),
        "{} does not match the size and checksum {} records",
        weights_path.display(),
        info_path.display()
    );
    let model = Network::new(info.network(), info.classes.len(), 0.0, device);
    network_from(
        model,
        SafetensorsStore::from_static(weights),
        info,
        device,
        &weights_path,
        &info_path,
    )
}

/// [`describe`] for a model whose description is in memory; `name` stands for the folder.
pub(crate) fn describe_from_memory(info_json: &str, name: &Path) -> Result<ModelInfo> {
    parse_info(info_json, &name.join(INFO_FILE))
}

fn expected_checksum(info: &ModelInfo) -> Checksum {
    Checksum {
        bytes: info.weights_bytes,
        crc32: info.weights_crc32,
    }
}

/// `weights` (a store of a safetensors file's bytes, as [`save`] names and lays them out for
/// `kind`) set to read into a network of `kind`, in `device`'s float type (`--precision`: a
/// loaded tensor keeps the file's otherwise).
pub(super) fn reading_store(
    kind: NetworkKind,
    weights: SafetensorsStore,
    device: &Device,
) -> SafetensorsStore {
    let store = weights.skip_enum_variants(true);
    let to_device = FloatCastAdapter::to(device.settings().float_dtype.into());
    match kind {
        NetworkKind::SmallCnn | NetworkKind::SmallCnnWide => store.with_from_adapter(to_device),
        NetworkKind::ResNet18 => store
            .with_from_adapter(ChainAdapter::new(PyTorchToBurnAdapter, to_device))
            .remap(renamed(&[
                (r"\.downsample\.0\.", ".downsample.conv."),
                (r"\.downsample\.1\.", ".downsample.norm."),
            ])),
        NetworkKind::EfficientNetLite0 => store
            .with_from_adapter(ChainAdapter::new(PyTorchToBurnAdapter, to_device))
            .remap(renamed(&[(r"(^|\.)_([a-z][a-z0-9_]*)\.", "${1}${2}.")])),
    }
}

/// `model`, the network `info` describes, with `weights` (a store of a safetensors file's
/// bytes) loaded.
fn network_from(
    mut model: Network,
    weights: SafetensorsStore,
    info: &ModelInfo,
    device: &Device,
    weights_path: &Path,
    info_path: &Path,
) -> Result<Network> {
    let kind = info.network();
    let mut store = reading_store(kind, weights, device);
    let applied = model.load_from(&mut store).map_err(|err| {
        anyhow::anyhow!(
            "{} does not fit the {} for {} classes that {} describes: {err}",
            weights_path.display(),
            kind.name(),
            info.classes.len(),
            info_path.display()
        )
    })?;
    ensure!(
        applied.errors.is_empty() && applied.missing.is_empty(),
        "{} does not fit a {} for {} classes: {}",
        weights_path.display(),
        kind.name(),
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
    Ok(model)
}

/// Tensor names rewritten by each `(pattern, replacement)` in turn.
fn renamed(patterns: &[(&str, &str)]) -> KeyRemapper {
    KeyRemapper::from_patterns(patterns.to_vec()).expect("valid patterns")
}

/// `catdog.json`'s `text`, read from `path`, checked.
fn parse_info(text: &str, path: &Path) -> Result<ModelInfo> {
    let info: ModelInfo = serde_json::from_str(text)
        .with_context(|| format!("{} is not a catdog model description", path.display()))?;
    let network = check_description(
        path,
        "format version",
        (info.format_version, FORMAT_VERSION),
        (&info.architecture, info.architecture_version),
    )?;
    ensure!(
        info.image_size >= network.smallest_image_size(),
        "{} names a {} at {} px: catdog trains it at {} px or more",
        path.display(),
        network.title(),
        info.image_size,
        network.smallest_image_size()
    );
    ensure!(
        is_plain_name(&info.weights_file) && info.weights_file.ends_with(".safetensors"),
        "{} names {:?} as its weights: not a .safetensors file beside it",
        path.display(),
        info.weights_file
    );
    ensure!(
        (2..=MAX_CLASSES).contains(&info.classes.len()) && IMAGE_SIZES.contains(&info.image_size),
        "{} names {} classes at {} px: a model needs 2 to 10,000 classes, at {} to {} px",
        path.display(),
        info.classes.len(),
        info.image_size,
        IMAGE_SIZES.start(),
        IMAGE_SIZES.end()
    );
    ensure!(
        TEMPERATURES.contains(&info.temperature()),
        "{} names the temperature {}: a model's temperature is from {} to {}",
        path.display(),
        info.temperature(),
        TEMPERATURES.start(),
        TEMPERATURES.end()
    );
    let norm = &info.normalization;
    ensure!(
        norm.mean.iter().all(|m| m.is_finite())
            && norm.std.iter().all(|s| s.is_finite() && *s > 0.0),
        "{} gives the normalisation mean {:?} and std {:?}: each std must be a positive number \
         and each mean a number",
        path.display(),
        norm.mean,
        norm.std
    );
    let mut names: Vec<String> = info.classes.iter().map(|c| c.to_lowercase()).collect();
    names.sort();
    if let Some(twice) = names.windows(2).find(|pair| pair[0] == pair[1]) {
        bail!(
            "{} names the class '{}' twice: each class needs a name of its own",
            path.display(),
            twice[0]
        );
    }
    check_typical(&info, path)?;
    Ok(info)
}

/// The most bytes a file of `model`'s weights can hold: its weights in f32 plus the file's
/// header (names and shapes, well under a megabyte). A larger size comes only from a damaged
/// or edited description, and is refused before anything of that size is read.
pub(crate) fn weights_ceiling(model: &Network) -> u64 {
    (model.num_params() as u64) * 4 + (1 << 20)
}

/// The most classes a model may have: a description naming more is damaged or edited (each
/// class adds a row of weights, and a network is built before its file is read).
pub const MAX_CLASSES: usize = 10_000;

/// Refuses a `weights_bytes` in `info` (described by `info_path`) larger than `model`'s
/// weights can fill.
fn check_weights_size(info: &ModelInfo, model: &Network, info_path: &Path) -> Result<()> {
    let ceiling = weights_ceiling(model);
    ensure!(
        info.weights_bytes <= ceiling,
        "{} says its weights take {} bytes, more than the {} a {} for {} classes can fill: \
         the file is damaged or was edited",
        info_path.display(),
        info.weights_bytes,
        ceiling,
        info.network().name(),
        info.classes.len()
    );
    Ok(())
}

/// Refuses a `typical` in `info` (described by `path`) that its network cannot use.
fn check_typical(info: &ModelInfo, path: &Path) -> Result<()> {
    if let Some(typical) = &info.typical {
        typical
            .check(LOOK_BLOCK, info.network().look_size())
            .with_context(|| format!("{} does not fit its network", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::BackendKind;
    use burn::tensor::{Distribution, Tensor};

    /// The model in `dir`, as `ModelChoice::Folder(dir)` reads it.
    fn load(dir: &Path, device: &Device) -> Result<(Network, ModelInfo)> {
        let info = describe(dir)?;
        let model = load_described(dir, &info, device)?;
        Ok((model, info))
    }

    fn small_cnn(device: &Device) -> Network {
        Network::new(NetworkKind::SmallCnn, 2, 0.0, device)
    }

    fn info() -> ModelInfo {
        ModelInfo {
            format_version: FORMAT_VERSION,
            catdog_version: "test".into(),
            architecture: "small-cnn".into(),
            architecture_version: super::super::ARCHITECTURE_VERSION,
            classes: vec!["cat".into(), "dog".into()],
            image_size: 16,
            normalization: Normalization::default(),
            epochs: 1,
            val_accuracy: None,
            backend: BackendKind::Flex,
            device: "test".into(),
            train_images_per_sec: 1.0,
            weights_file: String::new(),
            weights_bytes: 0,
            weights_crc32: 0,
            trained_on: None,
            settings: None,
            calibration: None,
            typical: None,
        }
    }

    fn weights_files(dir: &Path) -> Vec<String> {
        crate::fs::names_ending_in(dir, ".safetensors")
    }

    /// The names and shapes of a safetensors file's tensors, from its header.
    fn tensor_shapes(bytes: &[u8]) -> std::collections::BTreeMap<String, Vec<usize>> {
        let length = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + length]).unwrap();
        header
            .as_object()
            .unwrap()
            .iter()
            .filter(|(name, _)| *name != "__metadata__")
            .map(|(name, tensor)| {
                let shape = tensor["shape"].as_array().unwrap();
                let shape = shape.iter().map(|n| n.as_u64().unwrap() as usize);
                (name.clone(), shape.collect())
            })
            .collect()
    }

    /// The same logits from `a` and `b` for two random pictures of `size` px.
    fn assert_same_logits(a: &Network, b: &Network, size: usize) {
        let device = Device::flex();
        let x = Tensor::<4>::random(
            [2, 3, size, size],
            Distribution::Uniform(-1.0, 1.0),
            &device,
        );
        let logits = |net: &Network| {
            net.forward(x.clone())
                .into_data()
                .try_to_vec::<f32>()
                .unwrap()
        };
        assert_eq!(logits(a), logits(b));
    }

    /// The error of loading the model in `dir` once `edit` has changed its catdog.json.
    fn load_error_after_editing(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) -> String {
        let mut json: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.join(INFO_FILE)).unwrap()).unwrap();
        edit(&mut json);
        fs::write(dir.join(INFO_FILE), json.to_string()).unwrap();
        format!("{:#}", load(dir, &Device::flex()).unwrap_err())
    }

    /// A saved ResNet-18 has torchvision's tensor names and shapes (so that
    /// `torchvision.models.resnet18(num_classes=2)` loads it; bench/resnet18_exchange.py
    /// checks that with PyTorch), and loads back to the same predictions.
    #[test]
    fn a_resnet18_is_saved_as_torchvision_names_it_and_loads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let device = Device::flex();
        let model = Network::new(NetworkKind::ResNet18, 2, 0.0, &device);
        let info = ModelInfo {
            architecture: NetworkKind::ResNet18.name().into(),
            image_size: 32,
            ..info()
        };
        save(dir, &model, &info).unwrap();
        let (loaded, read) = load(dir, &device).unwrap();
        assert_eq!(read.network(), NetworkKind::ResNet18);

        let shapes = tensor_shapes(&fs::read(dir.join(&read.weights_file)).unwrap());
        let expected: [(&str, &[usize]); 9] = [
            ("conv1.weight", &[64, 3, 7, 7]),
            ("bn1.weight", &[64]),
            ("bn1.bias", &[64]),
            ("bn1.running_mean", &[64]),
            ("bn1.running_var", &[64]),
            ("layer1.1.conv2.weight", &[64, 64, 3, 3]),
            ("layer2.0.downsample.0.weight", &[128, 64, 1, 1]),
            ("layer4.0.downsample.1.running_var", &[512]),
            ("fc.weight", &[2, 512]),
        ];
        for (name, shape) in expected {
            assert_eq!(shapes.get(name).map(Vec::as_slice), Some(shape), "{name}");
        }
        // torchvision's 122 tensors less its 20 `num_batches_tracked` counters (which
        // `load_state_dict` fills in itself when absent).
        assert_eq!(shapes.len(), 122 - 20, "{:?}", shapes.keys());
        assert!(
            shapes
                .keys()
                .all(|name| !name.contains("gamma") && !name.contains("conv.")),
            "{:?}",
            shapes.keys()
        );

        assert_same_logits(&model, &loaded, 32);

        // A description naming a size catdog does not train this network at is refused.
        let err = load_error_after_editing(dir, |json| json["image_size"] = 16.into());
        assert!(
            err.contains("names a ResNet-18 at 16 px: catdog trains it at 32 px or more"),
            "{err}"
        );
    }

    fn info_of(dir: &Path) -> ModelInfo {
        serde_json::from_slice(&fs::read(dir.join(INFO_FILE)).unwrap()).unwrap()
    }

    /// Values no training writes are refused at load, naming catdog.json, before the weights
    /// are read: a size past what the network fills, a normalisation that turns the picture
    /// over, a class named twice, more classes than a model may have.
    #[test]
    fn a_description_with_impossible_values_is_refused_before_its_weights_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let device = Device::flex();
        save(dir, &small_cnn(&device), &info()).unwrap();
        load(dir, &device).unwrap();
        let pristine = fs::read(dir.join(INFO_FILE)).unwrap();
        let refused = |edit: &dyn Fn(&mut serde_json::Value), expected: &str| {
            fs::write(dir.join(INFO_FILE), &pristine).unwrap();
            let err = load_error_after_editing(dir, edit);
            assert!(
                err.contains(INFO_FILE) && err.contains(expected),
                "{expected}: {err}"
            );
        };
        // 3 GiB beside a (sparse) file of 3 GiB: refused by what the description says, not
        // after reading all of it to find the checksum wrong.
        let weights = dir.join(&info_of(dir).weights_file);
        fs::OpenOptions::new()
            .write(true)
            .open(&weights)
            .unwrap()
            .set_len(3 << 30)
            .unwrap();
        refused(
            &|json| json["weights_bytes"] = (3u64 << 30).into(),
            "more than the",
        );
        refused(
            &|json| json["normalization"]["std"][1] = (-0.224).into(),
            "each std must be a positive number",
        );
        refused(
            &|json| json["normalization"]["mean"][0] = serde_json::Value::Null,
            "is not a catdog model description",
        );
        refused(
            &|json| json["classes"] = serde_json::json!(["cat", "Cat"]),
            "names the class 'cat' twice",
        );
        refused(
            &|json| json["classes"] = serde_json::json!(vec!["c"; MAX_CLASSES + 1]),
            "a model needs 2 to 10,000 classes",
        );
    }

    /// A wide SmallCnn is saved under SmallCnn's tensor names with twice the channels, loads
    /// back to the same predictions, and its weights are refused where catdog.json says
    /// `small-cnn` (and the other way round), naming both files.
    #[test]
    fn a_wide_small_cnn_loads_back_the_same_and_not_as_the_narrow_one() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let device = Device::flex();
        let model = Network::new(NetworkKind::SmallCnnWide, 2, 0.0, &device);
        let info = ModelInfo {
            architecture: NetworkKind::SmallCnnWide.name().into(),
            ..info()
        };
        save(dir, &model, &info).unwrap();
        let (loaded, read) = load(dir, &device).unwrap();
        assert_eq!(read.network(), NetworkKind::SmallCnnWide);
        assert_eq!(loaded.kind(), NetworkKind::SmallCnnWide);
        let shapes = tensor_shapes(&fs::read(dir.join(&read.weights_file)).unwrap());
        assert_eq!(shapes["blocks.0.conv.weight"], [64, 3, 3, 3]);
        assert_eq!(shapes["blocks.3.norm.running_var"], [256]);
        assert_eq!(shapes["classifier.weight"], [256, 2]);

        assert_same_logits(&model, &loaded, 16);

        let described_as = |network: NetworkKind| {
            load_error_after_editing(dir, |json| json["architecture"] = network.name().into())
        };
        // The wide network's weights are more than a narrow one fills: refused by their size,
        // before they are read.
        let err = described_as(NetworkKind::SmallCnn);
        assert!(
            err.contains("more than the")
                && err.contains("a small-cnn for 2 classes can fill")
                && err.contains(INFO_FILE),
            "{err}"
        );
        save(dir, &small_cnn(&device), &info).unwrap();
        let err = described_as(NetworkKind::SmallCnnWide);
        assert!(err.contains("does not fit the small-cnn-wide"), "{err}");
    }

    #[test]
    fn a_save_switches_the_pair_in_one_step_and_leaves_one_weights_file() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let device = Device::flex();
        save(dir, &small_cnn(&device), &info()).unwrap();
        let (_, first) = load(dir, &device).unwrap();
        save(dir, &small_cnn(&device), &info()).unwrap();
        let (_, second) = load(dir, &device).unwrap();
        assert_ne!(first.weights_file, second.weights_file, "named by content");
        assert_eq!(
            weights_files(dir),
            std::slice::from_ref(&second.weights_file)
        );

        // A save that crashed after writing its weights, before catdog.json: the folder
        // still holds the previous model, whole.
        fs::write(dir.join("model-0badc0de.safetensors"), b"half a save").unwrap();
        let (_, loaded) = load(dir, &device).unwrap();
        assert_eq!(loaded, second);

        // A folder saved before the weights were named by their checksum still loads.
        fs::rename(
            dir.join(&second.weights_file),
            dir.join(LEGACY_WEIGHTS_FILE),
        )
        .unwrap();
        let mut json: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.join(INFO_FILE)).unwrap()).unwrap();
        json.as_object_mut().unwrap().remove("weights_file");
        fs::write(dir.join(INFO_FILE), json.to_string()).unwrap();
        assert_eq!(
            load(dir, &device).unwrap().1.weights_file,
            LEGACY_WEIGHTS_FILE
        );

        // catdog.json cannot send the loader elsewhere.
        json["weights_file"] = "../elsewhere.safetensors".into();
        fs::write(dir.join(INFO_FILE), json.to_string()).unwrap();
        let err = format!("{:#}", load(dir, &device).unwrap_err());
        assert!(err.contains("not a .safetensors file beside it"), "{err}");

        // Nor make it allocate pictures of 100,000² pixels (30 GB a photo).
        json["weights_file"] = LEGACY_WEIGHTS_FILE.into();
        json["image_size"] = 100_000.into();
        fs::write(dir.join(INFO_FILE), json.to_string()).unwrap();
        let err = format!("{:#}", load(dir, &device).unwrap_err());
        assert!(
            err.contains("at 100000 px") && err.contains("at 16 to 1024 px"),
            "{err}"
        );

        // Nor divide every logit by zero or a negative temperature.
        json["image_size"] = 16.into();
        json["calibration"] = serde_json::json!({
            "temperature": 0.0, "fitted": 0.0, "photos": 10, "error_before": 0.1, "error_after": 0.05
        });
        fs::write(dir.join(INFO_FILE), json.to_string()).unwrap();
        let err = format!("{:#}", load(dir, &device).unwrap_err());
        assert!(err.contains("names the temperature 0"), "{err}");
    }

    /// A model's calibration is saved and read back as it was; one without any answers at
    /// temperature 1.
    #[test]
    fn the_calibration_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let device = Device::flex();
        save(dir, &small_cnn(&device), &info()).unwrap();
        assert_eq!(load(dir, &device).unwrap().1.temperature(), 1.0);
        let calibration = Calibration {
            temperature: 1.37,
            fitted: 1.37,
            photos: 200,
            error_before: 0.061,
            error_after: 0.012,
        };
        let calibrated = ModelInfo {
            calibration: Some(calibration),
            ..info()
        };
        save(dir, &small_cnn(&device), &calibrated).unwrap();
        let (_, loaded) = load(dir, &device).unwrap();
        assert_eq!(loaded.calibration, Some(calibration));
        assert_eq!(loaded.temperature(), 1.37);
    }

    /// The run's settings, recorded in catdog.json, read back the same; a description without
    /// them (the built-in model's, older ones) reads as `None`.
    #[test]
    fn the_runs_settings_round_trip_and_may_be_absent() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let device = Device::flex();
        let settings = TrainSettings {
            data: Some(PathBuf::from("pets")),
            epochs: 12,
            schedule: super::super::Schedule::OneCycle,
            patience: Some(3),
            ..TrainSettings::default()
        };
        let recorded = ModelInfo {
            trained_on: Some(TrainedOn::new(&settings, "fingerprint", Some("listing"))),
            settings: Some(settings.clone()),
            ..info()
        };
        save(dir, &small_cnn(&device), &recorded).unwrap();
        let (_, loaded) = load(dir, &device).unwrap();
        assert_eq!(loaded.settings, Some(settings));
        assert_eq!(loaded.trained_on, recorded.trained_on);
        let text = fs::read_to_string(info_path(dir)).unwrap();
        assert!(text.contains("\"schedule\": \"onecycle\""), "{text}");

        // A model saved before catdog recorded them: the wide SmallCnn built in until
        // 2026-12-05. The built-in model records its own.
        let older: ModelInfo =
            serde_json::from_str(include_str!("../../models/builtin-wide-20k/catdog.json"))
                .unwrap();
        assert_eq!(older.settings, None);
        assert_eq!(older.trained_on.unwrap().seed, 42);
        let builtin = super::super::builtin::describe().unwrap();
        assert_eq!(
            builtin.settings.unwrap().data,
            Some("dogs-vs-cats-20k".into())
        );
    }

    /// Saving into a folder shared with other files removes only the weights catdog.json
    /// named, and writes files others can read as they read any new file there.
    #[test]
    fn a_save_removes_only_the_weights_it_replaces_and_gives_normal_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let device = Device::flex();
        let others = [
            "model-resnet50.safetensors",
            "model.safetensors",
            "notes.txt",
        ];
        for other in others {
            fs::write(dir.join(other), other).unwrap();
        }
        save(dir, &small_cnn(&device), &info()).unwrap();
        let (_, first) = load(dir, &device).unwrap();
        save(dir, &small_cnn(&device), &info()).unwrap();
        let (_, second) = load(dir, &device).unwrap();
        assert!(
            !dir.join(&first.weights_file).exists(),
            "the replaced weights go"
        );
        for other in others {
            assert_eq!(fs::read_to_string(dir.join(other)).unwrap(), other);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |name: &str| fs::metadata(dir.join(name)).unwrap().permissions().mode();
            for written in [second.weights_file.as_str(), INFO_FILE] {
                assert_eq!(
                    mode(written) & 0o777,
                    mode("notes.txt") & 0o777,
                    "{written}"
                );
            }
        }
    }
}
