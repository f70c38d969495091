//! One training step at a time: a network with AdamW on cross-entropy, and its state as
//! bytes for a checkpoint.

use anyhow::{Result, anyhow, bail};
use burn::module::Module;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::store::{BurnpackStore, FloatCastAdapter, ModuleSnapshot};
use burn::tensor::{Bytes, DType, Device, FloatDType, Tensor, TensorData};

use crate::data::{DeviceBatch, HostBatch};
use crate::device::{Batch, explain_panic};
use crate::model::TrainSettings;
use crate::model::{Network, NetworkKind, with_imagenet_weights};

use super::adamw::OnePassAdamW;

/// A network being trained with AdamW on cross-entropy: one [`step`](Self::step) is one batch.
pub struct Trainer {
    /// Always `Some` between steps; taken while the optimizer replaces it, so that the old
    /// weights have a single owner and can be updated in place.
    model: Option<Network>,
    optimizer: ModuleOptimizer,
    loss: CrossEntropyLoss,
    /// `device` with autodiff.
    device: Device,
    /// The run's seed when the network has dropout, whose masks [`seed_step`](Self::seed_step)
    /// draws from it.
    dropout_seed: Option<u64>,
    /// For a network started from ImageNet's weights, the share of the learning rate its
    /// backbone learns at (the new classifier learns at all of it).
    backbone_rate: Option<f64>,
    /// The backbone is frozen for now ([`freeze_backbone`](Self::freeze_backbone)).
    backbone_frozen: bool,
}

impl Trainer {
    /// A freshly initialised network on `device`, its weights drawn from `settings.seed` (and
    /// its backbone ImageNet's where `settings.pretrained`), trained with `settings`' weight
    /// decay, dropout and label smoothing.
    pub fn new(classes: usize, device: &Device, settings: &TrainSettings) -> Result<Trainer> {
        let device = device.clone().autodiff();
        device.seed(settings.seed);
        let mut network = Network::new(settings.network, classes, settings.dropout, &device);
        if settings.pretrained {
            network = with_imagenet_weights(network, true, &device)?;
        }
        Ok(Trainer {
            model: Some(held_as_asked(network, settings)),
            optimizer: adamw(settings.weight_decay, &device),
            loss: training_loss(settings, &device),
            device,
            dropout_seed: dropout_seed(settings),
            backbone_rate: backbone_rate(settings),
            backbone_frozen: false,
        })
    }

    /// A trainer continuing from [`to_bytes`](Self::to_bytes)'s output: the network with its
    /// parameter ids, and AdamW's moments keyed by them.
    pub fn restore(
        classes: usize,
        device: &Device,
        model: Vec<u8>,
        optimizer: Vec<u8>,
        settings: &TrainSettings,
    ) -> Result<Trainer> {
        // AdamW's moments live beside the gradients, on the device without autodiff; read
        // straight there, not onto burn's default device (vendor/burn-optim/PATCHED.md).
        let optimizer = adamw(settings.weight_decay, device)
            .from_bytes_on(Bytes::from_bytes_vec(optimizer), device)
            .map_err(|err| anyhow!("the checkpoint's optimizer state cannot be read: {err}"))?;
        let device = device.clone().autodiff();
        let network =
            network_from_bytes(settings.network, classes, settings.dropout, &device, model)?;
        Ok(Trainer {
            model: Some(held_as_asked(network, settings)),
            optimizer,
            loss: training_loss(settings, &device),
            device,
            dropout_seed: dropout_seed(settings),
            backbone_rate: backbone_rate(settings),
            backbone_frozen: false,
        })
    }

    /// Seeds the device's random numbers for step `step` (from 0) of the run, so that dropout
    /// draws the same masks whether or not the run was interrupted and resumed. Without
    /// dropout nothing is drawn and nothing is seeded.
    pub fn seed_step(&self, step: usize) {
        if let Some(seed) = self.dropout_seed {
            self.device.seed(seed ^ (step as u64).rotate_left(32));
        }
    }

    /// Freezes a pretrained network's backbone (its weights stay as they are and only the new
    /// classifier learns; its batch norms' running statistics still follow the photos unless
    /// held) or lets it learn again at its share of the learning rate; a network without
    /// ImageNet's weights learns whole either way.
    pub fn freeze_backbone(&mut self, frozen: bool) {
        self.backbone_frozen = frozen;
    }

    /// Replaces the network's classifier with `weight` (`[features, classes]`) and `bias`,
    /// before the first step.
    pub fn set_classifier(&mut self, weight: TensorData, bias: TensorData) {
        let model = self
            .model
            .take()
            .expect("the model is back after every step");
        let weight = Tensor::from_data(weight, &self.device);
        let bias = Tensor::from_data(bias, &self.device);
        self.model = Some(model.with_classifier(weight, bias));
    }

    /// The network and the optimizer state, serialised for a checkpoint.
    pub fn to_bytes(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        let optimizer = self
            .optimizer
            .into_bytes()
            .map_err(|err| anyhow!("cannot serialise the optimizer state: {err}"))?;
        Ok((self.network_bytes()?, optimizer.to_vec()))
    }

    /// The network alone, serialised as [`to_bytes`](Self::to_bytes) does.
    pub fn network_bytes(&self) -> Result<Vec<u8>> {
        // Batch norm's running statistics keep the last step's update aside until something
        // syncs them, and saving does not: without this, a checkpoint taken mid-epoch (Ctrl-C)
        // lost one update and the resumed run drifted from an uninterrupted one.
        let _ = self.model().valid();
        // In f32 whatever the precision, as the saved model is.
        let mut store =
            BurnpackStore::from_bytes(None).with_to_adapter(FloatCastAdapter::to(DType::F32));
        // The network itself, not the enum holding it, so that its tensors are named as
        // catdog's checkpoints named them before it had two networks (`blocks.0.conv.weight`,
        // not `SmallCnn.blocks.0.conv.weight`): either version resumes the other's.
        match self.model() {
            Network::SmallCnn(network) | Network::SmallCnnWide(network) => {
                network.save_into(&mut store)
            }
            Network::ResNet18(network) => network.save_into(&mut store),
            Network::EfficientNetLite0(network) => network.save_into(&mut store),
        }
        .map_err(|err| anyhow!("cannot serialise the network: {err}"))?;
        let network = store
            .get_bytes()
            .map_err(|err| anyhow!("cannot serialise the network: {err}"))?;
        Ok(network.to_vec())
    }

    /// The device the network trains on (with autodiff), where batches go.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The network as trained so far.
    pub fn model(&self) -> &Network {
        self.model
            .as_ref()
            .expect("the model is back after every step")
    }

    /// Forward, backward and AdamW step on a batch; returns its mean loss and how many photos
    /// the forward pass got right, read back from the device (which waits for the forward
    /// pass to finish).
    ///
    /// A device failing (out of memory, lost) is an error saying what to try; the trainer is
    /// unusable after it.
    pub fn step(&mut self, batch: HostBatch, learning_rate: f64) -> Result<Step> {
        let photos = batch.len();
        explain_panic(Batch::Chosen(photos), || {
            let batch = batch.upload(&self.device);
            self.step_unexplained(batch, learning_rate)
        })
    }

    /// [`step`](Self::step) on a batch already on [`device`](Self::device).
    pub fn step_on_device(&mut self, batch: DeviceBatch, learning_rate: f64) -> Result<Step> {
        let photos = batch.len();
        explain_panic(Batch::Chosen(photos), || {
            self.step_unexplained(batch, learning_rate)
        })
    }

    fn step_unexplained(&mut self, batch: DeviceBatch, learning_rate: f64) -> Step {
        let DeviceBatch {
            images: inputs,
            labels,
            expected,
        } = batch;
        let model = self
            .model
            .take()
            .expect("the model is back after every step");
        let logits = model.forward(inputs);
        let predicted = logits.clone().argmax(1);
        // The loss in f32 whatever the network computes in: a mean over a batch of
        // log-probabilities loses too much in f16.
        let loss = self.loss.forward(in_f32(logits), labels);
        let loss_value = loss.clone().into_scalar::<f32>() as f64;
        let correct = predicted
            .into_data()
            .iter::<i64>()
            .zip(&expected)
            .filter(|(predicted, expected)| predicted == *expected)
            .count();
        let mut grads = loss.backward();
        let backbone_rate = match self.backbone_frozen {
            true => self.backbone_rate.map(|_| 0.0),
            false => self.backbone_rate,
        };
        let model = match (backbone_rate, model.classifier()) {
            (Some(rate), Some(classifier)) => {
                let classifier = GradientsParams::from_module(&mut grads, classifier);
                let model = self.optimizer.step(learning_rate, model, classifier);
                match rate > 0.0 {
                    true => {
                        let backbone = GradientsParams::from_grads(grads, &model);
                        self.optimizer.step(learning_rate * rate, model, backbone)
                    }
                    // A frozen backbone: its gradients are dropped, and no weight decay
                    // shrinks it either.
                    false => model,
                }
            }
            _ => {
                let grads = GradientsParams::from_grads(grads, &model);
                self.optimizer.step(learning_rate, model, grads)
            }
        };
        self.model = Some(model);
        Step {
            loss: loss_value,
            correct,
        }
    }
}

/// What one training step reports.
pub struct Step {
    /// The batch's mean cross-entropy.
    pub loss: f64,
    /// Photos of the batch the network classified correctly before the step.
    pub correct: usize,
}

/// A network read from [`Trainer::to_bytes`]'s output onto `device`, with `dropout` for
/// training on.
pub(crate) fn network_from_bytes(
    kind: NetworkKind,
    classes: usize,
    dropout: f64,
    device: &Device,
    bytes: Vec<u8>,
) -> Result<Network> {
    let mut network = Network::new(kind, classes, dropout, device);
    let mut store = BurnpackStore::from_bytes(Some(Bytes::from_bytes_vec(bytes)))
        .with_from_adapter(FloatCastAdapter::to(device.settings().float_dtype.into()));
    // As `network_bytes` wrote it: the network, not the enum.
    let applied = match &mut network {
        Network::SmallCnn(network) | Network::SmallCnnWide(network) => {
            network.load_from(&mut store)
        }
        Network::ResNet18(network) => network.load_from(&mut store),
        Network::EfficientNetLite0(network) => network.load_from(&mut store),
    }
    .map_err(|err| anyhow!("the checkpoint's network cannot be read: {err}"))?;
    if !applied.errors.is_empty() || !applied.missing.is_empty() {
        bail!(
            "the checkpoint's network does not fit a {} for {classes} classes \
             ({} errors, {} missing tensors)",
            kind.name(),
            applied.errors.len(),
            applied.missing.len()
        );
    }
    Ok(network)
}

/// `network` with its batch norms' statistics held where `settings` ask for it.
fn held_as_asked(network: Network, settings: &TrainSettings) -> Network {
    match settings.hold_batch_norm {
        true => network.with_norms_held(),
        false => network,
    }
}

fn backbone_rate(settings: &TrainSettings) -> Option<f64> {
    settings.pretrained.then_some(settings.backbone_rate)
}

fn dropout_seed(settings: &TrainSettings) -> Option<u64> {
    (settings.dropout > 0.0).then_some(settings.seed)
}

/// Cross-entropy, label-smoothed when `settings` ask for it; validation always scores against
/// the plain labels.
fn training_loss(settings: &TrainSettings, device: &Device) -> CrossEntropyLoss {
    let smoothing = (settings.label_smoothing > 0.0).then_some(settings.label_smoothing as f32);
    CrossEntropyLossConfig::new()
        .with_smoothing(smoothing)
        .init(device)
}

/// AdamW with PyTorch's epsilon, so that the two are compared on the same optimizer; in f16,
/// where 1e-8 rounds to zero and a tiny second moment then blows the step up, 1e-4.
fn adamw(weight_decay: f64, device: &Device) -> ModuleOptimizer {
    let epsilon = match device.settings().float_dtype {
        FloatDType::F16 | FloatDType::BF16 => 1e-4,
        _ => 1e-8,
    };
    OnePassAdamW::new(epsilon, weight_decay as f32).init()
}

/// `tensor` as f32, cast only where it is not already.
fn in_f32(tensor: Tensor<2>) -> Tensor<2> {
    if tensor.dtype() == DType::F32 {
        tensor
    } else {
        tensor.cast(FloatDType::F32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Normalization, synth};
    use crate::device::{BackendChoice, CpuBackend, cpu_backend};
    use burn::tensor::{Int, Tensor};

    /// ResNet-18's forward pass, backward pass and AdamW step on `device` compute what flex's
    /// do: from the same weights and on the same batch, the loss before and after a step that
    /// changes it is the same. (A few more steps on 4 pictures and the two drift apart: each
    /// step amplifies rounding differences.)
    fn resnet18_steps_match_flex(device: &Device) {
        let settings = TrainSettings {
            network: NetworkKind::ResNet18,
            ..TrainSettings::default()
        };
        let mut on_flex =
            Trainer::new(2, &cpu_backend(CpuBackend::Flex).device, &settings).unwrap();
        let (model, optimizer) = on_flex.to_bytes().unwrap();
        let mut other = Trainer::restore(2, device, model, optimizer, &settings).unwrap();
        let pictures = synth::generate(4, 32, 5);
        let batch = || HostBatch::new(&pictures, &[0, 1, 2, 3], &Normalization::default(), None);
        let mut losses = Vec::new();
        for _ in 0..2 {
            let flex = on_flex.step(batch(), 1e-4).unwrap().loss;
            let there = other.step(batch(), 1e-4).unwrap().loss;
            assert!(
                (flex - there).abs() < 0.01,
                "flex {flex}, other {there}: {losses:?}"
            );
            losses.push(flex);
        }
        assert!((losses[0] - losses[1]).abs() > 0.05, "{losses:?}");
        // The last update may still be compiling and running: wait for it, so that the test
        // process never exits under a software rasterizer's compiler at work (LLVM's exit
        // handlers then crash it, seen once in eight runs on lavapipe).
        drop(other);
        device.sync().unwrap();
    }

    /// A checkpoint's network as catdog wrote it before it had two networks (a bare SmallCnn
    /// in burnpack) is read back, with the same weights.
    #[test]
    fn a_checkpoint_network_from_before_networks_had_names_still_loads() {
        let device = cpu_backend(CpuBackend::Flex).device;
        let old = crate::model::SmallCnn::new(2, 0.0, &device);
        let mut store = BurnpackStore::from_bytes(None);
        old.save_into(&mut store).unwrap();
        let bytes = store.get_bytes().unwrap().to_vec();
        let loaded = network_from_bytes(NetworkKind::SmallCnn, 2, 0.0, &device, bytes).unwrap();
        let x = Tensor::<4>::ones([1, 3, 16, 16], &device);
        assert_eq!(
            old.forward(x.clone()).into_data(),
            loaded.forward(x).into_data()
        );
    }

    /// Against burn's reference CPU backend, which catdog's flex patches are checked against.
    #[test]
    fn resnet18_steps_on_ndarray_match_flex() {
        resnet18_steps_match_flex(&cpu_backend(CpuBackend::Ndarray).device);
    }

    /// Skips where wgpu finds no adapter, unless `CATDOG_REQUIRE_WGPU=1`.
    #[test]
    fn resnet18_steps_on_wgpu_match_flex() {
        match crate::device::select(BackendChoice::Wgpu) {
            Ok(selection) => resnet18_steps_match_flex(&selection.backend.device),
            Err(err) if std::env::var("CATDOG_REQUIRE_WGPU").is_ok_and(|v| v == "1") => {
                panic!("CATDOG_REQUIRE_WGPU=1 but wgpu is not usable: {err:#}")
            }
            Err(err) => eprintln!("SKIPPED resnet18_steps_on_wgpu_match_flex: no wgpu ({err:#})"),
        }
    }

    /// `--backbone-rate 0`, and any rate while `--frozen-epochs` freeze the backbone: a step
    /// trains the new classifier and leaves ImageNet's backbone as it was (the same features,
    /// batch norm in training mode computing them from the batch); at 0.1 the backbone learns
    /// too, and once thawed.
    #[test]
    fn a_backbone_rate_of_zero_trains_the_new_classifier_alone() {
        let device = cpu_backend(CpuBackend::Flex).device;
        let pictures = synth::generate(4, 32, 5);
        let normalization = crate::model::IMAGENET_NORMALIZATION;
        let batch = || HostBatch::new(&pictures, &[0, 1, 2, 3], &normalization, None);
        let values: Vec<f32> = (0..2 * 3 * 32 * 32)
            .map(|i| (i as f32 * 0.37).sin())
            .collect();
        let looks = |trainer: &Trainer| {
            let Network::EfficientNetLite0(network) = trainer.model() else {
                unreachable!("an EfficientNet-Lite0 was asked for")
            };
            let images = Tensor::<4>::from_data(
                burn::tensor::TensorData::new(values.clone(), [2, 3, 32, 32]),
                trainer.device(),
            );
            let features = network.features(images).into_data();
            let classifier = network.classifier().weight.val().into_data();
            (
                features.try_to_vec::<f32>().unwrap(),
                classifier.try_to_vec::<f32>().unwrap(),
            )
        };
        let largest_change = |a: &[f32], b: &[f32]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0f32, f32::max)
        };
        for (rate, frozen, backbone_learns) in
            [(0.0, false, false), (0.1, true, false), (0.1, false, true)]
        {
            let settings = TrainSettings {
                backbone_rate: rate,
                image_size: 32,
                ..TrainSettings::for_network(NetworkKind::EfficientNetLite0)
            };
            let mut trainer = Trainer::new(2, &device, &settings).unwrap();
            trainer.freeze_backbone(frozen);
            let (features, classifier) = looks(&trainer);
            trainer.step(batch(), 3e-3).unwrap();
            let (features_after, classifier_after) = looks(&trainer);
            assert!(
                largest_change(&classifier, &classifier_after) > 1e-4,
                "rate {rate}: the classifier did not learn"
            );
            let moved = largest_change(&features, &features_after);
            assert_eq!(
                moved > 1e-5,
                backbone_learns,
                "rate {rate}, frozen {frozen}: features moved {moved}"
            );
            if frozen {
                trainer.freeze_backbone(false);
                trainer.step(batch(), 3e-3).unwrap();
                let moved = largest_change(&features, &looks(&trainer).0);
                assert!(moved > 1e-5, "thawed, the features moved {moved}");
            }
        }
    }

    #[test]
    fn label_smoothing_gives_every_class_a_share_of_the_target() {
        let device = cpu_backend(CpuBackend::Flex).device;
        let loss = |label_smoothing| {
            let settings = TrainSettings {
                label_smoothing,
                ..TrainSettings::default()
            };
            let logits = Tensor::<2>::from_floats([[2.0, 0.0]], &device);
            let labels = Tensor::<1, Int>::from_ints([0], &device);
            training_loss(&settings, &device)
                .forward(logits, labels)
                .into_scalar::<f32>() as f64
        };
        let p_cat = 2f64.exp() / (2f64.exp() + 1.0);
        let (log_cat, log_dog) = (p_cat.ln(), (1.0 - p_cat).ln());
        assert!((loss(0.0) + log_cat).abs() < 1e-6, "{}", loss(0.0));
        // Targets 0.95 and 0.05: 1 − 0.1 for the label, then 0.1 shared by the two classes.
        let smoothed = -(0.95 * log_cat + 0.05 * log_dog);
        assert!((loss(0.1) - smoothed).abs() < 1e-6, "{}", loss(0.1));
    }
}
