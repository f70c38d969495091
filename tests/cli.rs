//! The `catdog` binary end to end, as a user runs it.

mod common;

use common::{assert_fails_with, assert_success, catdog, command, stderr, stdout};

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `catdog synth`: `count` generated pictures of `size` px in `cat/` and `dog/` under `out`.
fn synth(out: &Path, count: u32, size: u32) {
    assert_success(&catdog(&[
        "synth",
        "--out",
        path(out),
        "--count",
        &count.to_string(),
        "--size",
        &size.to_string(),
    ]));
}

/// `catdog train` of `data` into `model` for one epoch on flex at `size` px, with `extra`
/// flags; it must succeed.
fn train_one_epoch(data: &Path, model: &Path, size: &str, extra: &[&str]) {
    let mut args = vec![
        "train",
        "--data",
        path(data),
        "--backend",
        "flex",
        "--epochs",
        "1",
    ];
    args.extend(["--image-size", size, "--out", path(model)]);
    args.extend(extra);
    assert_success(&catdog(&args));
}

#[test]
fn synth_then_train_then_predict_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = dir.path().join("model");
    synth(&data, 80, 32);
    assert_eq!(fs::read_dir(data.join("cat")).unwrap().count(), 40);

    let output = catdog(&[
        "train",
        "--data",
        path(&data),
        "--backend",
        "flex",
        "--epochs",
        "2",
        "--image-size",
        "32",
        "--batch-size",
        "16",
        "--out",
        path(&model),
        "--json",
    ]);
    assert_success(&output);
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
    assert!(common::weights_file(&model).is_file());
    let curves = fs::read_to_string(model.join("curves.svg")).unwrap();
    assert!(curves.starts_with("<svg") && curves.trim_end().ends_with("</svg>"));
    assert!(curves.contains("Accuracy") && curves.contains("validation"));

    let predict = |extra: &[&str]| {
        let mut args = vec!["predict", "--model", path(&model), "--backend", "flex"];
        args.extend(extra);
        catdog(&args)
    };

    // A whole folder, as JSON lines.
    let output = predict(&["--json", path(&data.join("dog"))]);
    assert_success(&output);
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
    let output = predict(&["--not-sure-below", "0", path(&photo)]);
    assert_success(&output);
    let text = stdout(&output);
    let fields: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "{text}");
    assert_eq!(fields[0], path(&photo));
    // The line says what the JSON says: the most probable class, to two decimals.
    let output = predict(&["--json", path(&photo)]);
    let json: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(fields[1], json["label"], "{text}");
    let (cat, dog) = (
        json["probabilities"]["cat"].as_f64().unwrap(),
        json["probabilities"]["dog"].as_f64().unwrap(),
    );
    assert_eq!(fields[1], if cat > dog { "cat" } else { "dog" });
    assert_eq!(fields[2], format!("{:.2}", cat.max(dog)), "{text}");

    // Weights that are not numbers give no answer, only an error naming the model.
    let weights_path = common::weights_file(&model);
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
    let output = predict(&[path(&photo)]);
    assert_fails_with(&output, "answers NaN (not a number)");
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
    let train = |extra: &[&str]| {
        let mut args = vec!["train", "--data", path(&data), "--out", path(&model)];
        args.extend_from_slice(&["--backend", "flex", "--batch-size", "6", "--epochs", "1"]);
        args.extend(extra);
        catdog(&args)
    };
    let output = train(&["--network", "resnet18", "--image-size", "16"]);
    assert_fails_with(
        &output,
        "--image-size must be 32 to 1024 px for ResNet-18, not 16",
    );

    assert_success(&train(&["--network", "resnet18", "--image-size", "32"]));
    let info: Value =
        serde_json::from_slice(&fs::read(model.join("catdog.json")).unwrap()).unwrap();
    assert_eq!(info["architecture"], "resnet18");
    assert_eq!(info["image_size"], 32);
    // torchvision's names (bench/resnet18_exchange.py loads them into PyTorch).
    let header = common::weights_header(&model);
    assert!(header.contains("layer4.1.bn2.running_var"), "{header}");

    // The same answers on flex and on ndarray, burn's reference CPU backend.
    let cats = |backend: &str| -> Vec<f64> {
        let output = catdog(&[
            "predict",
            "--model",
            path(&model),
            "--backend",
            backend,
            "--json",
            path(&data),
        ]);
        assert_success(&output);
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
    let output = catdog(&["eval", "--model", path(&model), "--data", path(&data)]);
    assert_success(&output);
    let text = stdout(&output) + &stderr(&output);
    assert!(text.contains("20 photos"), "{text}");
    assert!(text.contains("(ResNet-18, trained on "), "{text}");

    let output = train(&["--resume", "--network", "small-cnn"]);
    assert_fails_with(&output, "--network small-cnn (the run uses resnet18)");
}

/// The wide SmallCnn, for accuracy: trained, saved with its wider shapes, named where it
/// predicts, and recorded as the run's network for `--resume`.
#[test]
fn the_wide_small_cnn_trains_predicts_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = dir.path().join("model");
    synth(&data, 12, 16);
    let train = |extra: &[&str]| {
        let mut args = vec!["train", "--data", path(&data), "--out", path(&model)];
        args.extend_from_slice(&["--backend", "flex", "--batch-size", "4"]);
        args.extend_from_slice(&["--image-size", "16", "--epochs", "1"]);
        args.extend(extra);
        catdog(&args)
    };
    assert_success(&train(&["--network", "small-cnn-wide"]));
    let info: Value =
        serde_json::from_slice(&fs::read(model.join("catdog.json")).unwrap()).unwrap();
    assert_eq!(info["architecture"], "small-cnn-wide");
    assert!(
        common::weights_header(&model).contains("\"shape\":[256,2]"),
        "{}",
        common::weights_header(&model)
    );
    let output = catdog(&["predict", "--model", path(&model), "--json", path(&data)]);
    assert_success(&output);
    assert_eq!(stdout(&output).lines().count(), 12);
    let output = catdog(&["eval", "--model", path(&model), "--data", path(&data)]);
    assert_success(&output);
    let text = stdout(&output) + &stderr(&output);
    assert!(text.contains("(wide SmallCnn, trained on "), "{text}");
    let output = train(&["--resume", "--network", "small-cnn"]);
    assert_fails_with(&output, "--network small-cnn (the run uses small-cnn-wide)");
}

#[test]
fn train_without_data_uses_the_generated_pictures() {
    let dir = tempfile::tempdir().unwrap();
    // The speed demo as the README runs it, with no --out (and short flags).
    let output = command()
        .args(["train", "-b", "flex", "-e", "1", "--image-size", "16"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_success(&output);
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

    assert_fails_with(
        &catdog(&["train", "--data", path(&demo), "--generated", "100"]),
        "cannot be used with",
    );

    let photos = dir.path().join("drawn");
    synth(&photos, 2, 16);
    let (cats, dogs) = (photos.join("cat"), photos.join("dog"));
    let predict_in = |cwd: &Path, extra: &[&str]| {
        let mut args = vec!["predict", "--backend", "flex"];
        args.extend(extra);
        args.extend([path(&cats), path(&dogs)]);
        let output = command().args(&args).current_dir(cwd).output().unwrap();
        assert_success(&output);
        output
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
    let output = command()
        .args(["train", "--resume"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_fails_with(&output, "no checkpoint to resume in models/catdog");
}

/// Copies the files of the folder `from` into a new folder `to`.
fn copy_folder(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

#[test]
fn catdog_alone_shows_the_help() {
    let output = catdog(&[]);
    let text = format!("{}{}", stdout(&output), stderr(&output));
    assert!(
        text.contains("Usage: catdog") && text.contains("Commands:") && text.contains("Examples:"),
        "{text}"
    );
    assert!(!text.contains("error:"), "{text}");
}

/// The model compiled into catdog knows real photos: the 2,002 Kaggle originals it never
/// trained on (models/README.md: 95.4 %; the previous built-in model, 94.5 %, failed this).
#[test]
fn the_builtin_model_tells_real_cats_from_dogs() {
    let Some(photos) = common::real_photos_or_skip("the_builtin_model_tells_real_cats_from_dogs")
    else {
        return;
    };
    let output = catdog(&[
        "eval",
        "--model",
        "builtin",
        "--backend",
        "flex",
        "--data",
        path(&photos),
        "--json",
    ]);
    assert_success(&output);
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["model"], "builtin");
    assert!(
        report["infer_images_per_sec"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert!(report["photos"].as_u64().unwrap() > 2000, "{report}");
    let accuracy = report["accuracy"].as_f64().unwrap();
    assert!(
        accuracy > 0.95,
        "built-in model: {accuracy} on {}",
        photos.display()
    );
}

/// On a machine without a desktop session, looking for a GPU prints no driver noise that
/// reads like catdog's own errors.
#[test]
fn looking_for_a_gpu_without_a_desktop_session_prints_no_driver_noise() {
    let output = command()
        .arg("devices")
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    assert_success(&output);
    let err = stderr(&output);
    assert!(!err.contains("XDG_RUNTIME_DIR"), "{err}");
}

#[test]
fn bad_data_folders_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let train = |data: &Path| {
        catdog(&[
            "train",
            "--data",
            path(data),
            "--backend",
            "flex",
            "--out",
            path(&dir.path().join("model")),
        ])
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

    assert_fails_with(&catdog(&["train", "--epochs", "0"]), "0 is not in 1..");
    assert_fails_with(
        &catdog(&["train", "--generated", "4000000000"]),
        "4000000000 is not in 20..=200000",
    );
    assert_fails_with(
        &catdog(&["train", "--dropout", "1"]),
        "--dropout must be at least 0 and below 1, not 1",
    );
    assert_fails_with(
        &catdog(&["train", "--label-smoothing=-0.1"]),
        "--label-smoothing must be at least 0 and below 1, not -0.1",
    );
    assert_fails_with(
        &catdog(&["train", "--backend", "tpu"]),
        "invalid value 'tpu'",
    );
    assert_fails_with(
        &catdog(&["predict", "--model", path(&missing), "x.jpg"]),
        "model folder",
    );
}

#[test]
fn backend_gpu_without_a_gpu_suggests_the_cpu() {
    if let Some(gpu) = catdog::device::hardware_gpu() {
        eprintln!(
            "SKIPPED backend_gpu_without_a_gpu_suggests_the_cpu: this machine has {}",
            gpu.describe()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let output = catdog(&["train", "--backend", "gpu", "--out", path(dir.path())]);
    assert_fails_with(&output, "--backend cpu");
    assert!(stderr(&output).contains("no hardware GPU") || stderr(&output).contains("no GPU"));
    // The verb fits every command, not only training.
    let predict = catdog(&["predict", "--backend", "gpu", "--samples"]);
    assert_fails_with(&predict, "Use --backend cpu to run on the CPU");
    assert!(
        !stderr(&predict).contains("to train"),
        "{}",
        stderr(&predict)
    );
}

/// The Vulkan loader pointed at a driver file that does not exist: `catdog devices` and
/// `--backend gpu` name the variable and say what to do, instead of only "no GPU".
#[test]
#[cfg(target_os = "linux")]
fn a_vulkan_loader_pointed_at_nothing_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("no-such-icd.json");
    let variable = format!("VK_ICD_FILENAMES={}", nowhere.display());
    let run = |args: &[&str]| {
        common::command()
            .args(args)
            .env("VK_ICD_FILENAMES", &nowhere)
            .env_remove("VK_DRIVER_FILES")
            .output()
            .unwrap()
    };
    let devices: serde_json::Value =
        serde_json::from_slice(&run(&["devices", "--json"]).stdout).unwrap();
    if devices["hardware_gpu"] == true {
        eprintln!("SKIPPED a_vulkan_loader_pointed_at_nothing_is_named: a GPU outside Vulkan");
        return;
    }
    let reason = devices["auto"]["reason"].as_str().unwrap();
    assert!(reason.contains(&variable), "{reason}");
    assert!(reason.contains("does not exist"), "{reason}");
    let out = dir.path().join("model");
    let train = run(&["train", "--backend", "gpu", "--out", path(&out)]);
    assert_fails_with(&train, &variable);
    assert_fails_with(&train, "unset VK_ICD_FILENAMES");
    assert!(!out.exists());
}

/// `--precision f16` and flex32 are refused on the CPU backends, before anything is written.
#[test]
fn precisions_a_run_cannot_use_are_refused_first() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    let train = |precision: &str| {
        catdog(&[
            "train",
            "--backend",
            "cpu",
            "--precision",
            precision,
            "--out",
            path(&out),
        ])
    };
    assert_fails_with(&train("f16"), "--precision f16 needs the GPU");
    assert_fails_with(&train("flex32"), "--precision flex32 needs the GPU");
    assert!(!out.exists());
    let predict = catdog(&[
        "predict",
        "--backend",
        "cpu",
        "--precision",
        "f16",
        "--model",
        path(&out),
        "x.jpg",
    ]);
    assert_fails_with(&predict, "--precision f16 needs the GPU");
}

#[test]
fn predict_reports_a_bad_photo_and_still_predicts_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = dir.path().join("model");
    synth(&data, 20, 16);
    train_one_epoch(&data, &model, "16", &[]);
    let bad = dir.path().join("broken.jpg");
    fs::write(&bad, "not a photo").unwrap();
    let good = data.join("dog/00001.png");
    // `catdog predict` of `photos` with the model on flex.
    let predict = |photos: &[&Path]| {
        let mut args = vec!["predict", "--model", path(&model), "--backend", "flex"];
        args.extend(photos.iter().map(|p| path(p)));
        catdog(&args)
    };

    let output = predict(&[&bad, &good]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).starts_with(path(&good)),
        "{}",
        stdout(&output)
    );
    assert!(stderr(&output).contains(path(&bad)), "{}", stderr(&output));
    assert!(!stderr(&output).contains("panicked"));

    // The speed counts the photos answered; an empty file is called empty; a photo that is
    // not there is named.
    let empty = dir.path().join("empty.jpg");
    fs::write(&empty, b"").unwrap();
    let missing = dir.path().join("missing.jpg");
    let other = data.join("cat/00001.png");
    let output = predict(&[&bad, &empty, &missing, &good, &other]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("empty.jpg is empty (0 bytes)"), "{err}");
    assert!(err.contains(path(&missing)), "{err}");
    assert!(err.contains("predicted 2 photos in"), "{err}");
    assert!(
        err.contains("3 of 5 photos could not be predicted"),
        "{err}"
    );
    // None answered: no speed at all.
    let output = predict(&[&missing, &empty]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        !err.contains("predicted 2 photos") && !err.contains("photos/s"),
        "{err}"
    );
    assert!(
        err.contains("2 of 2 photos could not be predicted"),
        "{err}"
    );
}

/// What a new user's first runs print: counts that count, which model answers after
/// training and how to go back, nothing resumed twice, and hints for the usual slips.
#[test]
fn a_new_users_first_runs_get_plain_answers() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let photos = home.join("mypets");
    synth(&photos, 20, 16);
    let run = |args: &[&str]| command().args(args).current_dir(home).output().unwrap();
    let trained = run(&[
        "train",
        "--data",
        "mypets",
        "-b",
        "flex",
        "-e",
        "1",
        "--image-size",
        "16",
    ]);
    assert_success(&trained);
    let summary = stdout(&trained);
    assert!(summary.contains(", 1 epoch, backend flex"), "{summary}");
    assert!(
        summary.contains("too little to tell how long a real job would take")
            && !summary.contains("photos of the Kaggle set"),
        "no job's length extrapolated from 18 photos:\n{summary}"
    );
    assert!(
        summary.contains("now answer with this model (models/catdog)")
            && summary.contains("`--model builtin` asks the built-in one"),
        "{summary}"
    );
    assert!(
        !photos.join(".catdog-cache").exists(),
        "nothing among the photos"
    );

    // A finished run is not resumed, and its model is left as it was.
    let info = home.join("models/catdog/catdog.json");
    let before = fs::read(&info).unwrap();
    let resumed = run(&["train", "--resume"]);
    assert_success(&resumed);
    assert!(
        stderr(&resumed).contains("already finished (its one epoch done)")
            && stderr(&resumed).contains("nothing to resume"),
        "{}",
        stderr(&resumed)
    );
    assert_eq!(fs::read(&info).unwrap(), before);
    // A checkpoint newer than the model (a later run in the folder, stopped before it saved
    // its model): that run resumes, and saves its own.
    let state = home.join("models/catdog/checkpoint/state.json");
    fs::File::options()
        .write(true)
        .open(&state)
        .unwrap()
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        .unwrap();
    let resumed = run(&["train", "--resume"]);
    assert_success(&resumed);
    assert!(
        stderr(&resumed).contains("resuming the run in models/catdog"),
        "{}",
        stderr(&resumed)
    );

    // `--model catdog` where models/catdog holds the model.
    assert_fails_with(
        &run(&["predict", "--model", "catdog", "x.jpg"]),
        "did you mean `--model models/catdog`?",
    );

    // Plural and capitalised folders are the model's classes; eval needs no two photos of
    // a class.
    let named = home.join("named");
    fs::create_dir_all(named.join("Cats")).unwrap();
    fs::create_dir_all(named.join("Dogs")).unwrap();
    fs::copy(photos.join("cat/00001.png"), named.join("Cats/a.png")).unwrap();
    fs::copy(photos.join("cat/00002.png"), named.join("Cats/b.png")).unwrap();
    fs::copy(photos.join("dog/00001.png"), named.join("Dogs/a.png")).unwrap();
    let evaluated = run(&["eval", "--data", "named", "-b", "flex"]);
    assert_success(&evaluated);
    assert!(
        stdout(&evaluated).contains("3 photos"),
        "{}",
        stdout(&evaluated)
    );
    fs::rename(named.join("Dogs"), named.join("Rex")).unwrap();
    assert_fails_with(
        &run(&["eval", "--data", "named", "-b", "flex"]),
        "named as it names them",
    );

    // `catdog help` takes --help, and a command's name.
    assert_success(&run(&["help", "--help"]));
    assert_eq!(
        stdout(&run(&["help", "train"])),
        stdout(&run(&["train", "--help"]))
    );
    assert_fails_with(&run(&["help", "trian"]), "catdog has no command 'trian'");
}

/// `catdog … | head -1`: a reader that leaves ends catdog as it ends other tools (SIGPIPE),
/// not with a panic's exit code 101.
#[test]
fn a_closed_pipe_ends_catdog_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = command()
        .args(["predict", "--samples", "--backend", "flex"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.signal(),
        Some(13),
        "{:?}: {}",
        output.status,
        stderr(&output)
    );
    assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
}

#[test]
fn real_photos_train_and_predict() {
    let Some(photos) = common::real_photos_or_skip("real_photos_train_and_predict") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = catdog(&[
        "train",
        "--data",
        path(&photos),
        "--backend",
        "flex",
        "--epochs",
        "1",
        "--image-size",
        "32",
        "--out",
        path(dir.path()),
        "--json",
    ]);
    assert_success(&output);
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["classes"], serde_json::json!(["cat", "dog"]));
    assert!(report["train_images"].as_u64().unwrap() > 1500);

    let photo = photos.join("dog.7.jpg");
    let output = catdog(&[
        "predict",
        "--model",
        path(dir.path()),
        "--backend",
        "flex",
        "--json",
        path(&photo),
    ]);
    assert_success(&output);
    let prediction: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert!(["cat", "dog"].contains(&prediction["label"].as_str().unwrap()));
}

#[test]
fn decoded_photos_are_cached_once_and_read_back_by_later_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data, 40, 32);
    let train = |data: &Path, out: &str, cache_home: &Path| {
        command()
            .args([
                "train",
                "--data",
                path(data),
                "--backend",
                "flex",
                "--epochs",
                "1",
            ])
            .args(["--image-size", "32", "--batch-size", "8", "--json", "--out"])
            .arg(dir.path().join(out))
            .env("XDG_CACHE_HOME", cache_home)
            .output()
            .unwrap()
    };
    let user_cache = dir.path().join("user-cache");

    let first = train(&data, "first", &user_cache);
    assert_success(&first);
    assert!(
        stderr(&first).contains("Cached the decoded photos in"),
        "{}",
        stderr(&first)
    );
    assert!(
        !data.join(".catdog-cache").exists(),
        "nothing is written among the photos"
    );
    assert!(
        stderr(&first).contains(path(&user_cache.join("catdog"))),
        "the cache is in the user's cache folder, and catdog says so: {}",
        stderr(&first)
    );
    let second = train(&data, "second", &user_cache);
    assert_success(&second);
    assert!(
        stderr(&second).contains("Read the decoded photos from the cache"),
        "{}",
        stderr(&second)
    );
    // Same seed, same pixels: the cached run learns exactly what the decoding run learned.
    let report =
        |output: &Output| -> Value { serde_json::from_str(stdout(output).trim()).unwrap() };
    assert_eq!(report(&first)["train_loss"], report(&second)["train_loss"]);
    assert_eq!(
        report(&first)["val_accuracy"],
        report(&second)["val_accuracy"]
    );

    // A read-only photo folder is left alone: the cache goes to the user's cache folder.
    let read_only = dir.path().join("read-only");
    synth(&read_only, 40, 32);
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o555)).unwrap();
    let third = train(&read_only, "third", &user_cache);
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o755)).unwrap();
    assert_success(&third);
    assert!(!read_only.join(".catdog-cache").exists());
    assert!(
        stderr(&third).contains(path(&user_cache.join("catdog"))),
        "{}",
        stderr(&third)
    );

    // A user cache folder that cannot be written: the photo folder's `.catdog-cache` instead
    // of decoding at every run.
    let not_a_folder = dir.path().join("cache-is-a-file");
    fs::write(&not_a_folder, "").unwrap();
    let fourth = train(&data, "fourth", &not_a_folder);
    assert_success(&fourth);
    assert!(
        stderr(&fourth).contains(path(&data.join(".catdog-cache"))),
        "{}",
        stderr(&fourth)
    );
}

/// `catdog eval --model MODEL --data DATA --backend flex EXTRA…`
fn eval(model: &Path, data: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "eval",
        "--model",
        path(model),
        "--data",
        path(data),
        "--backend",
        "flex",
    ];
    args.extend(extra);
    catdog(&args)
}

#[test]
fn eval_counts_what_predict_says_and_lists_the_mistakes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = dir.path().join("model");
    synth(&data, 60, 32);
    train_one_epoch(&data, &model, "32", &["--batch-size", "8"]);

    let output = eval(&model, &data, &["--worst", "3", "--json"]);
    assert_success(&output);
    let evaluation: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON object");

    // The same photos counted here from `catdog predict`'s answers.
    let output = catdog(&[
        "predict",
        "--model",
        path(&model),
        "--backend",
        "flex",
        "--json",
        path(&data),
    ]);
    assert_success(&output);
    let mut counted = [[0u64; 2]; 2];
    // Each answer's probability and whether it was right, to bin them as eval does.
    let mut answers = Vec::new();
    for line in stdout(&output).lines() {
        let prediction: Value = serde_json::from_str(line).unwrap();
        let truth = usize::from(prediction["path"].as_str().unwrap().contains("/dog/"));
        let predicted = usize::from(prediction["label"] == "dog");
        counted[truth][predicted] += 1;
        let probability = prediction["probability"].as_f64().unwrap();
        answers.push((probability, truth == predicted));
        // Below 0.8 the answer is "not sure"; the label stays the most probable class.
        let sure = probability >= 0.8;
        assert_eq!(prediction["sure"], sure, "{line}");
        let answer: Value = match sure {
            true => prediction["label"].clone(),
            false => "not sure".into(),
        };
        assert_eq!(prediction["answer"], answer, "{line}");
    }
    let matrix: Vec<Vec<u64>> =
        serde_json::from_value(evaluation["confusion_matrix"].clone()).unwrap();
    assert_eq!(matrix, counted.map(Vec::from).to_vec());
    assert_eq!(matrix.iter().flatten().sum::<u64>(), 60);
    assert_eq!(evaluation["photos"], 60);
    let correct = (counted[0][0] + counted[1][1]) as f64;
    assert_eq!(evaluation["accuracy"].as_f64().unwrap(), correct / 60.0);
    let recall_of_cats = evaluation["per_class"][0]["recall"].as_f64().unwrap();
    assert_eq!(recall_of_cats, counted[0][0] as f64 / 30.0);

    // Training fitted a temperature on its 6 validation photos; eval and predict apply it,
    // so the calibration error eval reports is the one predict's probabilities give.
    let info: Value =
        serde_json::from_str(&fs::read_to_string(model.join("catdog.json")).unwrap()).unwrap();
    assert_eq!(info["calibration"]["photos"], 6, "{info}");
    let temperature = info["calibration"]["temperature"].as_f64().unwrap();
    assert!(temperature > 0.0, "{info}");
    assert_eq!(evaluation["temperature"].as_f64().unwrap(), temperature);
    let mut bins = [(0.0f64, 0.0f64, 0u32); 10];
    for &(probability, right) in &answers {
        let bin = &mut bins[((probability * 10.0) as usize).min(9)];
        *bin = (
            bin.0 + probability,
            bin.1 + f64::from(u8::from(right)),
            bin.2 + 1,
        );
    }
    let error: f64 = bins
        .iter()
        .filter(|b| b.2 > 0)
        .map(|(confidence, right, _)| (confidence - right).abs() / 60.0)
        .sum();
    let reported = evaluation["reliability"]["error"].as_f64().unwrap();
    assert!((reported - error).abs() < 1e-4, "{reported} vs {error}");
    let unsure = answers.iter().filter(|a| a.0 < 0.8).count();
    assert_eq!(evaluation["not_sure"]["photos"], unsure);
    let sure_and_wrong = answers.iter().filter(|a| a.0 >= 0.95 && !a.1).count();
    assert_eq!(evaluation["wrong_and_sure"], sure_and_wrong);

    let wrong = evaluation["most_confidently_wrong"].as_array().unwrap();
    assert_eq!(wrong.len(), (60 - correct as usize).min(3));
    for pair in wrong.windows(2) {
        assert!(pair[0]["probability"].as_f64() >= pair[1]["probability"].as_f64());
    }
    for mistake in wrong {
        assert_ne!(mistake["label"], mistake["predicted"]);
        assert!(
            mistake["path"]
                .as_str()
                .unwrap()
                .contains(&format!("/{}/", mistake["label"].as_str().unwrap()))
        );
    }

    let sheet = dir.path().join("mistakes.png");
    let diagram = dir.path().join("calibration.svg");
    let output = eval(
        &model,
        &data,
        &["--mistakes", path(&sheet), "--calibration", path(&diagram)],
    );
    assert_success(&output);
    let text = stdout(&output);
    assert!(
        text.contains("\ncalibration error ")
            && text.contains(&format!("temperature {temperature:.2} fitted in training"))
            && text.contains(&format!("\"not sure\" (below 0.80): {unsure} photos")),
        "{text}"
    );
    let svg = fs::read_to_string(&diagram).unwrap();
    assert!(svg.contains("60 photos: calibration error"), "{svg}");
    let model_line = format!("model: {} (trained on {}", path(&model), path(&data));
    assert!(text.starts_with(&model_line), "{text}");
    assert!(text.contains("\naccuracy "), "{text}");
    assert!(
        text.contains("photos/s (decoded photos to probabilities)"),
        "{text}"
    );
    assert!(text.contains("confusion matrix"), "{text}");
    let picture = image::open(&sheet).expect("the contact sheet is a PNG");
    assert!(picture.width() >= 160 && picture.height() >= 160);

    // The photos training held out: the same ones, so the same accuracy as training measured.
    let output = eval(&model, &data, &["--held-out", "--json"]);
    assert_success(&output);
    let held_out: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    let info: Value =
        serde_json::from_str(&fs::read_to_string(model.join("catdog.json")).unwrap()).unwrap();
    assert_eq!(held_out["photos"], 6, "10 % of 60");
    assert_eq!(held_out["accuracy"], info["val_accuracy"]);
    assert_eq!(
        held_out["subset"],
        serde_json::json!({"held_out": {"val_split": 0.1, "seed": 42}})
    );

    let not_png = dir.path().join("mistakes.jpg");
    let output = eval(&model, &data, &["--mistakes", path(&not_png)]);
    assert_fails_with(&output, "must end in .png");
    assert!(stderr(&output).contains(path(&not_png)));
    assert!(!not_png.exists());
    let not_a_chart = dir.path().join("calibration.txt");
    let output = eval(&model, &data, &["--calibration", path(&not_a_chart)]);
    assert_fails_with(&output, "must end in .svg or .png");
    assert!(!not_a_chart.exists());

    // Every answer is "not sure" at a threshold of 1 (but one whose probability is 1 in f32),
    // and none at 0.
    let predict_text = |threshold: &str| {
        let output = catdog(&[
            "predict",
            "--model",
            path(&model),
            "--backend",
            "flex",
            "--not-sure-below",
            threshold,
            path(&data.join("cat")),
        ]);
        assert_success(&output);
        stdout(&output)
    };
    let text = predict_text("1");
    assert_eq!(text.lines().count(), 30);
    let unsure = |l: &str| l.contains("  not sure (") && l.ends_with(")");
    assert!(
        text.lines().all(|l| unsure(l) || l.ends_with("  1.00")),
        "{text}"
    );
    assert!(text.lines().any(unsure), "{text}");
    let text = predict_text("0");
    assert!(!text.contains("not sure"), "{text}");
    assert_fails_with(
        &catdog(&["predict", "--not-sure-below", "1.5", path(&data)]),
        "1.5 is not a probability",
    );
}

/// `predict` averages each photo's answer with its mirror image's unless told `--no-flip`:
/// the default is the mean of the unflipped answers for the photo and for its mirror image
/// (made here), and `--flip` asks for what is already done.
#[test]
fn predict_averages_with_the_mirror_image_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let photo = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cat.jpg");
    let mirror = dir.path().join("mirror.png");
    image::open(&photo).unwrap().fliph().save(&mirror).unwrap();
    let cat = |photo: &Path, extra: &[&str]| -> f64 {
        let mut args = vec![
            "predict",
            "--model",
            "builtin",
            "--backend",
            "flex",
            "--json",
        ];
        args.extend(extra);
        args.push(path(photo));
        let output = catdog(&args);
        assert_success(&output);
        let answer: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
        answer["probabilities"]["cat"].as_f64().unwrap()
    };
    let (default, flip) = (cat(&photo, &[]), cat(&photo, &["--flip"]));
    let (plain, mirrored) = (cat(&photo, &["--no-flip"]), cat(&mirror, &["--no-flip"]));
    assert_eq!(default, flip);
    assert!(
        (plain - mirrored).abs() > 1e-3,
        "{plain} {mirrored}: no test of the mean"
    );
    assert!(
        (default - (plain + mirrored) / 2.0).abs() < 2e-3,
        "{default} is not the mean of {plain} and {mirrored}"
    );
    assert_fails_with(
        &catdog(&["predict", "--flip", "--no-flip", path(&photo)]),
        "cannot be used with",
    );
}

/// A black picture (64 px), unlike any photo of a cat or a dog, or any of `synth`'s.
fn black_picture(file: &Path) {
    image::RgbImage::new(64, 64).save(file).unwrap();
}

/// Training fits what its validation photos look like inside the network; a picture unlike
/// all of them (a black one) is "not sure", however probable its label, in text and JSON, while the
/// photos it was fitted on are not. `eval --held-out --fit-unusual` fits it again for a model
/// without it, and a record that does not fit the network is refused.
#[test]
fn a_picture_unlike_the_training_photos_is_not_sure() {
    let dir = tempfile::tempdir().unwrap();
    let (data, model) = (dir.path().join("data"), dir.path().join("model"));
    synth(&data, 240, 16);
    train_one_epoch(&data, &model, "16", &["--batch-size", "8"]);
    let info_path = model.join("catdog.json");
    let read_info = || -> Value { serde_json::from_slice(&fs::read(&info_path).unwrap()).unwrap() };
    let info = read_info();
    let typical = info["typical"].clone();
    assert_eq!(typical["photos"], 24, "10 % of 240: {info}");
    assert_eq!(typical["mean"].as_array().unwrap().len(), 2 * 128, "{info}");

    let black = dir.path().join("black.png");
    black_picture(&black);
    let predict = |photo: &Path, json: bool| {
        let mut args = vec!["predict", "--model", path(&model), "--backend", "flex"];
        args.extend(json.then_some("--json"));
        args.push(path(photo));
        catdog(&args)
    };
    let output = predict(&black, true);
    assert_success(&output);
    let answer: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(answer["unusual"], true, "{answer}");
    assert_eq!(answer["sure"], false, "{answer}");
    assert_eq!(answer["answer"], "not sure", "{answer}");
    let output = predict(&black, false);
    assert!(
        stdout(&output).contains("; unlike the photos it learned from)"),
        "{}",
        stdout(&output)
    );
    // The held-out photos it was fitted on lie within its limit (their furthest is the limit).
    let output = eval(&model, &data, &["--held-out", "--json"]);
    assert_success(&output);
    let held_out: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert!(
        held_out["unusual"]["photos"].as_u64().unwrap() <= 1,
        "{held_out}"
    );
    // eval's "not sure" is what predict says: a low probability or an unusual photo.
    let output = catdog(&[
        "predict",
        "--model",
        path(&model),
        "--backend",
        "flex",
        "--json",
        path(&data),
    ]);
    let unsure = stdout(&output)
        .lines()
        .filter(|line| serde_json::from_str::<Value>(line).unwrap()["sure"] == false)
        .count();
    let output = eval(&model, &data, &["--json"]);
    let all: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(all["not_sure"]["photos"], unsure, "{all}");
    assert!(all["unusual"]["photos"].as_u64().unwrap() > 0, "{all}");
    let output = eval(&model, &data, &[]);
    assert!(
        stdout(&output).contains(" or unlike the photos it learned from): ")
            && stdout(&output).contains("\nunlike the photos it learned from: "),
        "{}",
        stdout(&output)
    );

    // A model saved without it gets it back from the same photos.
    let mut without = info.clone();
    without.as_object_mut().unwrap().remove("typical");
    fs::write(&info_path, without.to_string()).unwrap();
    let output = predict(&black, true);
    assert_eq!(
        serde_json::from_str::<Value>(stdout(&output).trim()).unwrap()["unusual"],
        false
    );
    let output = eval(&model, &data, &["--held-out", "--fit-unusual"]);
    assert_success(&output);
    assert!(
        stderr(&output).contains("on 24 held-out photos"),
        "{}",
        stderr(&output)
    );
    let refitted = read_info()["typical"].clone();
    for (name, tolerance) in [("mean", 1e-4), ("spread", 1e-4)] {
        let (a, b) = (
            typical[name].as_array().unwrap(),
            refitted[name].as_array().unwrap(),
        );
        assert_eq!(a.len(), b.len());
        for (a, b) in a.iter().zip(b) {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!(
                (a - b).abs() <= tolerance * (1.0 + a.abs()),
                "{name}: {a} vs {b}"
            );
        }
    }
    assert_fails_with(
        &catdog(&[
            "eval",
            "--model",
            "builtin",
            "--data",
            path(&data),
            "--held-out",
            "--fit-unusual",
        ]),
        "--fit-unusual saves into the model's folder",
    );

    let mut damaged = read_info();
    damaged["typical"]["mean"].as_array_mut().unwrap().pop();
    fs::write(&info_path, damaged.to_string()).unwrap();
    let output = predict(&black, false);
    assert_fails_with(&output, "does not fit its network");
    assert!(
        stderr(&output).contains(path(&info_path)),
        "{}",
        stderr(&output)
    );
}

/// `--held-out` uses the split recorded with the model, and refuses what would score it on
/// photos it learned from: another folder, or another seed or share.
#[test]
fn eval_held_out_refuses_photos_the_model_may_have_learned_from() {
    let dir = tempfile::tempdir().unwrap();
    let (data, model) = (dir.path().join("data"), dir.path().join("model"));
    synth(&data, 40, 16);
    let train = |args: &[&str], out: &Path| {
        let mut all = vec!["train", "--backend", "flex", "--epochs", "1"];
        all.extend(args);
        all.extend(["--image-size", "16", "--out", path(out)]);
        assert_success(&catdog(&all));
    };
    train(&["--data", path(&data), "--seed", "3"], &model);

    let output = eval(&model, &data, &["--held-out", "--json"]);
    assert_success(&output);
    let held_out: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(
        held_out["subset"],
        serde_json::json!({"held_out": {"val_split": 0.1, "seed": 3}}),
        "the seed recorded with the model, not eval's default"
    );
    assert_fails_with(
        &eval(&model, &data, &["--held-out", "--seed", "42"]),
        "--seed 42 is not the 3 the model was trained with",
    );

    let other = dir.path().join("other");
    synth(&other, 60, 16);
    let output = eval(&model, &other, &["--held-out"]);
    assert_fails_with(&output, "does not hold those photos");
    assert!(stderr(&output).contains(path(&data)), "{}", stderr(&output));
    assert_success(&eval(&model, &other, &[]));

    // A copy of the folder, whose photos have other modification times, holds the same
    // photos: the same ones are held out.
    let copy = dir.path().join("copy");
    for class in ["cat", "dog"] {
        copy_folder(&data.join(class), &copy.join(class));
    }
    let touched = fs::read_dir(copy.join("cat"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let long_ago = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
    let file = fs::File::options()
        .write(true)
        .open(touched.path())
        .unwrap();
    file.set_modified(long_ago).unwrap();
    let output = eval(&model, &copy, &["--held-out", "--json"]);
    assert_success(&output);
    let copied: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(copied["photos"], held_out["photos"]);
    assert_eq!(copied["accuracy"], held_out["accuracy"]);
    // Not one with a photo fewer.
    fs::remove_file(touched.path()).unwrap();
    assert_fails_with(
        &eval(&model, &copy, &["--held-out"]),
        "does not hold those photos",
    );

    let generated = dir.path().join("generated");
    train(&["--generated", "40"], &generated);
    assert_fails_with(
        &eval(&generated, &data, &["--held-out"]),
        "trained on generated pictures",
    );

    // A model saved before catdog recorded its split takes the flags, checked.
    let info_path = model.join("catdog.json");
    let mut info: Value = serde_json::from_str(&fs::read_to_string(&info_path).unwrap()).unwrap();
    info.as_object_mut().unwrap().remove("trained_on");
    fs::write(&info_path, info.to_string()).unwrap();
    assert_fails_with(
        &eval(&model, &data, &["--held-out", "--val-split", "1.5"]),
        "--val-split must be at least 0 and below 0.9, not 1.5",
    );
    assert_success(&eval(&model, &data, &["--held-out", "--seed", "3"]));
}
