//! catdog on the GPU (wgpu; lavapipe where there is none) in half precision: `--precision
//! f16` learns like f32, flex32 resumes like an uninterrupted run, and both save f32 models
//! that answer like f32 ones.
//!
//! Each precision tunes its own kernels on a fresh machine (minutes on lavapipe), so these
//! train at the size the other wgpu tests tune, 16 px in batches of 4, on the striped
//! pictures (`common::fixtures::striped_pictures`), which the network learns in an epoch or
//! two.

use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::Value;

use crate::common::fixtures::striped_pictures;
use crate::common::runs::kill_after_first_checkpoint;
use crate::common::{
    Catdog, assert_success, catdog, stdout, synth, text, weights_header, wgpu_or_skip,
};

/// On wgpu, `--precision f16` learns the striped pictures to within a few points of f32,
/// the model it saves is f32 all the same, and predicting in f16 gives the f32 answers.
#[test]
fn half_precision_on_the_gpu_learns_like_f32_and_saves_f32() {
    let test = "half_precision_on_the_gpu_learns_like_f32_and_saves_f32";
    if wgpu_or_skip(test).is_none() {
        return;
    }
    let devices: Value = serde_json::from_slice(&catdog().devices().json().run().stdout).unwrap();
    if devices["wgpu"]["features"]["f16"] != true {
        eprintln!("SKIPPED {test}: the wgpu adapter has no f16");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let stripes = dir.path().join("stripes");
    striped_pictures(&stripes, 96, 16);
    let accuracy = |precision: &str| -> f64 {
        let out = dir.path().join(precision);
        let output = gpu_training(precision, &stripes, &out).succeeds();
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["precision"], precision);
        let header = weights_header(&out);
        assert!(
            header.contains("\"F32\"") && !header.contains("\"F16\""),
            "{precision}: {header}"
        );
        report["val_accuracy"].as_f64().unwrap()
    };
    let full = accuracy("f32");
    let half = accuracy("f16");
    assert!(full >= 0.7, "f32 learned only {full}");
    assert!((full - half).abs() <= 0.1, "f32 reached {full}, f16 {half}");

    // The f16-trained model, read back in f16 and in f32: the same probabilities, to f16's
    // precision.
    assert_answers_like_f32(&dir.path().join("f16"), "f16", &dir.path().join("pictures"));
}

/// On wgpu, the model in `model` answers four drawn 24 px pictures (written into `pictures`)
/// in `precision` as it does in f32, to half precision's accuracy.
fn assert_answers_like_f32(model: &Path, precision: &str, pictures: &Path) {
    synth(pictures, 4, 24);
    let answers = |precision: &str| gpu_cat_probabilities(model, pictures, precision);
    let (half, full) = (answers(precision), answers("f32"));
    assert_eq!(half.len(), 4);
    for (h, f) in half.iter().zip(&full) {
        assert!((h - f).abs() < 0.02, "{precision} {half:?}, f32 {full:?}");
    }
}

/// On wgpu, a run in `--precision flex32` saves an f32 model that predicts like it does in
/// flex32, and a run killed after its first epoch resumes (network and AdamW's moments read
/// back from f32 files into flex32) to the losses of a run never stopped.
#[test]
fn a_flex32_run_on_the_gpu_saves_f32_and_resumes_like_an_uninterrupted_one() {
    let test = "a_flex32_run_on_the_gpu_saves_f32_and_resumes_like_an_uninterrupted_one";
    if wgpu_or_skip(test).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let stripes = dir.path().join("stripes");
    striped_pictures(&stripes, 96, 16);
    let train = |out: &Path| gpu_training("flex32", &stripes, out);
    let report = |output: &Output| -> Value {
        assert_success(output);
        serde_json::from_str(text(&output.stdout).trim()).unwrap()
    };
    let whole = dir.path().join("whole");
    let whole_report = report(&train(&whole).run());
    assert_eq!(whole_report["precision"], "flex32");
    assert!(
        whole_report["val_accuracy"].as_f64().unwrap() >= 0.7,
        "flex32 learned only {}",
        whole_report["val_accuracy"]
    );
    let header = weights_header(&whole);
    assert!(
        header.contains("\"F32\"") && !header.contains("Flex32"),
        "{header}"
    );

    let killed = dir.path().join("killed");
    let child = train(&killed)
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    kill_after_first_checkpoint(&killed, child);
    let resumed = report(
        &catdog()
            .train()
            .resume()
            .backend("wgpu")
            .json()
            .out(&killed)
            .run(),
    );
    let losses = |report: &Value| -> Vec<f64> {
        report["per_epoch"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|e| [e["train_loss"].as_f64(), e["val_loss"].as_f64()])
            .map(Option::unwrap)
            .collect()
    };
    let (whole_losses, resumed_losses) = (losses(&whole_report), losses(&resumed));
    assert_eq!(whole_losses.len(), resumed_losses.len());
    for (w, r) in whole_losses.iter().zip(&resumed_losses) {
        assert!(
            (w - r).abs() < 1e-3,
            "uninterrupted {whole_losses:?}, resumed {resumed_losses:?}"
        );
    }

    assert_answers_like_f32(&whole, "flex32", &dir.path().join("pictures"));
}

/// `catdog train` on wgpu in `precision` over the pictures in `data` (see
/// [`striped_pictures`]), small enough for lavapipe: 16 px, 3 epochs of batch 4 (the size
/// the bench tests tune f32 kernels for, so that an f32 run here tunes nothing new), a
/// quarter held out, seed 5, the report as JSON, the model into `out`.
fn gpu_training(precision: &str, data: &Path, out: &Path) -> Catdog {
    catdog()
        .train()
        .backend("wgpu")
        .precision(precision)
        .size(16)
        .epochs(3)
        .batch_size(4)
        .args(["--val-split", "0.25"])
        .seed(5)
        .json()
        .data(data)
        .out(out)
}

/// The probability of "cat" that the model in `model`, run on wgpu in `precision`, gives each
/// picture in `pictures`.
fn gpu_cat_probabilities(model: &Path, pictures: &Path, precision: &str) -> Vec<f64> {
    let output = catdog()
        .predict()
        .backend("wgpu")
        .precision(precision)
        .json()
        .model(model)
        .arg(pictures)
        .succeeds();
    stdout(&output)
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["probabilities"]["cat"]
                .as_f64()
                .unwrap()
        })
        .collect()
}
