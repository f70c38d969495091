//! `catdog predict`: an answer for every photo it can read and an error for each it cannot,
//! the mean with each photo's mirror image, and "not sure" for a picture unlike those the
//! model learned from.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::common::{
    assert_fails_with, assert_success, black_picture, catdog, eval, path, root, stderr, stdout,
    strace_or_skip, synth, train_one_epoch,
};

#[test]
fn predict_reports_a_bad_photo_and_still_predicts_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = dir.path().join("model");
    synth(&data, 20, 16);
    train_one_epoch(&data, &model, 16).succeeds();
    let bad = dir.path().join("broken.jpg");
    fs::write(&bad, "not a photo").unwrap();
    let good = data.join("dog/00001.png");
    // `catdog predict` of `photos` with the model on flex.
    let predict = |photos: &[&Path]| catdog().predict().model(&model).flex().args(photos).run();

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

/// `predict` averages each photo's answer with its mirror image's unless told `--no-flip`:
/// the default is the mean of the unflipped answers for the photo and for its mirror image
/// (made here), and `--flip` asks for what is already done. With the wide SmallCnn built in
/// before, less sure of the sample cat than the built-in model (1.00 either way round).
#[test]
fn predict_averages_with_the_mirror_image_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let photo = root().join("examples/cat.jpg");
    let mirror = dir.path().join("mirror.png");
    image::open(&photo).unwrap().fliph().save(&mirror).unwrap();
    let cat = |photo: &Path, extra: &[&str]| -> f64 {
        let output = catdog()
            .predict()
            .model(root().join("models/builtin-wide-20k"))
            .flex()
            .json()
            .args(extra)
            .arg(photo)
            .succeeds();
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
    catdog()
        .predict()
        .args(["--flip", "--no-flip"])
        .arg(&photo)
        .fails_with("cannot be used with");
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
    train_one_epoch(&data, &model, 16).batch_size(8).succeeds();
    let info_path = model.join("catdog.json");
    let read_info = || -> Value { serde_json::from_slice(&fs::read(&info_path).unwrap()).unwrap() };
    let info = read_info();
    let typical = info["typical"].clone();
    assert_eq!(typical["photos"], 24, "10 % of 240: {info}");
    assert_eq!(typical["mean"].as_array().unwrap().len(), 2 * 128, "{info}");

    let black = dir.path().join("black.png");
    black_picture(&black);
    let predict = |photo: &Path, json: bool| {
        catdog()
            .predict()
            .model(&model)
            .flex()
            .args(json.then_some("--json"))
            .arg(photo)
            .run()
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
    let output = eval(&model, &data)
        .args(["--held-out", "--json"])
        .succeeds();
    let held_out: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert!(
        held_out["unusual"]["photos"].as_u64().unwrap() <= 1,
        "{held_out}"
    );
    // eval's "not sure" is what predict says: a low probability or an unusual photo.
    let output = catdog()
        .predict()
        .model(&model)
        .flex()
        .json()
        .arg(&data)
        .run();
    let unsure = stdout(&output)
        .lines()
        .filter(|line| serde_json::from_str::<Value>(line).unwrap()["sure"] == false)
        .count();
    let output = eval(&model, &data).json().run();
    let all: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(all["not_sure"]["photos"], unsure, "{all}");
    assert!(all["unusual"]["photos"].as_u64().unwrap() > 0, "{all}");
    let output = eval(&model, &data).run();
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
    let output = eval(&model, &data)
        .args(["--held-out", "--fit-unusual"])
        .succeeds();
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
    catdog()
        .eval()
        .model("builtin")
        .data(&data)
        .args(["--held-out", "--fit-unusual"])
        .fails_with("--fit-unusual saves into the model's folder");

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

/// A cat-and-dog EfficientNet-Lite0 started from ImageNet's weights keeps ImageNet's eye: of a
/// picture that is neither a cat nor a dog it says what it looks like instead (in words and in
/// JSON, never a sure class), a real cat is still a class, and `eval` counts the pets it
/// called neither. One short step of training at 224 px, which leaves ImageNet's features as
/// they were.
#[test]
fn a_picture_of_neither_a_cat_nor_a_dog_is_named_for_what_it_looks_like() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = dir.path().join("model");
    synth(&data, 6, 224);
    train_one_epoch(&data, &model, 224)
        .batch_size(6)
        .args(["--network", "efficientnet-lite0", "--lr", "0.0001"])
        .succeeds();
    let black = dir.path().join("black.png");
    black_picture(&black);
    let cat = root().join("examples/cat.jpg");
    let predict = |json: bool| {
        catdog()
            .predict()
            .model(&model)
            .flex()
            .args(json.then_some("--json"))
            .arg(&black)
            .arg(&cat)
            .succeeds()
    };
    let text = stdout(&predict(false));
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains("not a cat or a dog: looks like a"),
        "{text}"
    );
    assert!(!lines[1].contains("not a cat or a dog"), "{text}");
    let answers: Vec<Value> = stdout(&predict(true))
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(answers[0]["answer"], "not a cat or a dog", "{}", answers[0]);
    assert_eq!(answers[0]["sure"], false);
    let looks_like = answers[0]["looks_like"].as_str().unwrap();
    assert!(lines[0].ends_with(looks_like), "{text}");
    assert_eq!(answers[1]["looks_like"], Value::Null, "{}", answers[1]);
    assert_ne!(answers[1]["answer"], "not a cat or a dog");

    // Generated faces are no real pets: eval counts those it called neither.
    let output = eval(&model, &data).succeeds();
    let text = stdout(&output);
    let line = text
        .lines()
        .find(|line| line.starts_with("called neither a cat nor a dog: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.ends_with("% of them"), "{line}");
    assert!(
        text.contains("\"not sure\" (below 0.80 or neither a cat nor a dog)"),
        "{text}"
    );
}

/// On a machine with no GPU (no GPU device file: no /dev/dri, no /dev/nvidia0), `predict`'s
/// default backend finds the CPU without loading any graphics driver: loading Vulkan's and
/// EGL's software rasterizers to learn that there is no GPU took longer than the answer.
/// Seen through strace (Linux): no graphics library is opened.
#[test]
fn predict_on_a_machine_without_a_gpu_loads_no_graphics_driver() {
    let test = "predict_on_a_machine_without_a_gpu_loads_no_graphics_driver";
    // The device files catdog looks for: where one exists, a GPU may be there.
    let gpu_files = catdog::device::GPU_DEVICE_FILES;
    if let Some(file) = gpu_files.iter().find(|f| Path::new(f).exists()) {
        eprintln!("SKIPPED {test}: this machine may have a GPU ({file} exists)");
        return;
    }
    if !strace_or_skip(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.txt");
    let output = std::process::Command::new("strace")
        .args(["-f", "-e", "trace=open,openat", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_catdog"))
        .args(["predict", "--model", "builtin", "--samples"])
        .output()
        .unwrap();
    assert_success(&output);
    let opened = fs::read_to_string(&trace).unwrap();
    let drivers: Vec<&str> = opened
        .lines()
        .filter(|line| {
            ["libvulkan", "libEGL", "libGL"]
                .iter()
                .any(|l| line.contains(l))
        })
        .collect();
    assert!(drivers.is_empty(), "{drivers:#?}");
    // The trace saw the run: the photos' answers came out.
    assert!(
        stdout(&output).contains("sample cat.jpg"),
        "{}",
        stdout(&output)
    );
}
