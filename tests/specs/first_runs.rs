//! What a new user meets first: the help, plain answers after a first training run (which
//! model answers, how to go back, hints for the usual slips), and a quiet end when the reader
//! of catdog's output goes away.

use std::fs;

use crate::common::{catdog, stderr, stdout, synth};

#[test]
fn catdog_alone_shows_the_help() {
    let output = catdog().run();
    let text = format!("{}{}", stdout(&output), stderr(&output));
    assert!(
        text.contains("Usage: catdog") && text.contains("Commands:") && text.contains("Examples:"),
        "{text}"
    );
    assert!(!text.contains("error:"), "{text}");
}

/// `catdog help` takes --help, and a command's name.
#[test]
fn catdog_help_takes_help_and_a_commands_name() {
    let dir = tempfile::tempdir().unwrap();
    let run = || catdog().current_dir(dir.path());
    run().args(["help", "--help"]).succeeds();
    assert_eq!(
        stdout(&run().args(["help", "train"]).run()),
        stdout(&run().args(["train", "--help"]).run())
    );
    run()
        .args(["help", "trian"])
        .fails_with("catdog has no command 'trian'");
}

/// What a new user's first runs print: counts that count, which model answers after
/// training and how to go back, nothing resumed twice, and hints for the usual slips.
#[test]
fn a_new_users_first_runs_get_plain_answers() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let photos = home.join("mypets");
    synth(&photos, 20, 16);
    let run = || catdog().current_dir(home);
    let trained = run()
        .train()
        .data("mypets")
        .args(["-b", "flex", "-e", "1"])
        .size(16)
        .succeeds();
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
    let resumed = run().train().resume().succeeds();
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
    let resumed = run().train().resume().succeeds();
    assert!(
        stderr(&resumed).contains("resuming the run in models/catdog"),
        "{}",
        stderr(&resumed)
    );

    // `--model catdog` where models/catdog holds the model.
    run()
        .predict()
        .model("catdog")
        .arg("x.jpg")
        .fails_with("did you mean `--model models/catdog`?");

    // Plural and capitalised folders are the model's classes; eval needs no two photos of
    // a class.
    let named = home.join("named");
    fs::create_dir_all(named.join("Cats")).unwrap();
    fs::create_dir_all(named.join("Dogs")).unwrap();
    fs::copy(photos.join("cat/00001.png"), named.join("Cats/a.png")).unwrap();
    fs::copy(photos.join("cat/00002.png"), named.join("Cats/b.png")).unwrap();
    fs::copy(photos.join("dog/00001.png"), named.join("Dogs/a.png")).unwrap();
    let evaluate = || run().eval().data("named").args(["-b", "flex"]);
    let evaluated = evaluate().succeeds();
    assert!(
        stdout(&evaluated).contains("3 photos"),
        "{}",
        stdout(&evaluated)
    );
    fs::rename(named.join("Dogs"), named.join("Rex")).unwrap();
    evaluate().fails_with("named as it names them");
}

/// `catdog … | head -1`: a reader that leaves ends catdog as it ends other tools (SIGPIPE),
/// not with a panic's exit code 101.
#[test]
fn a_closed_pipe_ends_catdog_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = catdog()
        .predict()
        .arg("--samples")
        .flex()
        .command()
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
