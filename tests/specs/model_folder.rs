//! A model folder as catdog reads and writes it: a damaged, truncated, missing or foreign
//! file is refused with the file named, and training refuses an out folder it cannot use or
//! one another run holds, before any work.

use std::fs;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::{
    assert_fails_with, assert_success, catdog, train_one_epoch_generated, trained_model,
    weights_file,
};

/// `catdog predict` of `photo` with the model in `model`, on flex.
fn predict(model: &Path, photo: &Path) -> Output {
    catdog().predict().flex().model(model).arg(photo).run()
}

#[test]
fn damaged_model_folders_are_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let (model, photo) = trained_model(dir.path());
    assert_success(&predict(&model, &photo));
    let weights_path = weights_file(&model);
    let info_path = model.join("catdog.json");
    let good_weights = fs::read(&weights_path).unwrap();
    let good_info = fs::read_to_string(&info_path).unwrap();
    let weights_name = weights_path.display().to_string();
    let info_name = info_path.display().to_string();

    // Truncated, as by an interrupted copy.
    fs::write(&weights_path, &good_weights[..good_weights.len() / 2]).unwrap();
    assert_fails_with(&predict(&model, &photo), &weights_name);
    // Same size, damaged bytes in the middle.
    let mut flipped = good_weights.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xff;
    fs::write(&weights_path, &flipped).unwrap();
    assert_fails_with(&predict(&model, &photo), "damaged");
    // Missing.
    fs::remove_file(&weights_path).unwrap();
    assert_fails_with(&predict(&model, &photo), &weights_name);
    fs::write(&weights_path, &good_weights).unwrap();
    assert_success(&predict(&model, &photo));

    let info: Value = serde_json::from_str(&good_info).unwrap();
    let write_info = |edit: &dyn Fn(&mut Value)| {
        let mut edited = info.clone();
        edit(&mut edited);
        fs::write(&info_path, edited.to_string()).unwrap();
    };
    write_info(&|i| i["format_version"] = 99.into());
    assert_fails_with(
        &predict(&model, &photo),
        &format!("{info_name} has format version 99"),
    );
    write_info(&|i| i["classes"] = serde_json::json!(["cat", "dog", "fox"]));
    assert_fails_with(&predict(&model, &photo), "does not fit");
    write_info(&|i| i["image_size"] = 4.into());
    assert_fails_with(&predict(&model, &photo), &info_name);
    write_info(&|i| i["architecture"] = "resnet".into());
    assert_fails_with(
        &predict(&model, &photo),
        "describes a resnet v1, this catdog runs small-cnn v1, small-cnn-wide v1, resnet18 v1 and efficientnet-lite0 v1",
    );
    fs::write(&info_path, "{ not json").unwrap();
    assert_fails_with(&predict(&model, &photo), &info_name);
    fs::remove_file(&info_path).unwrap();
    assert_fails_with(&predict(&model, &photo), &info_name);
}

#[test]
fn an_unusable_out_folder_or_a_held_lock_fails_fast() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    fs::write(&file, "").unwrap();
    let train = |out: &Path| train_one_epoch_generated(out).run();
    assert_fails_with(&train(&file), "is a file, not a folder");
    assert_fails_with(
        &train(&file.join("model")),
        "cannot create the model folder",
    );

    // A lock held by a live process (this test).
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).unwrap();
    let lock = fs::File::create(locked.join(".catdog.lock")).unwrap();
    lock.try_lock().unwrap();
    fs::write(
        locked.join(".catdog.lock"),
        format!("{}\n", std::process::id()),
    )
    .unwrap();
    assert_fails_with(
        &train(&locked),
        &format!(
            "in use by another catdog train (pid {})",
            std::process::id()
        ),
    );
    assert!(!locked.join("catdog.json").exists());
}
