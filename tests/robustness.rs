//! Training that survives kills, Ctrl-C and bad model folders: `catdog train` run as a child
//! process, stopped and resumed. The GPU's half precisions are here too, f16 beside flex32: on
//! a fresh machine each tunes its own kernels (minutes on lavapipe), and in one test binary the
//! two tunings run at once, on the two cores of a small CI machine.

mod common;

use common::{assert_fails_with, assert_success, catdog, command, text};

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

const EPOCHS: &str = "3";

/// `catdog train` on 600 generated 32 px pictures on flex, with augmentation, dropout and
/// label smoothing, so that resuming is shown to replay them exactly. The tests never wait for
/// a time: they freeze the run (SIGSTOP) where they want to act, whatever the machine's speed.
fn train_args(out: &Path) -> Vec<String> {
    [
        "train",
        "--augment",
        "--dropout",
        "0.3",
        "--label-smoothing",
        "0.1",
        "--backend",
        "flex",
        "--generated",
        "600",
        "--image-size",
        "32",
        "--epochs",
        EPOCHS,
        "--seed",
        "5",
        "--json",
        "--out",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([out.display().to_string()])
    .collect()
}

fn start_training(out: &Path) -> Child {
    command()
        .args(train_args(out))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the catdog binary starts")
}

/// Waits until the run in `out` has checkpointed its first epoch, then freezes it there (it
/// takes no further step until [`thaw`]), so that a fast machine cannot run ahead of the test.
fn freeze_after_first_checkpoint(out: &Path, child: &mut Child) {
    let state = out.join("checkpoint/state.json");
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        if let Ok(text) = fs::read_to_string(&state) {
            let state: Value = serde_json::from_str(&text).expect("state.json is always whole");
            if state["history"].as_array().is_some_and(|h| !h.is_empty()) {
                signal(child, Signal::SIGSTOP);
                return;
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("catdog train ended ({status}) before its first checkpoint");
        }
        sleep(Duration::from_millis(1));
    }
    panic!("no checkpoint after 300 s");
}

/// Kills the run in `out` (SIGKILL: no chance to save anything) once its first epoch is
/// checkpointed, and waits for it to end.
fn kill_after_first_checkpoint(out: &Path, mut child: Child) {
    freeze_after_first_checkpoint(out, &mut child);
    signal(&child, Signal::SIGKILL);
    child.wait().unwrap();
}

fn signal(child: &Child, signal: Signal) {
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
}

/// Lets a frozen run go on; a signal sent while it was frozen is handled first.
fn thaw(child: &Child) {
    signal(child, Signal::SIGCONT);
}

fn checkpoint_state(out: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(out.join("checkpoint/state.json")).unwrap()).unwrap()
}

/// Resumes the run in `out` and checks that it ends with every epoch and a model that predicts.
fn resume_to_the_end(out: &Path) -> Output {
    let output = catdog(&[
        "train",
        "--resume",
        "--backend",
        "flex",
        "--json",
        "--out",
        &out.display().to_string(),
    ]);
    assert_success(&output);
    let report: Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    assert_eq!(report["epochs"], EPOCHS.parse::<u64>().unwrap());
    let per_epoch: Vec<u64> = report["per_epoch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["epoch"].as_u64().unwrap())
        .collect();
    assert_eq!(per_epoch, [1, 2, 3]);

    let photos = out.join("photos");
    assert_success(&catdog(&[
        "synth",
        "--out",
        &photos.display().to_string(),
        "--count",
        "4",
        "--size",
        "32",
    ]));
    let predicted = catdog(&[
        "predict",
        "--backend",
        "flex",
        "--model",
        &out.display().to_string(),
        &photos.display().to_string(),
    ]);
    assert_success(&predicted);
    assert_eq!(text(&predicted.stdout).lines().count(), 4);
    output
}

/// What the lock file of `out` says: the pid of a run that holds it or did not release it.
fn lock_owner(out: &Path) -> String {
    fs::read_to_string(out.join(".catdog.lock"))
        .unwrap()
        .trim()
        .to_string()
}

fn weights(out: &Path) -> Vec<u8> {
    fs::read(common::weights_file(out)).unwrap()
}

#[test]
fn a_killed_run_resumes_where_it_stopped_and_matches_an_uninterrupted_one() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole");
    let again = dir.path().join("again");
    let killed = dir.path().join("killed");

    // Determinism: the same seed, data and CPU backend give the same weights bit for bit.
    assert_success(&command().args(train_args(&whole)).output().unwrap());
    assert_success(&command().args(train_args(&again)).output().unwrap());
    assert!(
        weights(&whole) == weights(&again),
        "two runs with one seed differ"
    );

    let child = start_training(&killed);
    kill_after_first_checkpoint(&killed, child);
    let state = checkpoint_state(&killed);
    let done = state["history"].as_array().unwrap().len();
    assert!((1..3).contains(&done), "killed after {done} epochs");
    assert!(!killed.join("catdog.json").exists());
    assert!(
        !lock_owner(&killed).is_empty(),
        "SIGKILL leaves its pid in the lock file (the OS lock itself is gone)"
    );

    // A plain `train` must not throw the unfinished run away; it takes over the dead run's
    // lock, then refuses.
    let output = command().args(train_args(&killed)).output().unwrap();
    assert_fails_with(&output, "--resume");
    assert!(text(&output.stderr).contains("stale lock"));

    let output = resume_to_the_end(&killed);
    let err = text(&output.stderr);
    assert!(
        err.contains(&format!("resuming the run in {}", killed.display())),
        "{err}"
    );
    assert_eq!(lock_owner(&killed), "", "the lock is released");
    assert!(
        weights(&killed) == weights(&whole),
        "the resumed run took other steps"
    );
}

#[test]
fn ctrl_c_saves_a_checkpoint_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    let mut child = start_training(&out);
    freeze_after_first_checkpoint(&out, &mut child);
    signal(&child, Signal::SIGINT);
    thaw(&child);
    let output = child.wait_with_output().unwrap();
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{err}");
    assert!(err.contains("catdog train --resume --out"), "{err}");
    assert!(
        err.contains("catdog: stopping after the batch in progress"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(lock_owner(&out), "", "the lock is released");
    // The checkpoint is of the position the message names: mid-epoch ("epoch 2 of 3, 5 of 19
    // batches") or, if the signal came during validation, at the end of an epoch.
    let state = checkpoint_state(&out);
    let (epoch, batches) = (
        &state["position"]["epoch"],
        &state["position"]["batches_done"],
    );
    let mid_epoch = format!("at epoch {epoch} of 3, {batches} of ");
    let at_the_end = format!("at the end of epoch {} of 3", epoch.as_u64().unwrap() - 1);
    if batches == 0 {
        assert!(err.contains(&at_the_end), "{state}\n{err}");
    } else {
        assert!(err.contains(&mid_epoch), "{state}\n{err}");
    }
    assert!(state["history"].as_array().unwrap().len() < 3);
    resume_to_the_end(&out);

    // Stopped and resumed from the batch it reached, it ends where a run that was never
    // stopped ends.
    let whole = dir.path().join("whole");
    assert_success(&command().args(train_args(&whole)).output().unwrap());
    assert!(
        weights(&out) == weights(&whole),
        "the run resumed after Ctrl-C took other steps"
    );
}

/// The second Ctrl-C is sent once the first has been handled (its line is printed): two sent
/// at once may reach the process as one. The run may still reach its next safe point and save
/// its checkpoint before the second one arrives (the test reads the line a moment after it is
/// written; seen in about one run in eight): such a try shows nothing, and the test tries
/// again, up to 10 times. A second Ctrl-C that does not quit at once fails every try.
#[test]
fn a_second_ctrl_c_exits_at_once_without_breaking_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    for attempt in 1..=10 {
        let out = dir.path().join(format!("model-{attempt}"));
        let (status, err) = stop_with_two_ctrl_c(&out);
        assert_eq!(status.code(), Some(130), "{err}");
        // One Ctrl-C alone ends the same way, but only after the batch and its checkpoint,
        // which it reports; the second one quits before that.
        if !err.contains("the checkpoint is saved") {
            // Whatever the first Ctrl-C had begun to write, the checkpoint on disk is whole.
            resume_to_the_end(&out);
            return;
        }
    }
    panic!("in 10 tries, a second Ctrl-C never quit before the checkpoint was saved");
}

/// Starts a run into `out`, sends Ctrl-C after its first checkpoint and again once the first
/// is handled; its exit status and what it wrote on stderr.
fn stop_with_two_ctrl_c(out: &Path) -> (std::process::ExitStatus, String) {
    let mut child = start_training(out);
    freeze_after_first_checkpoint(out, &mut child);
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    signal(&child, Signal::SIGINT);
    thaw(&child);
    let mut err = String::new();
    for line in lines {
        let line = line.unwrap();
        err.push_str(&line);
        err.push('\n');
        if line.starts_with("catdog: stopping") {
            signal(&child, Signal::SIGSTOP);
            signal(&child, Signal::SIGINT);
            thaw(&child);
        }
    }
    (child.wait().unwrap(), err)
}

#[test]
fn sigterm_saves_a_checkpoint_and_exits_143() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    let mut child = start_training(&out);
    freeze_after_first_checkpoint(&out, &mut child);
    signal(&child, Signal::SIGTERM);
    thaw(&child);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(143), "{}", text(&output.stderr));
    resume_to_the_end(&out);
}

/// A small trained model folder, and a photo to predict.
fn trained_model(dir: &Path) -> (PathBuf, PathBuf) {
    let model = dir.join("model");
    let photos = dir.join("photos");
    let (model_arg, photos_arg) = (model.display().to_string(), photos.display().to_string());
    assert_success(&catdog(&[
        "synth",
        "--out",
        &photos_arg,
        "--count",
        "4",
        "--size",
        "16",
    ]));
    assert_success(&catdog(&[
        "train",
        "--backend",
        "flex",
        "--generated",
        "40",
        "--image-size",
        "16",
        "--epochs",
        "1",
        "--out",
        &model_arg,
    ]));
    (model, photos.join("cat/00000.png"))
}

fn predict(model: &Path, photo: &Path) -> Output {
    catdog(&[
        "predict",
        "--backend",
        "flex",
        "--model",
        &model.display().to_string(),
        &photo.display().to_string(),
    ])
}

#[test]
fn damaged_model_folders_are_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let (model, photo) = trained_model(dir.path());
    assert_success(&predict(&model, &photo));
    let weights_path = common::weights_file(&model);
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
        "describes a resnet v1, this catdog runs small-cnn v1, small-cnn-wide v1 and resnet18 v1",
    );
    fs::write(&info_path, "{ not json").unwrap();
    assert_fails_with(&predict(&model, &photo), &info_name);
    fs::remove_file(&info_path).unwrap();
    assert_fails_with(&predict(&model, &photo), &info_name);
}

/// A resumed run reads AdamW's state straight onto the backend it trains on, never onto
/// burn's default device (the GPU where wgpu is compiled in): with `BURN_DEVICE` naming no
/// backend at all, any use of the default device would end the run.
#[test]
fn resuming_reads_the_optimizer_state_onto_the_training_device() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model").display().to_string();
    let tiny = ["--generated", "40", "--image-size", "16", "--epochs", "1"];
    let mut args = vec!["train", "--backend", "flex", "--out", &out];
    args.extend(tiny);
    assert_success(&catdog(&args));
    let output = command()
        .args(["train", "--resume", "--backend", "flex", "--out", &out])
        .env("BURN_DEVICE", "no-such-backend")
        .output()
        .unwrap();
    assert_success(&output);
}

#[test]
fn resume_refuses_other_settings_and_damaged_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    let out_arg = out.display().to_string();
    assert_fails_with(
        &catdog(&["train", "--resume", "--out", &out_arg]),
        "no checkpoint to resume",
    );

    let child = start_training(&out);
    kill_after_first_checkpoint(&out, child);

    assert_fails_with(
        &catdog(&[
            "train",
            "--resume",
            "--backend",
            "flex",
            "--image-size",
            "64",
            "--out",
            &out_arg,
        ]),
        "--image-size 64 (the run uses 32)",
    );
    assert_fails_with(
        &catdog(&[
            "train",
            "--resume",
            "--backend",
            "flex",
            "--data",
            "elsewhere",
            "--out",
            &out_arg,
        ]),
        "--data elsewhere (the run uses generated pictures)",
    );
    let output = catdog(&[
        "train",
        "--resume",
        "--backend",
        "flex",
        "--schedule",
        "one-cycle",
        "--out",
        &out_arg,
    ]);
    assert_fails_with(&output, "--schedule one-cycle (the run uses cosine)");

    let state_path = out.join("checkpoint/state.json");
    let state = checkpoint_state(&out);
    let model_file = out
        .join("checkpoint")
        .join(state["model_file"].as_str().unwrap());
    let good = fs::read(&model_file).unwrap();
    let mut damaged = good.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    fs::write(&model_file, &damaged).unwrap();
    assert_fails_with(
        &catdog(&["train", "--resume", "--backend", "flex", "--out", &out_arg]),
        &format!("{} is damaged", model_file.display()),
    );
    fs::write(&model_file, &good).unwrap();

    let mut other = state.clone();
    other["format_version"] = 7.into();
    fs::write(&state_path, other.to_string()).unwrap();
    assert_fails_with(
        &catdog(&["train", "--resume", "--backend", "flex", "--out", &out_arg]),
        "checkpoint format 7",
    );
    fs::write(&state_path, state.to_string()).unwrap();
    resume_to_the_end(&out);
}

#[test]
fn resume_refuses_a_photo_folder_that_changed() {
    let dir = tempfile::tempdir().unwrap();
    let photos = dir.path().join("photos");
    let photos_arg = photos.display().to_string();
    let out = dir.path().join("model");
    let out_arg = out.display().to_string();
    assert_success(&catdog(&[
        "synth",
        "--out",
        &photos_arg,
        "--count",
        "600",
        "--size",
        "32",
    ]));
    let child = command()
        .args([
            "train",
            "--backend",
            "flex",
            "--data",
            &photos_arg,
            "--image-size",
            "32",
            "--epochs",
            EPOCHS,
            "--out",
            &out_arg,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    kill_after_first_checkpoint(&out, child);

    fs::copy(photos.join("cat/00000.png"), photos.join("cat/new.png")).unwrap();
    let resume = || catdog(&["train", "--resume", "--backend", "flex", "--out", &out_arg]);
    assert_fails_with(&resume(), "the photos there are not the same now");
    fs::remove_file(photos.join("cat/new.png")).unwrap();
    // The same names and sizes with other modification times, as a copy of the folder has:
    // the same photos, so the run goes on, and says why.
    let touched = fs::File::options()
        .write(true)
        .open(photos.join("dog/00001.png"))
        .unwrap();
    touched
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(3600))
        .unwrap();
    drop(touched);
    let output = resume();
    assert_success(&output);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("have other modification times"), "{err}");
}

#[test]
fn an_unusable_out_folder_or_a_held_lock_fails_fast() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    fs::write(&file, "").unwrap();
    let train = |out: &Path| {
        catdog(&[
            "train",
            "--backend",
            "flex",
            "--generated",
            "40",
            "--image-size",
            "16",
            "--epochs",
            "1",
            "--out",
            &out.display().to_string(),
        ])
    };
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

#[test]
fn a_diverging_loss_stops_training_and_leaves_the_folder_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    let out_arg = out.display().to_string();
    let train = |lr: &str| {
        catdog(&[
            "train",
            "--backend",
            "flex",
            "--generated",
            "100",
            "--image-size",
            "16",
            "--epochs",
            "1",
            "--lr",
            lr,
            "--out",
            &out_arg,
        ])
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

/// On wgpu, `--precision f16` learns the striped pictures to within a few points of f32,
/// the model it saves is f32 all the same, and predicting in f16 gives the f32 answers.
#[test]
fn half_precision_on_the_gpu_learns_like_f32_and_saves_f32() {
    let test = "half_precision_on_the_gpu_learns_like_f32_and_saves_f32";
    if common::wgpu_or_skip(test).is_none() {
        return;
    }
    let devices: Value = serde_json::from_slice(&catdog(&["devices", "--json"]).stdout).unwrap();
    if devices["wgpu"]["features"]["f16"] != true {
        eprintln!("SKIPPED {test}: the wgpu adapter has no f16");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let stripes = dir.path().join("stripes");
    common::striped_pictures(&stripes, 96, 16);
    let accuracy = |precision: &str| -> f64 {
        let out = dir.path().join(precision);
        let output = command()
            .args(common::gpu_train_args(precision, &stripes, &out))
            .output()
            .unwrap();
        assert_success(&output);
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["precision"], precision);
        let header = common::weights_header(&out);
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
    assert_success(&catdog(&[
        "synth",
        "--out",
        &pictures.display().to_string(),
        "--count",
        "4",
        "--size",
        "24",
    ]));
    let answers = |precision: &str| common::gpu_cat_probabilities(model, pictures, precision);
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
    if common::wgpu_or_skip(test).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let stripes = dir.path().join("stripes");
    common::striped_pictures(&stripes, 96, 16);
    let train = |out: &Path| common::gpu_train_args("flex32", &stripes, out);
    let report = |output: &Output| -> Value {
        assert_success(output);
        serde_json::from_str(text(&output.stdout).trim()).unwrap()
    };
    let whole = dir.path().join("whole");
    let whole_report = report(&command().args(train(&whole)).output().unwrap());
    assert_eq!(whole_report["precision"], "flex32");
    assert!(
        whole_report["val_accuracy"].as_f64().unwrap() >= 0.7,
        "flex32 learned only {}",
        whole_report["val_accuracy"]
    );
    let header = common::weights_header(&whole);
    assert!(
        header.contains("\"F32\"") && !header.contains("Flex32"),
        "{header}"
    );

    let killed = dir.path().join("killed");
    let child = command()
        .args(train(&killed))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    kill_after_first_checkpoint(&killed, child);
    let killed_arg = killed.display().to_string();
    let resumed = report(
        &command()
            .args(["train", "--resume", "--backend", "wgpu", "--json", "--out"])
            .arg(&killed_arg)
            .output()
            .unwrap(),
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
