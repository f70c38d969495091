//! Optional parts of the machine: wgpu, a browser, strace and the real photos. Each test that
//! needs one skips, saying why, where it is absent, unless CI asks for it
//! (`CATDOG_REQUIRE_WGPU=1` and the like), which makes its absence a failure.

use std::path::PathBuf;
use std::process::Command;

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
