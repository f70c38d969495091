//! Training and saved models, through the library, on every backend.

mod common;

use burn::module::Module;
use burn::tensor::Distribution::Uniform;
use burn::tensor::{Device, Tensor};
use catdog::data::{ImageSet, Normalization, stratified_split, synth};
use catdog::device::{BackendKind, CpuBackend, cpu_backend};
use catdog::inference::{Predictor, Readout, Runner};
use catdog::model::{self as saved_model, ModelChoice, ModelInfo, Network, NetworkKind};
use catdog::training::{EpochStats, Schedule, TrainOptions, TrainSettings, best_epoch, fit, train};

/// Generated pictures split 90/10.
fn generated(count: usize, size: u32, seed: u64) -> (ImageSet, ImageSet) {
    let all = synth::generate(count, size, seed);
    let (train, val) = stratified_split(all.labels(), 0.1, seed);
    (all.select(&train), all.select(&val))
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
    let (_, epochs) = fit(
        &train,
        &val,
        2,
        &settings,
        &Normalization::default(),
        &backend.device,
        &mut (),
    )
    .unwrap();
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
    let (_, epochs) = fit(
        &train,
        &ImageSet::new(32),
        2,
        &settings,
        &Normalization::default(),
        &backend.device,
        &mut (),
    )
    .unwrap();
    assert_loss_falls(&epochs);
}

#[test]
fn wgpu_training_lowers_the_loss() {
    let Some(backend) = common::wgpu_or_skip("wgpu_training_lowers_the_loss") else {
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
    let (_, epochs) = fit(
        &train,
        &ImageSet::new(16),
        2,
        &settings,
        &Normalization::default(),
        &backend.device,
        &mut (),
    )
    .unwrap();
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
    let (model, epochs) = fit(
        &train,
        &ImageSet::new(32),
        2,
        &settings,
        &Normalization::default(),
        &cpu_backend(CpuBackend::Flex).device,
        &mut (),
    )
    .unwrap();
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
    let (model, _) = fit(
        &train,
        &val,
        2,
        &settings,
        &Normalization::default(),
        &cpu_backend(CpuBackend::Flex).device,
        &mut (),
    )
    .unwrap();
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
    backends.extend(common::wgpu_or_skip(
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
    let (model, _) = fit(
        &train,
        &empty,
        2,
        &settings,
        &normalization,
        &device,
        &mut (),
    )
    .unwrap();
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
    let (model, history) = fit(
        &train,
        &val,
        2,
        &settings,
        &normalization,
        &backend.device,
        &mut (),
    )
    .unwrap();
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

/// Random weights for a sum over an output, drawn once and reused on the second backend, so
/// that gradients of `sum(output · weights)` weigh every output element differently.
#[derive(Default)]
struct OutputWeights(Option<burn::tensor::TensorData>);

impl OutputWeights {
    fn weighted_sum<const D: usize>(&mut self, output: Tensor<D>) -> Tensor<1> {
        let weights = self
            .0
            .get_or_insert_with(|| random_data(output.dims(), 1000))
            .clone();
        let device = output.device();
        (output * Tensor::from_data(weights, &device)).sum()
    }
}

/// Values uniform in [−1, 1) from their own generator (SplitMix64 from `seed`), not flex's
/// shared one: `dropout_acts_while_training_only` reseeds that while other tests draw from it
/// on other threads, which made a case's data change from run to run, and with it whether
/// the fused test's pooled outputs held both zeros and positive values.
fn random_data<const D: usize>(shape: [usize; D], seed: u64) -> burn::tensor::TensorData {
    let mut state = seed;
    let values = (0..shape.iter().product::<usize>())
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (z >> 40) as f32 / (1 << 23) as f32 - 1.0
        })
        .collect::<Vec<_>>();
    burn::tensor::TensorData::new(values, shape)
}

/// `[2, 3, 6, 6]` whole numbers in 0..4: most 2×2 windows hold ties, which must pick the
/// same maximum.
fn tied_data() -> burn::tensor::TensorData {
    burn::tensor::TensorData::new(
        (0..2 * 3 * 6 * 6)
            .map(|i| ((i * 7 + i / 5) % 4) as f32)
            .collect::<Vec<_>>(),
        [2, 3, 6, 6],
    )
}

/// `data` on flex as its primitive, for the tests that call burn-flex's operations directly.
fn flex_primitive<const D: usize>(data: &burn::tensor::TensorData) -> burn_flex::FlexTensor {
    Tensor::<D>::from_data(data.clone(), &Device::flex())
        .try_into_primitive::<burn::backend::Flex>()
        .unwrap()
}

/// Runs `compute` on flex and on ndarray and asserts that all its results agree. catdog's
/// burn-flex computes convolutions, batch norm and their gradients itself
/// (vendor/burn-flex/PATCHED.md); ndarray's are burn's unpatched ones.
fn assert_flex_matches_ndarray(
    case: &str,
    compute: impl Fn(&Device, &mut OutputWeights) -> Vec<(&'static str, burn::tensor::TensorData)>,
) {
    let mut weights = OutputWeights::default();
    let expected = compute(
        &cpu_backend(CpuBackend::Ndarray).device.autodiff(),
        &mut weights,
    );
    let actual = compute(&Device::flex().autodiff(), &mut weights);
    for ((name, actual), (_, expected)) in actual.iter().zip(&expected) {
        assert_eq!(actual.shape(), expected.shape(), "{name} shape, {case}");
        let (a, e) = (
            actual.try_to_vec::<f32>().unwrap(),
            expected.try_to_vec::<f32>().unwrap(),
        );
        // A NaN anywhere makes `worst` NaN, which fails the comparison below. Relative to
        // the value where it exceeds the tensor's root mean square (and 1): Winograd's
        // rounding grows with the terms it sums, so with the output's scale, not with each
        // value, and a weight gradient over thousands of positions is large, and its
        // rounding with it.
        let rms = (e.iter().map(|e| e * e).sum::<f32>() / e.len().max(1) as f32).sqrt();
        let worst = a
            .iter()
            .zip(&e)
            .map(|(a, e)| (a - e).abs() / e.abs().max(rms).max(1.0))
            .fold(
                0.0,
                |worst: f32, d| if d.is_nan() { d } else { worst.max(d) },
            );
        assert!(worst < 1e-4, "{name} differs by {worst}, {case}");
    }
}

/// A kernel larger than the padded input is a shape error: flex panics saying so (as burn's
/// shape checks do), where its output size used to wrap to 2⁶⁴ − 1 and come back as a
/// tensor claiming that shape.
#[test]
fn flex_refuses_a_kernel_larger_than_the_padded_input() {
    use burn::tensor::module::conv2d;
    use burn::tensor::ops::ConvOptions;
    let device = Device::flex();
    let x = Tensor::<4>::ones([1, 1, 1, 1], &device);
    let w = Tensor::<4>::ones([1, 1, 3, 3], &device);
    let options = ConvOptions::new([1, 1], [0, 0], [1, 1], 1);
    let result = std::panic::catch_unwind(|| conv2d(x, w, None, options).dims());
    let panic = result.expect_err("no tensor of 2⁶⁴ − 1 rows");
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(
        message.contains("the kernel reaches 3 along axis 2, more than the padded input's 1"),
        "{message}"
    );
}

/// The model's 3×3 layers, and strides, uneven padding, dilation and groups; more images
/// than threads (each thread's patch buffer then serves several) and no bias.
#[test]
fn flex_convolution_and_its_gradients_match_ndarray() {
    use burn::tensor::module::conv2d;
    use burn::tensor::ops::ConvOptions;

    let same = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
    let uneven = ConvOptions {
        stride: [1, 2],
        padding: [(2, 0), (1, 2)],
        dilation: [1, 1],
        groups: 2,
    };
    let cases = [
        (
            [3, 4, 9, 8],
            [5, 4, 3, 3],
            ConvOptions::new([1, 1], [1, 1], [1, 1], 1),
        ),
        (
            [2, 3, 11, 10],
            [4, 3, 3, 2],
            ConvOptions::new([2, 1], [1, 0], [1, 2], 1),
        ),
        ([2, 4, 8, 9], [6, 2, 3, 3], uneven),
        (
            [1, 2, 6, 6],
            [3, 2, 1, 1],
            ConvOptions::new([1, 1], [0, 0], [1, 1], 1),
        ),
        (
            [9, 3, 7, 5],
            [4, 3, 3, 3],
            ConvOptions::new([1, 1], [1, 1], [1, 1], 1),
        ),
        // Deep enough for Winograd (forward with 16 input channels, input gradient with 17
        // output channels), given an image per thread: odd sizes, tasks of unequal numbers of
        // images, a one-row image, a deep image (on two threads one thread with two tasks), a
        // one-column image, 16 images (so that a
        // 16-thread machine takes that path too); batch 1 stays im2col's.
        ([3, 16, 9, 7], [17, 16, 3, 3], same.clone()),
        ([2, 16, 1, 5], [16, 16, 3, 3], same.clone()),
        ([3, 128, 24, 23], [128, 128, 3, 3], same.clone()),
        ([2, 16, 5, 1], [16, 16, 3, 3], same.clone()),
        ([16, 16, 5, 6], [16, 16, 3, 3], same.clone()),
        ([1, 20, 4, 6], [16, 20, 3, 3], same.clone()),
        // Wide enough (24 tiles a row) that a block holds 3 of an image's 7 tile rows, both
        // by the 2 MB rule and by the 64 tiles a block takes at least: blocks of 3, 3 and 1.
        ([2, 128, 26, 95], [128, 128, 3, 3], same.clone()),
    ];
    for (i, (x_shape, w_shape, options)) in cases.into_iter().enumerate() {
        let with_bias = i != 4 && i != 8;
        let seed = 3 * i as u64;
        let (x, w, bias) = (
            random_data(x_shape, seed),
            random_data(w_shape, seed + 1),
            random_data([w_shape[0]], seed + 2),
        );
        let case = format!("{x_shape:?} * {w_shape:?}, {options:?}, bias: {with_bias}");
        assert_flex_matches_ndarray(&case, |device, weights| {
            let x = Tensor::<4>::from_data(x.clone(), device).require_grad();
            let w = Tensor::<4>::from_data(w.clone(), device).require_grad();
            let b = Tensor::<1>::from_data(bias.clone(), device).require_grad();
            let y = conv2d(
                x.clone(),
                w.clone(),
                with_bias.then(|| b.clone()),
                options.clone(),
            );
            let grads = weights.weighted_sum(y.clone()).backward();
            let mut results = vec![
                ("y", y.into_data()),
                ("dx", x.grad(&grads).unwrap().into_data()),
                ("dw", w.grad(&grads).unwrap().into_data()),
            ];
            if with_bias {
                results.push(("db", b.grad(&grads).unwrap().into_data()));
            }
            results
        });
    }
}

/// The model's 2×2 max-pool (flex's own, vendor/burn-flex/src/ops/patch/pool.rs) at
/// inference and with its gradient: odd sizes, batch 1, ties; and a pooling it leaves to
/// upstream.
#[test]
fn flex_max_pool_and_its_gradient_match_ndarray() {
    use burn::tensor::module::max_pool2d;
    use burn::tensor::ops::MaxPoolOptions;

    let ties = tied_data();
    let cases = [
        (random_data([3, 4, 8, 6], 0), false),
        (random_data([2, 3, 7, 9], 1), false),
        (random_data([1, 2, 2, 2], 2), false),
        (random_data([1, 1, 5, 4], 3), false),
        (ties, false),
        (random_data([2, 2, 5, 5], 4), true),
    ];
    for (x, ceil_mode) in cases {
        let case = format!("{:?}, ceil_mode {ceil_mode}", x.shape());
        assert_flex_matches_ndarray(&case, |device, weights| {
            let options = MaxPoolOptions {
                kernel_size: [2, 2],
                stride: [2, 2],
                padding: [(0, 0), (0, 0)],
                dilation: [1, 1],
                ceil_mode,
            };
            let pool = |x: Tensor<4>| max_pool2d(x, options.clone());
            let plain = pool(Tensor::<4>::from_data(x.clone(), device));
            let tracked = Tensor::<4>::from_data(x.clone(), device).require_grad();
            let y = pool(tracked.clone());
            let grads = weights.weighted_sum(y.clone()).backward();
            vec![
                ("y at inference", plain.into_data()),
                ("y", y.into_data()),
                ("dx", tracked.grad(&grads).unwrap().into_data()),
            ]
        });
    }
}

/// burn-flex's convolution → 2×2 max-pool → ReLU in one pass (what catdog's prediction runs
/// on flex, src/model/fused.rs) against the three apart on ndarray: Winograd's path (with 16
/// images too, so that a 16-thread machine takes it) and im2col's (3 or 20 input channels,
/// batch 1, no padding), with and without bias; a shape it does not take (odd output sides,
/// two groups) is left to the caller (`None`), not computed.
#[test]
fn flex_fused_convolution_pool_and_relu_match_ndarray() {
    use burn::backend::Flex;
    use burn::tensor::activation::relu;
    use burn::tensor::module::{conv2d, max_pool2d};
    use burn::tensor::ops::{ConvOptions, MaxPoolOptions};

    let same = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
    let valid = ConvOptions::new([1, 1], [0, 0], [1, 1], 1);
    let fused = |x: &burn::tensor::TensorData,
                 w: &burn::tensor::TensorData,
                 b: Option<&burn::tensor::TensorData>,
                 options: &ConvOptions<2>| {
        burn_flex::ops::conv2d_max_pool2x2_relu(
            flex_primitive::<4>(x),
            flex_primitive::<4>(w),
            b.map(flex_primitive::<1>),
            options,
        )
        .map(|y| Tensor::<4>::from_primitive::<Flex>(y).into_data())
    };
    let cases = [
        ([3, 16, 8, 6], [17, 16, 3, 3], same.clone(), true),
        ([16, 16, 4, 6], [16, 16, 3, 3], same.clone(), false),
        ([2, 3, 10, 8], [5, 3, 3, 3], same.clone(), true),
        ([1, 20, 6, 4], [8, 20, 3, 3], same.clone(), true),
        ([2, 4, 10, 10], [6, 4, 3, 3], valid, false),
    ];
    let ndarray = cpu_backend(CpuBackend::Ndarray).device;
    for (i, (x_shape, w_shape, options, with_bias)) in cases.into_iter().enumerate() {
        let case = format!("{x_shape:?} * {w_shape:?}, {options:?}, bias: {with_bias}");
        let seed = 3 * i as u64;
        let (x, w, b) = (
            random_data(x_shape, seed),
            random_data(w_shape, seed + 1),
            random_data([w_shape[0]], seed + 2),
        );
        let y = conv2d(
            Tensor::<4>::from_data(x.clone(), &ndarray),
            Tensor::<4>::from_data(w.clone(), &ndarray),
            with_bias.then(|| Tensor::<1>::from_data(b.clone(), &ndarray)),
            options.clone(),
        );
        let pool = MaxPoolOptions {
            kernel_size: [2, 2],
            stride: [2, 2],
            padding: [(0, 0), (0, 0)],
            dilation: [1, 1],
            ceil_mode: false,
        };
        let expected = relu(max_pool2d(y, pool)).into_data();
        let actual = fused(&x, &w, with_bias.then_some(&b), &options)
            .unwrap_or_else(|| panic!("not fused: {case}"));
        assert_eq!(actual.shape(), expected.shape(), "{case}");
        let (a, e) = (
            actual.try_to_vec::<f32>().unwrap(),
            expected.try_to_vec::<f32>().unwrap(),
        );
        for (a, e) in a.iter().zip(&e) {
            assert!(
                (a - e).abs() <= 1e-4 * e.abs().max(1.0),
                "{a} against {e}, {case}"
            );
        }
        assert!(e.contains(&0.0) && e.iter().any(|&v| v > 0.0), "{case}");
    }
    let (x, w) = (
        random_data([2, 3, 9, 8], 100),
        random_data([4, 3, 3, 3], 101),
    );
    assert!(fused(&x, &w, None, &same).is_none(), "odd output height");
    let (x, w) = (
        random_data([2, 4, 8, 8], 102),
        random_data([4, 2, 3, 3], 103),
    );
    let groups = ConvOptions::new([1, 1], [1, 1], [1, 1], 2);
    assert!(fused(&x, &w, None, &groups).is_none(), "two groups");
}

/// The 2×2 pool with i64 indices (what a direct `ModuleOps` call may ask for; autodiff asks
/// for flex's default i32, which the test above compares with ndarray) gives the same pooled
/// values, indices and gradient as with i32, odd sizes and ties included.
#[test]
fn flex_max_pool_with_i64_indices_matches_i32() {
    use burn::backend::Flex;
    use burn::backend::ops::ModuleOps;
    use burn::tensor::{Int, IntDType};

    let ties = tied_data();
    for (x, pooled_shape) in [
        (random_data([2, 3, 7, 9], 10), [2, 3, 3, 4]),
        (ties, [2, 3, 3, 3]),
    ] {
        let shape = x.shape().clone();
        let grad = random_data(pooled_shape, 11);
        let pool = |dtype| {
            let pooled = <Flex as ModuleOps<Flex>>::max_pool2d_with_indices(
                flex_primitive::<4>(&x),
                [2, 2],
                [2, 2],
                [0, 0],
                [1, 1],
                false,
                dtype,
            );
            let dx = <Flex as ModuleOps<Flex>>::max_pool2d_with_indices_backward(
                flex_primitive::<4>(&x),
                [2, 2],
                [2, 2],
                [0, 0],
                [1, 1],
                false,
                flex_primitive::<4>(&grad),
                pooled.indices.clone(),
            );
            (
                Tensor::<4>::from_primitive::<Flex>(pooled.output).into_data(),
                Tensor::<4, Int>::from_primitive::<Flex>(pooled.indices).into_data(),
                Tensor::<4>::from_primitive::<Flex>(dx.x_grad).into_data(),
            )
        };
        let (i32s, i64s) = (pool(IntDType::I32), pool(IntDType::I64));
        assert_eq!(i32s.1.dtype(), burn::tensor::DType::I32, "{shape:?}");
        assert_eq!(i64s.1.dtype(), burn::tensor::DType::I64, "{shape:?}");
        assert_eq!(i32s.0, i64s.0, "pooled values, {shape:?}");
        assert_eq!(i32s.1.convert::<i64>(), i64s.1, "indices, {shape:?}");
        assert_eq!(i32s.2, i64s.2, "gradient, {shape:?}");
    }
}

/// Training (batch statistics, with gradients) and inference (given statistics).
#[test]
fn flex_batch_norm_and_its_gradients_match_ndarray() {
    use burn::tensor::module::{batch_norm, batch_norm_train};

    let (x, gamma, beta) = (
        random_data([4, 3, 5, 6], 0),
        random_data([3], 1),
        random_data([3], 2),
    );
    let mean = random_data([3], 3);
    // In [0.1, 2).
    let variance =
        (Tensor::<1>::from_data(random_data([3], 4), &Device::flex()) * 0.95 + 1.05).into_data();
    assert_flex_matches_ndarray("batch norm [4, 3, 5, 6]", |device, weights| {
        let x = Tensor::<4>::from_data(x.clone(), device).require_grad();
        let gamma = Tensor::<1>::from_data(gamma.clone(), device).require_grad();
        let beta = Tensor::<1>::from_data(beta.clone(), device).require_grad();
        let trained = batch_norm_train(x.clone(), gamma.clone(), beta.clone(), 1e-5);
        let grads = weights.weighted_sum(trained.output.clone()).backward();
        let given = [mean.clone(), variance.clone()].map(|v| Tensor::<1>::from_data(v, device));
        let [mean, variance] = given;
        let inference = batch_norm(
            x.clone().detach(),
            gamma.clone(),
            beta.clone(),
            mean,
            variance,
            1e-5,
        );
        vec![
            ("output", trained.output.into_data()),
            ("mean", trained.mean.into_data()),
            ("variance", trained.variance.into_data()),
            ("dx", x.grad(&grads).unwrap().into_data()),
            ("dgamma", gamma.grad(&grads).unwrap().into_data()),
            ("dbeta", beta.grad(&grads).unwrap().into_data()),
            ("inference", inference.into_data()),
        ]
    });
}

/// catdog's batch norm → 2×2 max-pool → ReLU while training, one operation on flex
/// (src/model/norm_pool_relu.rs), against the three apart on ndarray: the output, the
/// gradients of x, γ and β, and the running statistics after two steps; batch 1, ties, γ of
/// both signs, more channels, and odd sides, which flex's operation leaves to the three apart.
#[test]
fn flex_fused_batch_norm_pool_and_relu_match_ndarray() {
    use burn::module::Param;
    use burn::nn::BatchNormConfig;
    use burn::nn::pool::MaxPool2dConfig;
    use catdog::model::norm_pool_relu;

    let pool = MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init();
    let cases = [
        random_data([4, 3, 6, 8], 0),
        random_data([1, 2, 2, 2], 1),
        tied_data(),
        random_data([3, 16, 8, 10], 2),
        random_data([2, 2, 5, 7], 3),
    ];
    for (seed, x) in (10..).zip(cases) {
        let shape = x.shape().to_vec();
        let channels = shape[1];
        let (gamma, beta) = (
            random_data([channels], seed),
            random_data([channels], seed + 100),
        );
        let even = shape[2] % 2 == 0 && shape[3] % 2 == 0;
        let fused = burn_flex::ops::batch_norm_max_pool2x2_relu(
            flex_primitive::<4>(&x),
            flex_primitive::<1>(&gamma),
            flex_primitive::<1>(&beta),
            1e-5,
        );
        assert_eq!(fused.is_some(), even, "flex fuses {shape:?}");
        assert_flex_matches_ndarray(&format!("{shape:?}"), |device, weights| {
            let mut norm = BatchNormConfig::new(channels).init(device);
            norm.gamma = Param::from_tensor(Tensor::from_data(gamma.clone(), device));
            norm.beta = Param::from_tensor(Tensor::from_data(beta.clone(), device));
            let input = || Tensor::<4>::from_data(x.clone(), device).require_grad();
            let _ = norm_pool_relu(&norm, &pool, input() * 2.0);
            let x = input();
            let y = norm_pool_relu(&norm, &pool, x.clone());
            let grads = weights.weighted_sum(y.clone()).backward();
            vec![
                ("y", y.into_data()),
                ("dx", x.grad(&grads).unwrap().into_data()),
                ("dgamma", norm.gamma.val().grad(&grads).unwrap().into_data()),
                ("dbeta", norm.beta.val().grad(&grads).unwrap().into_data()),
                ("running mean", norm.running_mean.value().into_data()),
                ("running variance", norm.running_var.value().into_data()),
            ]
        });
    }
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

/// The patched crates in vendor/ are the ones compiled in: a version bump in Cargo.toml
/// would leave the patch unused (cargo only warns), and Cargo.lock would then name the
/// registry's crate instead.
#[test]
fn the_vendored_crates_are_the_ones_compiled_in() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(root.join("vendor"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "burn-flex",
            "burn-optim",
            "burn-store",
            "cubecl-wgpu",
            "tiny_http"
        ]
    );
    for name in &names {
        let manifest =
            std::fs::read_to_string(root.join("vendor").join(name).join("Cargo.toml")).unwrap();
        let version = manifest
            .lines()
            .find_map(|line| line.strip_prefix("version = "))
            .unwrap();
        let packages: Vec<&str> = lock
            .split("[[package]]")
            .filter(|package| package.contains(&format!("name = \"{name}\"\n")))
            .collect();
        assert_eq!(packages.len(), 1, "one {name} in Cargo.lock: {packages:?}");
        assert!(
            packages[0].contains(&format!("version = {version}")),
            "{name}: vendor/ has {version}, Cargo.lock {}",
            packages[0]
        );
        assert!(
            !packages[0].contains("source = "),
            "{name} comes from a registry, not vendor/: {}",
            packages[0]
        );
    }
}
