//! The training loop through the library, on every backend: it learns (flex, ndarray, wgpu,
//! ResNet-18), keeps its best epoch and stops when patience runs out, draws dropout only
//! while training, refuses settings it cannot use; and what it hands inference: a saved
//! model that predicts the same on every backend, a temperature that undoes
//! over-confidence, and the mean with the mirror image.

use burn::module::Module;
use burn::tensor::Distribution::Uniform;
use burn::tensor::Tensor;
use catdog::data::{ImageSet, Normalization, stratified_split, synth};
use catdog::device::{BackendKind, CpuBackend, cpu_backend};
use catdog::inference::{Predictor, Readout, Runner};
use catdog::model::{self as saved_model, ModelChoice, ModelInfo, Network, NetworkKind};
use catdog::training::{EpochStats, Schedule, TrainOptions, TrainSettings, best_epoch, fit, train};

use crate::common::wgpu_or_skip;

/// Generated pictures split 90/10.
fn generated(count: usize, size: u32, seed: u64) -> (ImageSet, ImageSet) {
    let all = synth::generate(count, size, seed);
    let (train, val) = stratified_split(all.labels(), 0.1, seed);
    (all.select(&train), all.select(&val))
}

/// `fit` for two classes, with ImageNet's normalisation and no progress, as every test here
/// trains.
fn fit_on(
    train: &ImageSet,
    val: &ImageSet,
    settings: &TrainSettings,
    device: &burn::tensor::Device,
) -> (Network, Vec<EpochStats>) {
    fit(
        train,
        val,
        2,
        settings,
        &Normalization::default(),
        device,
        &mut (),
    )
    .unwrap()
}

fn assert_loss_falls(epochs: &[EpochStats]) {
    let (first, last) = (epochs[0].train_loss, epochs[epochs.len() - 1].train_loss);
    assert!(
        last < first * 0.9,
        "training loss went from {first:.4} to {last:.4}"
    );
}

#[test]
fn flex_learns_the_generated_pictures() {
    let (train, val) = generated(4000, 32, 1);
    let settings = TrainSettings {
        epochs: 4,
        learning_rate: 3e-3,
        seed: 1,
        ..TrainSettings::default()
    };
    let backend = cpu_backend(CpuBackend::Flex);
    let (_, epochs) = fit_on(&train, &val, &settings, &backend.device);
    let accuracy = epochs.last().unwrap().val_accuracy.unwrap();
    assert!(
        accuracy >= 0.95,
        "validation accuracy {accuracy:.3} after {epochs:#?}"
    );
}

/// A few steps on a few pictures: ndarray trains this network ~25× slower than flex.
#[test]
fn ndarray_training_lowers_the_loss() {
    let (train, _) = generated(40, 32, 2);
    let settings = TrainSettings {
        epochs: 4,
        batch_size: 16,
        learning_rate: 3e-3,
        seed: 2,
        ..TrainSettings::default()
    };
    let backend = cpu_backend(CpuBackend::Ndarray);
    let (_, epochs) = fit_on(&train, &ImageSet::new(32), &settings, &backend.device);
    assert_loss_falls(&epochs);
}

#[test]
fn wgpu_training_lowers_the_loss() {
    let Some(backend) = wgpu_or_skip("wgpu_training_lowers_the_loss") else {
        return;
    };
    // 36 pictures in batches of 4: the bench tests' batch size and image size, so that a fresh
    // machine tunes these kernels once for all of them (minutes on lavapipe for each new size).
    let (train, _) = generated(40, 16, 3);
    let settings = TrainSettings {
        epochs: 4,
        batch_size: 4,
        learning_rate: 3e-3,
        seed: 3,
        ..TrainSettings::default()
    };
    let (_, epochs) = fit_on(&train, &ImageSet::new(16), &settings, &backend.device);
    assert_loss_falls(&epochs);
}

/// ResNet-18 (`--network resnet18`) learns: a few steps at 32 px, the smallest picture its
/// five halvings take. (`trainer.rs` checks its steps on ndarray and wgpu against flex's.)
#[test]
fn resnet18_training_lowers_the_loss() {
    let (train, _) = generated(36, 32, 4);
    let settings = TrainSettings {
        network: NetworkKind::ResNet18,
        epochs: 3,
        batch_size: 8,
        learning_rate: 3e-3,
        seed: 4,
        ..TrainSettings::default()
    };
    let (model, epochs) = fit_on(
        &train,
        &ImageSet::new(32),
        &settings,
        &cpu_backend(CpuBackend::Flex).device,
    );
    assert_eq!(model.kind(), NetworkKind::ResNet18);
    assert_loss_falls(&epochs);
}

/// A network trained with dropout for one epoch on flex on 64 generated pictures of `size` px,
/// and the pictures it held out.
fn one_epoch_model(size: u32, seed: u64) -> (Network, ImageSet) {
    let (train, val) = generated(64, size, seed);
    let settings = TrainSettings {
        epochs: 1,
        batch_size: 16,
        seed,
        dropout: 0.3,
        ..TrainSettings::default()
    };
    let (model, _) = fit_on(
        &train,
        &val,
        &settings,
        &cpu_backend(CpuBackend::Flex).device,
    );
    (model, val)
}

/// A model trained on flex, saved, then loaded on flex, ndarray and wgpu, gives the
/// probabilities the trained model gave.
#[test]
fn a_saved_model_predicts_the_same_on_every_backend() {
    let size = 32;
    let (model, val) = one_epoch_model(size, 4);
    let flex = cpu_backend(CpuBackend::Flex);
    let normalization = Normalization::default();
    let images: Vec<&[u8]> = (0..val.len()).map(|i| val.image(i)).collect();
    let expected = Runner::new(&model, size, &normalization, &flex.device, images.len())
        .probabilities(&images)
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let info = ModelInfo {
        format_version: saved_model::FORMAT_VERSION,
        catdog_version: "test".into(),
        architecture: NetworkKind::SmallCnn.name().into(),
        architecture_version: catdog::model::ARCHITECTURE_VERSION,
        classes: vec!["cat".into(), "dog".into()],
        image_size: size,
        normalization,
        epochs: 1,
        val_accuracy: None,
        backend: BackendKind::Flex,
        device: flex.device_name.clone(),
        train_images_per_sec: 1.0,
        weights_file: String::new(),
        weights_bytes: 0,
        weights_crc32: 0,
        trained_on: None,
        settings: None,
        calibration: None,
        typical: None,
    };
    saved_model::save(dir.path(), &model, &info).unwrap();

    let mut backends = vec![flex, cpu_backend(CpuBackend::Ndarray)];
    backends.extend(wgpu_or_skip(
        "a_saved_model_predicts_the_same_on_every_backend (wgpu part)",
    ));
    for backend in backends {
        let choice = ModelChoice::Folder(dir.path().to_path_buf());
        let predictor = Predictor::load(&choice, &backend).unwrap();
        assert_eq!(predictor.info().classes, info.classes);
        let got = predictor.probabilities(&images).unwrap();
        assert_eq!(got.len(), expected.len());
        for (row, (g, e)) in got.iter().zip(&expected).enumerate() {
            for (gv, ev) in g.iter().zip(e) {
                assert!(
                    (gv - ev).abs() <= 1e-4,
                    "{}: image {row}: loaded model gives {g:?}, trained model gave {e:?}",
                    backend.kind
                );
            }
        }
    }
}

/// Temperature scaling undoes over-confidence: a model whose logits are made four times too
/// large on purpose gets a temperature four times the trained model's, above 1, and a lower
/// calibration error than it had.
#[test]
fn an_overconfident_model_gets_a_temperature_above_one() {
    let size = 16;
    let (train, _) = generated(400, size, 9);
    let settings = TrainSettings {
        epochs: 1,
        batch_size: 16,
        seed: 9,
        ..TrainSettings::default()
    };
    let device = cpu_backend(CpuBackend::Flex).device;
    let normalization = Normalization::default();
    let empty = train.select(&[]);
    let (model, _) = fit_on(&train, &empty, &settings, &device);
    // Pictures it never saw, to fit and measure on.
    let check = synth::generate(600, size, 10);
    let calibrate = |model: &Network| {
        Runner::new(model, check.size(), &normalization, &device, 64)
            .calibrate(&check)
            .unwrap()
            .expect("a calibration for a non-empty set")
    };
    let trained = calibrate(&model);
    // Clear of the coldest temperature allowed, where rounding would change the ratio below.
    assert!(trained.fitted > 0.2, "{trained:?}");
    assert_eq!(
        trained.temperature,
        trained.fitted.max(1.0),
        "never below 1"
    );
    let sharp = calibrate(&model.clone().with_logits_scaled(4.0));
    assert_eq!(sharp.photos, 600);
    assert!(
        sharp.temperature > 1.0 && (sharp.fitted / trained.fitted - 4.0).abs() < 0.05,
        "temperatures: trained {trained:?}, sharpened {sharp:?}"
    );
    assert!(
        sharp.error_after < sharp.error_before && sharp.error_before > trained.error_before,
        "trained {trained:?}, sharpened {sharp:?}"
    );
    // Divided by its temperature, the sharpened model gives the trained model's calibrated
    // probabilities again.
    assert!((sharp.error_after - trained.error_after).abs() < 0.01);
    assert_eq!(
        calibrate(&model).temperature,
        trained.temperature,
        "deterministic"
    );
    assert!(
        Runner::new(&model, empty.size(), &normalization, &device, 64)
            .calibrate(&empty)
            .unwrap()
            .is_none()
    );
}

/// Dropout draws new masks in every training pass and stays out of inference.
#[test]
fn dropout_acts_while_training_only() {
    let device = cpu_backend(CpuBackend::Flex).device;
    let training = device.clone().autodiff();
    training.seed(3);
    let images = Tensor::<4>::random([8, 3, 16, 16], Uniform(0.0, 1.0), &device);
    let on_training = Tensor::<4>::from_data(images.to_data(), &training);
    let logits = |model: &Network, images: &Tensor<4>| model.forward(images.clone()).into_data();

    let without = Network::new(NetworkKind::SmallCnn, 2, 0.0, &training);
    assert_eq!(
        logits(&without, &on_training),
        logits(&without, &on_training)
    );
    let with = Network::new(NetworkKind::SmallCnn, 2, 0.5, &training);
    assert_ne!(
        logits(&with, &on_training),
        logits(&with, &on_training),
        "two training passes drew the same dropout mask"
    );
    let inference = with.valid();
    assert_eq!(logits(&inference, &images), logits(&inference, &images));
}

/// The training pictures again, every label swapped: the better the network learns its
/// training set, the worse it does on these, so later epochs validate worse than earlier ones.
fn swapped_labels(set: &ImageSet) -> ImageSet {
    let mut swapped = ImageSet::new(set.size());
    for i in 0..set.len() {
        swapped.push(set.image(i), 1 - set.labels()[i]);
    }
    swapped
}

fn fit_against_swapped_labels(epochs: usize, patience: Option<usize>) -> (f64, Vec<EpochStats>) {
    let (train, _) = generated(400, 32, 5);
    let val = swapped_labels(&train.select(&(0..100).collect::<Vec<_>>()));
    let settings = TrainSettings {
        epochs,
        learning_rate: 3e-3,
        schedule: Schedule::Constant,
        seed: 5,
        patience,
        ..TrainSettings::default()
    };
    let backend = cpu_backend(CpuBackend::Flex);
    let normalization = Normalization::default();
    let (model, history) = fit_on(&train, &val, &settings, &backend.device);
    let (_, accuracy) = Runner::new(&model, val.size(), &normalization, &backend.device, 32)
        .evaluate(&val)
        .unwrap();
    (accuracy, history)
}

#[test]
fn the_best_epoch_is_kept_when_later_ones_are_worse() {
    let (accuracy, history) = fit_against_swapped_labels(4, None);
    let best = best_epoch(&history).unwrap();
    let best_accuracy = history[best - 1].val_accuracy.unwrap();
    let last_accuracy = history.last().unwrap().val_accuracy.unwrap();
    assert!(
        last_accuracy < best_accuracy,
        "the run was meant to end worse than its best epoch: {history:#?}"
    );
    assert_eq!(
        accuracy, best_accuracy,
        "the returned network is epoch {best}'s, not the last one's: {history:#?}"
    );
}

#[test]
fn patience_stops_the_run_after_that_many_epochs_without_progress() {
    let (accuracy, history) = fit_against_swapped_labels(8, Some(2));
    let best = best_epoch(&history).unwrap();
    assert!(
        history.len() < 8,
        "the run did not stop early: {history:#?}"
    );
    assert_eq!(history.len(), best + 2, "{history:#?}");
    assert_eq!(accuracy, history[best - 1].val_accuracy.unwrap());
}

/// `--flip` gives the mean of a photo's probabilities and its mirror image's, mirrored here on
/// the host.
#[test]
fn flip_averages_a_photo_with_its_mirror_image() {
    let size = 32;
    let (model, val) = one_epoch_model(size, 6);
    let flex = cpu_backend(CpuBackend::Flex);
    let normalization = Normalization::default();
    let images: Vec<&[u8]> = (0..val.len()).map(|i| val.image(i)).collect();
    let mirrored: Vec<Vec<u8>> = images
        .iter()
        .map(|pixels| {
            pixels
                .chunks(size as usize * 3)
                .flat_map(|row| row.chunks(3).rev().flatten().copied())
                .collect()
        })
        .collect();
    let mirrored: Vec<&[u8]> = mirrored.iter().map(Vec::as_slice).collect();
    let probabilities = |images: &[&[u8]], flip| {
        Runner::new(&model, size, &normalization, &flex.device, images.len())
            .with_readout(Readout {
                flip,
                ..Readout::PLAIN
            })
            .probabilities(images)
            .unwrap()
    };
    let (plain, of_mirrored) = (
        probabilities(&images, false),
        probabilities(&mirrored, false),
    );
    let flipped = probabilities(&images, true);
    for (row, ((p, m), f)) in plain.iter().zip(&of_mirrored).zip(&flipped).enumerate() {
        for class in 0..2 {
            let mean = (p[class] + m[class]) / 2.0;
            assert!(
                (f[class] - mean).abs() <= 1e-5,
                "image {row}: flip gives {f:?}, the mean of {p:?} and {m:?} is not that"
            );
        }
    }
    assert_ne!(
        plain, of_mirrored,
        "the mirror images must look different to the model"
    );
}

/// Settings no run can use are refused with the flag named, through the library too: zero
/// epochs or an empty batch used to panic deep inside the loop.
#[test]
fn fit_refuses_settings_it_cannot_use() {
    let (train, val) = generated(20, 16, 9);
    let device = cpu_backend(CpuBackend::Flex).device;
    for (settings, flag) in [
        (
            TrainSettings {
                epochs: 0,
                ..TrainSettings::default()
            },
            "--epochs",
        ),
        (
            TrainSettings {
                batch_size: 0,
                ..TrainSettings::default()
            },
            "--batch-size",
        ),
        (
            TrainSettings {
                learning_rate: f64::NAN,
                ..TrainSettings::default()
            },
            "--lr",
        ),
        (
            TrainSettings {
                patience: Some(0),
                ..TrainSettings::default()
            },
            "--patience",
        ),
    ] {
        let err = fit(
            &train,
            &val,
            2,
            &settings,
            &Normalization::default(),
            &device,
            &mut (),
        )
        .map(|_| ())
        .expect_err(flag);
        assert!(format!("{err:#}").contains(flag), "{flag}: {err:#}");
    }
}

/// `train` checks its options before touching the model folder.
#[test]
fn train_refuses_options_it_cannot_use() {
    let out = tempfile::tempdir().unwrap();
    let options = TrainOptions {
        settings: TrainSettings {
            val_split: 1.5,
            ..TrainSettings::default()
        },
        out: out.path().join("model"),
        ..TrainOptions::default()
    };
    let err = train(&options, &cpu_backend(CpuBackend::Flex), &mut ()).expect_err("val_split 1.5");
    assert!(format!("{err:#}").contains("--val-split"), "{err:#}");
    assert!(!options.out.exists(), "nothing is written before the check");
}
