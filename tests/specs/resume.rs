//! `catdog train --resume`: a run killed after a checkpoint goes on where it stopped and ends
//! where a run never stopped ends, bit for bit; a plain `train` will not throw it away; and a
//! resume refuses other settings, other photos and damaged checkpoints.

use std::fs;
use std::process::Stdio;

use crate::common::runs::{
    EPOCHS, checkpoint_state, kill_after_first_checkpoint, lock_owner, resume_to_the_end,
    start_training, training_run, weights,
};
use crate::common::{catdog, synth, text, train_one_epoch_generated};

#[test]
fn a_killed_run_resumes_where_it_stopped_and_matches_an_uninterrupted_one() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole");
    let again = dir.path().join("again");
    let killed = dir.path().join("killed");

    // Determinism: the same seed, data and CPU backend give the same weights bit for bit.
    training_run(&whole).succeeds();
    training_run(&again).succeeds();
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
    let output = training_run(&killed).fails_with("--resume");
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

/// A resumed run reads AdamW's state straight onto the backend it trains on, never onto
/// burn's default device (the GPU where wgpu is compiled in): with `BURN_DEVICE` naming no
/// backend at all, any use of the default device would end the run.
#[test]
fn resuming_reads_the_optimizer_state_onto_the_training_device() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    train_one_epoch_generated(&out).succeeds();
    catdog()
        .train()
        .resume()
        .flex()
        .out(&out)
        .env("BURN_DEVICE", "no-such-backend")
        .succeeds();
}

#[test]
fn resume_refuses_other_settings_and_damaged_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    catdog()
        .train()
        .resume()
        .out(&out)
        .fails_with("no checkpoint to resume");

    let child = start_training(&out);
    kill_after_first_checkpoint(&out, child);

    let resume = || catdog().train().resume().flex().out(&out);
    resume()
        .size(64)
        .fails_with("--image-size 64 (the run uses 32)");
    resume()
        .data("elsewhere")
        .fails_with("--data elsewhere (the run uses generated pictures)");
    resume()
        .args(["--schedule", "one-cycle"])
        .fails_with("--schedule one-cycle (the run uses cosine)");

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
    resume().fails_with(&format!("{} is damaged", model_file.display()));
    fs::write(&model_file, &good).unwrap();

    let mut other = state.clone();
    other["format_version"] = 7.into();
    fs::write(&state_path, other.to_string()).unwrap();
    resume().fails_with("checkpoint format 7");
    fs::write(&state_path, state.to_string()).unwrap();
    resume_to_the_end(&out);
}

#[test]
fn resume_refuses_a_photo_folder_that_changed() {
    let dir = tempfile::tempdir().unwrap();
    let photos = dir.path().join("photos");
    let out = dir.path().join("model");
    synth(&photos, 600, 32);
    let child = catdog()
        .train()
        .flex()
        .data(&photos)
        .size(32)
        .epochs(EPOCHS)
        .out(&out)
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    kill_after_first_checkpoint(&out, child);

    fs::copy(photos.join("cat/00000.png"), photos.join("cat/new.png")).unwrap();
    let resume = || catdog().train().resume().flex().out(&out);
    resume().fails_with("the photos there are not the same now");
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
    let output = resume().succeeds();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("have other modification times"), "{err}");
}
