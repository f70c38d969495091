//! `catdog train` from the command line: a folder of photos to a model that `predict` and
//! `eval` use, the networks it trains, the generated pictures of the speed demo, and the
//! clear refusals of data, settings and precisions it cannot use.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::common::runs::weights;
use crate::common::{
    assert_fails_with, assert_success, catdog, copy_folder, path, real_photos_or_skip, stderr,
    stdout, synth, train_one_epoch, weights_file, weights_header,
};

#[test]
fn synth_then_train_then_predict_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = dir.path().join("model");
    synth(&data, 80, 32);
    assert_eq!(fs::read_dir(data.join("cat")).unwrap().count(), 40);

    let output = catdog()
        .train()
        .data(&data)
        .flex()
        .epochs(2)
        .size(32)
        .batch_size(16)
        .out(&model)
        .json()
        .succeeds();
    let report: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON object");
    assert_eq!(report["backend"], "flex");
    assert_eq!(report["epochs"], 2);
    assert_eq!(report["train_images"], 72);
    assert_eq!(report["val_images"], 8);
    assert_eq!(
        report["data"],
        format!("{} (a sub-folder per class)", path(&data))
    );
    let per_epoch = report["per_epoch"].as_array().unwrap();
    assert_eq!(
        report["train_images_per_sec"], per_epoch[1]["train_images_per_sec"],
        "with two epochs, the headline is the second's: the first includes the warm-up"
    );
    assert_eq!(
        report["first_epoch_images_per_sec"],
        per_epoch[0]["train_images_per_sec"]
    );
    // A share of the 8 held-out photos.
    let accuracy = report["val_accuracy"].as_f64().unwrap();
    assert_eq!((accuracy * 8.0).fract(), 0.0, "{accuracy}");
    assert!(report["device"].as_str().unwrap().contains("threads"));
    assert_eq!(report["model"], path(&model));
    assert!(
        stderr(&output).contains("epoch 2/2"),
        "per-epoch lines on stderr"
    );

    let info: Value =
        serde_json::from_str(&fs::read_to_string(model.join("catdog.json")).unwrap()).unwrap();
    assert_eq!(info["classes"], serde_json::json!(["cat", "dog"]));
    assert_eq!(info["image_size"], 32);
    assert_eq!(info["val_accuracy"], report["val_accuracy"]);
    assert_eq!(
        info["epochs"], report["kept_epoch"],
        "the kept epoch is saved"
    );
    let kept = report["kept_epoch"].as_u64().unwrap() as usize;
    assert!(
        per_epoch
            .iter()
            .all(|e| e["val_accuracy"].as_f64() <= report["val_accuracy"].as_f64()),
        "epoch {kept} is the best: {per_epoch:?}"
    );
    assert!(weights_file(&model).is_file());
    let curves = fs::read_to_string(model.join("curves.svg")).unwrap();
    assert!(curves.starts_with("<svg") && curves.trim_end().ends_with("</svg>"));
    assert!(curves.contains("Accuracy") && curves.contains("validation"));

    let predict = || catdog().predict().model(&model).flex();

    // A whole folder, as JSON lines.
    let output = predict().json().arg(data.join("dog")).succeeds();
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 40);
    for line in &lines {
        let (cat, dog) = (
            line["probabilities"]["cat"].as_f64().unwrap(),
            line["probabilities"]["dog"].as_f64().unwrap(),
        );
        assert!((cat + dog - 1.0).abs() < 1e-4, "{line}");
        let label = line["label"].as_str().unwrap();
        assert_eq!(line["probability"], line["probabilities"][label]);
        assert!(line["path"].as_str().unwrap().ends_with(".png"));
    }

    // One photo, for people: `path  label  probability` (at any probability: this model
    // learned for two epochs, and may be "not sure" of it).
    let photo = data.join("cat/00000.png");
    let output = predict()
        .args(["--not-sure-below", "0"])
        .arg(&photo)
        .succeeds();
    let text = stdout(&output);
    let fields: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "{text}");
    assert_eq!(fields[0], path(&photo));
    // The line says what the JSON says: the most probable class, to two decimals.
    let output = predict().json().arg(&photo).run();
    let json: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(fields[1], json["label"], "{text}");
    let (cat, dog) = (
        json["probabilities"]["cat"].as_f64().unwrap(),
        json["probabilities"]["dog"].as_f64().unwrap(),
    );
    assert_eq!(fields[1], if cat > dog { "cat" } else { "dog" });
    assert_eq!(fields[2], format!("{:.2}", cat.max(dog)), "{text}");

    // Weights that are not numbers give no answer, only an error naming the model.
    let weights_path = weights_file(&model);
    let mut weights = fs::read(&weights_path).unwrap();
    let header = 8 + u64::from_le_bytes(weights[..8].try_into().unwrap()) as usize;
    for value in weights[header..].chunks_exact_mut(4) {
        value.copy_from_slice(&f32::NAN.to_le_bytes());
    }
    fs::write(&weights_path, &weights).unwrap();
    let info_path = model.join("catdog.json");
    let mut info: Value = serde_json::from_slice(&fs::read(&info_path).unwrap()).unwrap();
    info["weights_crc32"] = crc32fast::hash(&weights).into();
    fs::write(&info_path, info.to_string()).unwrap();
    let output = predict()
        .arg(&photo)
        .fails_with("answers NaN (not a number)");
    assert!(
        stderr(&output).contains(path(&model)),
        "{}",
        stderr(&output)
    );
    assert_eq!(stdout(&output), "", "no label for a NaN");
}

/// `--network resnet18` end to end on flex: trained at 32 px (the smallest it takes), saved
/// as a ResNet-18, predicted and evaluated with the network its `catdog.json` names; a resumed
/// run cannot switch networks.
#[test]
fn resnet18_trains_predicts_and_evaluates() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = dir.path().join("model");
    synth(&data, 20, 32);
    let train = || {
        catdog()
            .train()
            .data(&data)
            .out(&model)
            .flex()
            .batch_size(6)
            .epochs(1)
    };
    train()
        .args(["--network", "resnet18"])
        .size(16)
        .fails_with("--image-size must be 32 to 1024 px for ResNet-18, not 16");

    train().args(["--network", "resnet18"]).size(32).succeeds();
    let info: Value =
        serde_json::from_slice(&fs::read(model.join("catdog.json")).unwrap()).unwrap();
    assert_eq!(info["architecture"], "resnet18");
    assert_eq!(info["image_size"], 32);
    // torchvision's names (bench/resnet18_exchange.py loads them into PyTorch).
    let header = weights_header(&model);
    assert!(header.contains("layer4.1.bn2.running_var"), "{header}");

    // The same answers on flex and on ndarray, burn's reference CPU backend.
    let cats = |backend: &str| -> Vec<f64> {
        let output = catdog()
            .predict()
            .model(&model)
            .backend(backend)
            .json()
            .arg(&data)
            .succeeds();
        stdout(&output)
            .lines()
            .map(|line| {
                serde_json::from_str::<Value>(line).unwrap()["probabilities"]["cat"]
                    .as_f64()
                    .unwrap()
            })
            .collect()
    };
    let (flex, ndarray) = (cats("flex"), cats("ndarray"));
    assert_eq!(flex.len(), 20);
    for (f, n) in flex.iter().zip(&ndarray) {
        assert!((f - n).abs() < 1e-3, "flex {flex:?}, ndarray {ndarray:?}");
    }
    let output = catdog().eval().model(&model).data(&data).succeeds();
    let text = stdout(&output) + &stderr(&output);
    assert!(text.contains("20 photos"), "{text}");
    assert!(text.contains("(ResNet-18, trained on "), "{text}");

    train()
        .resume()
        .args(["--network", "small-cnn"])
        .fails_with("--network small-cnn (the run uses resnet18)");
}

/// `network` trained for one epoch, in batches of 4 on flex, on `photos` pictures of `px`
/// px in a folder of its own: what the tests of each network start from.
struct OneEpoch {
    _dir: tempfile::TempDir,
    data: std::path::PathBuf,
    model: std::path::PathBuf,
    px: u32,
}

impl OneEpoch {
    fn of(network: &str, photos: u32, px: u32) -> OneEpoch {
        let dir = tempfile::tempdir().unwrap();
        let run = OneEpoch {
            data: dir.path().join("data"),
            model: dir.path().join("model"),
            _dir: dir,
            px,
        };
        synth(&run.data, photos, px);
        run.train().args(["--network", network]).succeeds();
        run
    }

    /// The command that trained it, to add to.
    fn train(&self) -> crate::common::Catdog {
        train_one_epoch(&self.data, &self.model, self.px).batch_size(4)
    }

    fn info(&self) -> Value {
        serde_json::from_slice(&fs::read(self.model.join("catdog.json")).unwrap()).unwrap()
    }

    /// How many photos `predict --json` answers, and the model line `eval` prints.
    fn predictions_and_eval(&self) -> (usize, String) {
        let output = catdog()
            .predict()
            .model(&self.model)
            .json()
            .arg(&self.data)
            .succeeds();
        let answers = stdout(&output).lines().count();
        let output = catdog()
            .eval()
            .model(&self.model)
            .data(&self.data)
            .succeeds();
        (answers, stdout(&output) + &stderr(&output))
    }
}

/// The wide SmallCnn, for accuracy: trained, saved with its wider shapes, named where it
/// predicts, and recorded as the run's network for `--resume`.
#[test]
fn the_wide_small_cnn_trains_predicts_and_is_named() {
    let run = OneEpoch::of("small-cnn-wide", 12, 16);
    assert_eq!(run.info()["architecture"], "small-cnn-wide");
    let header = weights_header(&run.model);
    assert!(header.contains("\"shape\":[256,2]"), "{header}");
    let (answers, text) = run.predictions_and_eval();
    assert_eq!(answers, 12);
    assert!(text.contains("(wide SmallCnn, trained on "), "{text}");
    run.train()
        .resume()
        .args(["--network", "small-cnn"])
        .fails_with("--network small-cnn (the run uses small-cnn-wide)");
}

/// EfficientNet-Lite0 starts from ImageNet's weights unless told otherwise: a few steps at
/// 32 px, saved with the PyTorch port's names, the pixels scaled as those weights expect,
/// the settings recorded for `--resume` and in catdog.json; and `--pretrained` for a network
/// catdog has no weights for is refused before any work.
#[test]
fn efficientnet_lite0_starts_from_imagenets_weights() {
    let run = OneEpoch::of("efficientnet-lite0", 12, 32);
    let info = run.info();
    assert_eq!(info["architecture"], "efficientnet-lite0");
    assert_eq!(info["settings"]["pretrained"], true);
    assert_eq!(info["settings"]["backbone_rate"], 0.1);
    assert_eq!(info["settings"]["hold_batch_norm"], false);
    assert_eq!(info["normalization"]["mean"][0], 0.5);
    let header = weights_header(&run.model);
    assert!(
        header.contains("\"_blocks.15._depthwise_conv.weight\"")
            && header.contains("\"_fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,1280]"),
        "{header}"
    );
    let (answers, text) = run.predictions_and_eval();
    assert_eq!(answers, 12);
    assert!(text.contains("(EfficientNet-Lite0, trained on "), "{text}");
    run.train()
        .resume()
        .args(["--pretrained", "false"])
        .fails_with("--pretrained false (the run uses true)");
    run.train()
        .resume()
        .args(["--backbone-rate", "0"])
        .fails_with("--backbone-rate 0 (the run uses 0.1)");

    catdog()
        .train()
        .data(&run.data)
        .out(run.model.with_extension("other"))
        .flex()
        .args(["--pretrained"])
        .fails_with("--pretrained: catdog has ImageNet weights for efficientnet-lite0 only");
}

/// `--epochs 0` fits EfficientNet-Lite0's new last layer alone, in one pass: said so in the
/// summary, recorded as no epochs, and the model answers like any other. It writes no
/// checkpoint, and takes away the one (and the curves) an earlier run left in the folder, so
/// that `--resume` does not take that run for this one. A flag that only training steps would
/// use is refused with it. A run of epochs on so few photos points at it.
#[test]
fn efficientnet_lite0_with_no_epochs_fits_its_last_layer_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (data, model) = (dir.path().join("data"), dir.path().join("model"));
    synth(&data, 12, 32);
    let output = train_one_epoch(&data, &model, 32)
        .batch_size(4)
        .args(["--network", "efficientnet-lite0"])
        .succeeds();
    let advice = stderr(&output);
    assert!(
        advice.contains("training photos a class at most: with this few, `--epochs 0`"),
        "{advice}"
    );
    assert!(model.join("checkpoint").is_dir() && model.join("curves.svg").is_file());
    let alone = || {
        catdog()
            .train()
            .data(&data)
            .flex()
            .epochs(0)
            .size(32)
            .out(&model)
            .args(["--network", "efficientnet-lite0"])
    };
    let output = alone().succeeds();
    let text = stderr(&output) + &stdout(&output);
    assert!(
        text.contains("last layer fitted: train loss")
            && text.contains(" photos of cat and dog from ")
            && text.contains("Fitted the last layer to ")
            && text.contains("no training epochs")
            && text.contains("The rest of the network is ImageNet's, unchanged; validation"),
        "{text}"
    );
    let info: Value =
        serde_json::from_slice(&fs::read(model.join("catdog.json")).unwrap()).unwrap();
    assert_eq!(info["epochs"], 0);
    assert_eq!(info["settings"]["epochs"], 0);
    assert!(!model.join("checkpoint").exists() && !model.join("curves.svg").exists());
    catdog()
        .train()
        .resume()
        .out(&model)
        .fails_with("(a run of --epochs 0 writes none)");
    let output = catdog()
        .predict()
        .model(&model)
        .json()
        .arg(&data)
        .succeeds();
    assert_eq!(stdout(&output).lines().count(), 12);
    alone()
        .args(["--augment"])
        .fails_with("--augment shapes training steps, and --epochs 0 takes none");
}

#[test]
fn train_without_data_uses_the_generated_pictures() {
    let dir = tempfile::tempdir().unwrap();
    // The speed demo as the README runs it, with no --out (and short flags).
    let output = catdog()
        .train()
        .args(["-b", "flex", "-e", "1"])
        .size(16)
        .current_dir(dir.path())
        .succeeds();
    assert!(
        stderr(&output).contains("No --data given"),
        "{}",
        stderr(&output)
    );
    let summary = stdout(&output);
    assert!(
        summary.contains("photos/s") && summary.contains("flex"),
        "{summary}"
    );
    assert!(
        summary.contains("10 epochs over the 25,000 photos of the Kaggle set would take")
            && summary.contains("at the article's rates, 6 h 56 min on a CPU and 4 min on a GPU"),
        "the speed as a waiting time, beside the article's rates for the same job:\n{summary}"
    );
    assert!(
        summary.contains("catdog download oxford-pets")
            && summary.contains("catdog predict --model builtin"),
        "the demo's last lines point at real photos:\n{summary}"
    );
    // The demo's model goes to models/demo, not to models/catdog, which predict would use.
    let demo = dir.path().join("models/demo");
    assert!(demo.join("catdog.json").is_file());
    assert!(!dir.path().join("models/catdog").exists());
    assert!(
        summary.contains("Model saved in models/demo")
            && summary.contains("`catdog predict PHOTO` still answers with the built-in model"),
        "{summary}"
    );

    catdog()
        .train()
        .data(&demo)
        .generated(100)
        .fails_with("cannot be used with");

    let photos = dir.path().join("drawn");
    synth(&photos, 2, 16);
    let (cats, dogs) = (photos.join("cat"), photos.join("dog"));
    let predict_in = |cwd: &Path, extra: &[&str]| {
        catdog()
            .predict()
            .flex()
            .args(extra)
            .args([&cats, &dogs])
            .current_dir(cwd)
            .succeeds()
    };
    // After the speed demo, predict without --model still answers with a model that knows
    // photos, and says which.
    let output = predict_in(dir.path(), &["--json"]);
    let err = stderr(&output);
    assert!(
        err.starts_with("model: built-in, trained on 17,998 Kaggle photos"),
        "{err}"
    );
    assert!(!err.contains("generated"), "{err}");
    for line in stdout(&output).lines() {
        let json: Value = serde_json::from_str(line).unwrap();
        assert_eq!(json["model"], "builtin", "{line}");
    }
    assert!(
        err.contains("predicted 2 photos in") && err.contains("photos/s"),
        "{err}"
    );

    // Asked for by name, the demo's model answers, names itself and says once that it
    // learned drawings.
    let output = predict_in(dir.path(), &["-m", "models/demo"]);
    let err = stderr(&output);
    assert!(
        err.starts_with("model: models/demo (trained on generated pictures"),
        "{err}"
    );
    assert_eq!(
        err.matches("learned from generated drawings").count(),
        1,
        "{err}"
    );
    assert!(err.contains("--model builtin"), "{err}");
    assert_eq!(stdout(&output).lines().count(), 2);

    // A model of photos in models/catdog is the default one; `--model builtin` names the
    // built-in one wherever a trained model is.
    copy_folder(&demo, &dir.path().join("models/catdog"));
    let output = predict_in(dir.path(), &[]);
    assert!(stderr(&output).starts_with("model: models/catdog"));
    let output = predict_in(dir.path(), &["--model", "builtin"]);
    assert!(stderr(&output).starts_with("model: built-in"));

    // `--resume` without --out finds the run where it is: here there is none to continue.
    catdog()
        .train()
        .resume()
        .current_dir(dir.path())
        .fails_with("no checkpoint to resume in models/catdog");
}

/// A photo folder that is missing, holds no photos or only one class, and a model folder
/// that is missing: each a clear error.
#[test]
fn bad_data_folders_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let train = |data: &Path| {
        catdog()
            .train()
            .data(data)
            .flex()
            .out(dir.path().join("model"))
            .run()
    };

    let missing = dir.path().join("missing");
    assert_fails_with(&train(&missing), "does not exist");

    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    fs::write(empty.join("notes.txt"), "no photos here").unwrap();
    assert_fails_with(&train(&empty), "no photos found");

    let one_class = dir.path().join("one-class");
    synth(&one_class, 4, 16);
    fs::remove_dir_all(one_class.join("dog")).unwrap();
    assert_fails_with(&train(&one_class), "only one class ('cat')");

    catdog()
        .predict()
        .model(&missing)
        .arg("x.jpg")
        .fails_with("model folder");
}

/// Settings outside what a run can use are refused, with the range or the choices.
#[test]
fn settings_out_of_range_are_clear_errors() {
    catdog()
        .train()
        .args(["--epochs", "0"])
        .fails_with("--epochs 0 fits only the new last layer of a network started from ImageNet's");
    catdog()
        .train()
        .args(["--generated", "4000000000"])
        .fails_with("4000000000 is not in 20..=200000");
    catdog()
        .train()
        .args(["--dropout", "1"])
        .fails_with("--dropout must be at least 0 and below 1, not 1");
    catdog()
        .train()
        .arg("--label-smoothing=-0.1")
        .fails_with("--label-smoothing must be at least 0 and below 1, not -0.1");
    catdog()
        .train()
        .backend("tpu")
        .fails_with("invalid value 'tpu'");
}

/// `--precision f16` and flex32 are refused on the CPU backends, before anything is written.
#[test]
fn precisions_a_run_cannot_use_are_refused_first() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    let train = |precision: &str| {
        catdog()
            .train()
            .backend("cpu")
            .precision(precision)
            .out(&out)
            .run()
    };
    assert_fails_with(&train("f16"), "--precision f16 needs the GPU");
    assert_fails_with(&train("flex32"), "--precision flex32 needs the GPU");
    assert!(!out.exists());
    catdog()
        .predict()
        .backend("cpu")
        .precision("f16")
        .model(&out)
        .arg("x.jpg")
        .fails_with("--precision f16 needs the GPU");
}

#[test]
fn real_photos_train_and_predict() {
    let Some(photos) = real_photos_or_skip("real_photos_train_and_predict") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = catdog()
        .train()
        .data(&photos)
        .flex()
        .epochs(1)
        .size(32)
        .out(dir.path())
        .json()
        .succeeds();
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["classes"], serde_json::json!(["cat", "dog"]));
    assert!(report["train_images"].as_u64().unwrap() > 1500);

    let photo = photos.join("dog.7.jpg");
    let output = catdog()
        .predict()
        .model(dir.path())
        .flex()
        .json()
        .arg(&photo)
        .succeeds();
    let prediction: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert!(["cat", "dog"].contains(&prediction["label"].as_str().unwrap()));
}

#[test]
fn a_diverging_loss_stops_training_and_leaves_the_folder_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    let out_arg = out.display().to_string();
    let train = |lr: &str| {
        catdog()
            .train()
            .flex()
            .generated(100)
            .size(16)
            .epochs(1)
            .args(["--lr", lr])
            .out(&out)
            .run()
    };
    assert_success(&train("0.001"));
    let (model, checkpoint) = (
        weights(&out),
        fs::read(out.join("checkpoint/state.json")).unwrap(),
    );

    let output = train("1e30");
    assert_fails_with(&output, "try a lower --lr");
    assert_fails_with(
        &output,
        &format!("the last checkpoint is kept in {out_arg}"),
    );
    assert!(weights(&out) == model, "the earlier model is untouched");
    assert!(
        fs::read(out.join("checkpoint/state.json")).unwrap() == checkpoint,
        "and so is its checkpoint"
    );
}
