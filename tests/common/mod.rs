//! Helpers shared by the integration tests: optional parts that skip with a message where
//! they are absent, unless CI asks for them.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use catdog::device::{self as backend, Backend, BackendChoice};

/// True when `variable` is set to 1: a missing optional part is then a failure, not a skip.
fn required(variable: &str) -> bool {
    std::env::var(variable).is_ok_and(|v| v == "1")
}

/// The wgpu backend (lavapipe on a machine without a GPU). Skips, saying why, where wgpu
/// finds no adapter, unless `CATDOG_REQUIRE_WGPU=1`.
pub fn wgpu_or_skip(test: &str) -> Option<Backend> {
    match backend::select(BackendChoice::Wgpu) {
        Ok(selection) => Some(selection.backend),
        Err(err) if required("CATDOG_REQUIRE_WGPU") => {
            panic!("CATDOG_REQUIRE_WGPU=1 but wgpu is not usable: {err:#}")
        }
        Err(err) => {
            eprintln!(
                "SKIPPED {test}: wgpu is not usable here ({err:#}); install mesa-vulkan-drivers"
            );
            None
        }
    }
}

/// Debian's chromium and its chromedriver (`CATDOG_CHROMIUM`, `CATDOG_CHROMEDRIVER` name
/// others), as (browser, driver). Skips where either is absent, unless
/// `CATDOG_REQUIRE_BROWSER=1`.
pub fn browser_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    let path = |variable: &str, default: &str| {
        std::env::var_os(variable).map_or_else(|| PathBuf::from(default), PathBuf::from)
    };
    let browser = path("CATDOG_CHROMIUM", "/usr/bin/chromium");
    let driver = path("CATDOG_CHROMEDRIVER", "/usr/bin/chromedriver");
    if browser.is_file() && driver.is_file() {
        return Some((browser, driver));
    }
    if required("CATDOG_REQUIRE_BROWSER") {
        panic!(
            "CATDOG_REQUIRE_BROWSER=1 but {} or {} is absent",
            browser.display(),
            driver.display()
        );
    }
    eprintln!(
        "SKIPPED {test}: no {} or {} (install chromium and chromium-driver)",
        browser.display(),
        driver.display()
    );
    None
}

/// The 2,002 Kaggle originals beside the project checkout (`../shared/data/dogs-vs-cats-2k`,
/// or `CATDOG_REAL_PHOTOS`). Skips where absent, unless `CATDOG_REQUIRE_REAL_PHOTOS=1`.
pub fn real_photos_or_skip(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("CATDOG_REAL_PHOTOS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/dogs-vs-cats-2k"),
        PathBuf::from,
    );
    if dir.is_dir() {
        return Some(dir);
    }
    if required("CATDOG_REQUIRE_REAL_PHOTOS") {
        panic!(
            "CATDOG_REQUIRE_REAL_PHOTOS=1 but {} is absent",
            dir.display()
        );
    }
    eprintln!(
        "SKIPPED {test}: no real photos at {} (set CATDOG_REAL_PHOTOS to a folder of them)",
        dir.display()
    );
    None
}

/// The weights file of the model folder `model`, as its `catdog.json` names it.
pub fn weights_file(model: &std::path::Path) -> PathBuf {
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(model.join("catdog.json")).unwrap()).unwrap();
    model.join(info["weights_file"].as_str().unwrap())
}

/// The safetensors header of the model in `model`, which names each tensor's dtype: after an
/// 8-byte length, that many bytes of JSON.
pub fn weights_header(model: &std::path::Path) -> String {
    let weights = std::fs::read(weights_file(model)).unwrap();
    let length = u64::from_le_bytes(weights[..8].try_into().unwrap()) as usize;
    String::from_utf8(weights[8..8 + length].to_vec()).unwrap()
}

/// Writes `count` striped pictures of `size` px into `out/cat` and `out/dog`, half of each:
/// cats' stripes run across, dogs' up and down, in two random colours of strong contrast, at
/// a random phase, with noise. A set the network learns in an epoch or two, where the drawn
/// faces of `catdog synth` take many epochs of larger pictures: cheap enough for lavapipe.
pub fn striped_pictures(out: &Path, count: usize, size: u32) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    for (class, across) in [("cat", true), ("dog", false)] {
        std::fs::create_dir_all(out.join(class)).unwrap();
        for index in 0..count / 2 {
            let first: [u8; 3] = rng.random();
            let second = first.map(|c| c.wrapping_add(rng.random_range(88..=168)));
            let phase: u32 = rng.random_range(0..4);
            let picture = image::RgbImage::from_fn(size, size, |x, y| {
                let along = if across { y } else { x } + phase;
                let colour = if (along / 2).is_multiple_of(2) {
                    first
                } else {
                    second
                };
                image::Rgb(colour.map(|c| c.saturating_add_signed(rng.random_range(-30..=30))))
            });
            picture
                .save(out.join(class).join(format!("{index:05}.png")))
                .unwrap();
        }
    }
}

/// `catdog train` on wgpu in `precision` over the pictures in `data` (see
/// [`striped_pictures`]), small enough for lavapipe: 16 px, 3 epochs of batch 4 (the size
/// tests/bench.rs tunes f32 kernels for, so that an f32 run here tunes nothing new), a quarter
/// held out, seed 5, the report as JSON, the model into `out`.
pub fn gpu_train_args(precision: &str, data: &Path, out: &Path) -> Vec<String> {
    let args = [
        "train",
        "--backend",
        "wgpu",
        "--precision",
        precision,
        "--image-size",
        "16",
        "--epochs",
        "3",
        "--batch-size",
        "4",
        "--val-split",
        "0.25",
        "--seed",
        "5",
        "--json",
    ];
    let paths = [("--data", data), ("--out", out)];
    args.iter()
        .map(|s| s.to_string())
        .chain(
            paths
                .iter()
                .flat_map(|(flag, path)| [flag.to_string(), path.display().to_string()]),
        )
        .collect()
}

/// The probability of "cat" that the model in `model`, run on wgpu in `precision`, gives each
/// picture in `pictures`.
pub fn gpu_cat_probabilities(model: &Path, pictures: &Path, precision: &str) -> Vec<f64> {
    let output = command()
        .args(["predict", "--backend", "wgpu", "--precision", precision])
        .args(["--json", "--model"])
        .args([model, pictures])
        .output()
        .unwrap();
    assert_success(&output);
    stdout(&output)
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["probabilities"]["cat"]
                .as_f64()
                .unwrap()
        })
        .collect()
}

/// The `catdog` binary, to be given arguments and started.
pub fn command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_catdog"))
}

/// Runs the `catdog` binary with `args` and waits for it.
pub fn catdog(args: &[&str]) -> Output {
    command()
        .args(args)
        .output()
        .expect("the catdog binary runs")
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

/// `strace`, where it is installed and may trace (a container may forbid ptrace). Skips,
/// saying why, where it cannot run, unless `CATDOG_REQUIRE_STRACE=1`.
pub fn strace_or_skip(test: &str) -> bool {
    let works = Command::new("strace")
        .args(["-o", "/dev/null", "true"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !works {
        if required("CATDOG_REQUIRE_STRACE") {
            panic!("CATDOG_REQUIRE_STRACE=1 but strace cannot run here");
        }
        eprintln!("SKIPPED {test}: strace cannot run here (install strace)");
    }
    works
}
