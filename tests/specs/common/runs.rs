//! `catdog train` as a child process that the tests stop where they want: frozen (SIGSTOP)
//! once its first epoch is checkpointed, whatever the machine's speed, then killed, sent
//! Ctrl-C or SIGTERM, and resumed. The tests never wait for a time.

use std::fs;
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use super::command::{Catdog, catdog, text};
use super::fixtures::{synth, weights_file};

/// The epochs of [`training_run`].
pub const EPOCHS: u32 = 3;

/// `catdog train` on 600 generated 32 px pictures on flex, with augmentation, dropout and
/// label smoothing, so that resuming is shown to replay them exactly.
pub fn training_run(out: &Path) -> Catdog {
    catdog()
        .train()
        .arg("--augment")
        .args(["--dropout", "0.3", "--label-smoothing", "0.1"])
        .flex()
        .generated(600)
        .size(32)
        .epochs(EPOCHS)
        .seed(5)
        .json()
        .out(out)
}

/// [`training_run`] started, its stdout and stderr piped.
pub fn start_training(out: &Path) -> Child {
    training_run(out)
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the catdog binary starts")
}

/// Waits until the run in `out` has checkpointed its first epoch, then freezes it there (it
/// takes no further step until [`thaw`]), so that a fast machine cannot run ahead of the test.
pub fn freeze_after_first_checkpoint(out: &Path, child: &mut Child) {
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
pub fn kill_after_first_checkpoint(out: &Path, mut child: Child) {
    freeze_after_first_checkpoint(out, &mut child);
    signal(&child, Signal::SIGKILL);
    child.wait().unwrap();
}

pub fn signal(child: &Child, signal: Signal) {
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
}

/// Lets a frozen run go on; a signal sent while it was frozen is handled first.
pub fn thaw(child: &Child) {
    signal(child, Signal::SIGCONT);
}

pub fn checkpoint_state(out: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(out.join("checkpoint/state.json")).unwrap()).unwrap()
}

/// Resumes the run in `out` and checks that it ends with every epoch and a model that predicts.
pub fn resume_to_the_end(out: &Path) -> Output {
    let output = catdog().train().resume().flex().json().out(out).succeeds();
    let report: Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    assert_eq!(report["epochs"], u64::from(EPOCHS));
    let per_epoch: Vec<u64> = report["per_epoch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["epoch"].as_u64().unwrap())
        .collect();
    assert_eq!(per_epoch, [1, 2, 3]);

    let photos = out.join("photos");
    synth(&photos, 4, 32);
    let predicted = catdog().predict().flex().model(out).arg(&photos).succeeds();
    assert_eq!(text(&predicted.stdout).lines().count(), 4);
    output
}

/// What the lock file of `out` says: the pid of a run that holds it or did not release it.
pub fn lock_owner(out: &Path) -> String {
    fs::read_to_string(out.join(".catdog.lock"))
        .unwrap()
        .trim()
        .to_string()
}

/// The bytes of the weights of the model in `out`.
pub fn weights(out: &Path) -> Vec<u8> {
    fs::read(weights_file(out)).unwrap()
}
