//! The `catdog` binary as the tests run it: a builder for its command lines, and the
//! assertions made on what it prints and how it exits.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

/// A `catdog …` command line being built: `catdog().train().flex().epochs(1).size(16)`. It
/// runs the binary this test build made, with the test's environment and current folder,
/// unless [`Catdog::env`] or [`Catdog::current_dir`] say otherwise.
#[must_use = "a command line does nothing until it is run"]
pub struct Catdog {
    command: Command,
}

/// The `catdog` binary, with no arguments yet.
pub fn catdog() -> Catdog {
    Catdog {
        command: Command::new(env!("CARGO_BIN_EXE_catdog")),
    }
}

impl Catdog {
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.command.arg(arg);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    /// `flag value`, the value written as it displays.
    fn flag(self, flag: &str, value: impl ToString) -> Self {
        self.arg(flag).arg(value.to_string())
    }

    // The commands.

    pub fn train(self) -> Self {
        self.arg("train")
    }

    pub fn predict(self) -> Self {
        self.arg("predict")
    }

    pub fn eval(self) -> Self {
        self.arg("eval")
    }

    pub fn synth(self) -> Self {
        self.arg("synth")
    }

    pub fn bench(self) -> Self {
        self.arg("bench")
    }

    pub fn serve(self) -> Self {
        self.arg("serve")
    }

    pub fn download(self) -> Self {
        self.arg("download")
    }

    pub fn devices(self) -> Self {
        self.arg("devices")
    }

    // The flags the tests give most.

    /// `--backend flex`.
    pub fn flex(self) -> Self {
        self.backend("flex")
    }

    /// `--backend BACKEND`.
    pub fn backend(self, backend: &str) -> Self {
        self.flag("--backend", backend)
    }

    /// `--precision PRECISION`.
    pub fn precision(self, precision: &str) -> Self {
        self.flag("--precision", precision)
    }

    /// `--epochs N`.
    pub fn epochs(self, epochs: u32) -> Self {
        self.flag("--epochs", epochs)
    }

    /// `--image-size PX`.
    pub fn size(self, px: u32) -> Self {
        self.flag("--image-size", px)
    }

    /// `--batch-size N`.
    pub fn batch_size(self, size: u32) -> Self {
        self.flag("--batch-size", size)
    }

    /// `--seed N`.
    pub fn seed(self, seed: u64) -> Self {
        self.flag("--seed", seed)
    }

    /// `--generated N`: training on N generated pictures.
    pub fn generated(self, count: u32) -> Self {
        self.flag("--generated", count)
    }

    /// `--data FOLDER`.
    pub fn data(self, folder: impl AsRef<OsStr>) -> Self {
        self.arg("--data").arg(folder)
    }

    /// `--out FOLDER`.
    pub fn out(self, folder: impl AsRef<OsStr>) -> Self {
        self.arg("--out").arg(folder)
    }

    /// `--model MODEL`: a folder, or `builtin`.
    pub fn model(self, model: impl AsRef<OsStr>) -> Self {
        self.arg("--model").arg(model)
    }

    /// `--json`.
    pub fn json(self) -> Self {
        self.arg("--json")
    }

    /// `--resume`.
    pub fn resume(self) -> Self {
        self.arg("--resume")
    }

    // Where and how it runs.

    pub fn env(mut self, name: &str, value: impl AsRef<OsStr>) -> Self {
        self.command.env(name, value);
        self
    }

    pub fn env_remove(mut self, name: &str) -> Self {
        self.command.env_remove(name);
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.command.current_dir(dir);
        self
    }

    /// The command line as a [`Command`], for a test that spawns, signals or kills it.
    pub fn command(self) -> Command {
        self.command
    }

    /// Runs it and waits for it.
    pub fn run(mut self) -> Output {
        self.command.output().expect("the catdog binary runs")
    }

    /// Runs it; it must succeed.
    pub fn succeeds(self) -> Output {
        let output = self.run();
        assert_success(&output);
        output
    }

    /// Runs it; it must fail cleanly with `message` (see [`assert_fails_with`]).
    pub fn fails_with(self, message: &str) -> Output {
        let output = self.run();
        assert_fails_with(&output, message);
        output
    }
}

/// A child's stdout or stderr, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn stdout(output: &Output) -> String {
    text(&output.stdout)
}

pub fn stderr(output: &Output) -> String {
    text(&output.stderr)
}

pub fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "catdog failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        stdout(output),
        stderr(output)
    );
}

/// Asserts a clean failure: exit code 1 (2 for a malformed command line, as clap does), an
/// `error:` line containing `message`, and no panic.
pub fn assert_fails_with(output: &Output, message: &str) {
    let err = stderr(output);
    assert!(
        matches!(output.status.code(), Some(1 | 2)),
        "{}; stderr:\n{err}",
        output.status
    );
    assert!(
        err.contains("error:") && err.contains(message),
        "expected {message:?} in:\n{err}"
    );
    assert!(!err.contains("panicked"), "catdog panicked:\n{err}");
}
