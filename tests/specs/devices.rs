//! The machine as catdog sees it: `catdog devices` lists the CPU and the GPUs and says what
//! `--backend auto` picks; without a GPU, or with a Vulkan loader pointed at nothing, catdog
//! says so plainly and what to do; wgpu's tuned kernels are kept in catdog's cache folder.

use std::fs;

use serde_json::Value;

use crate::common::{
    Catdog, assert_fails_with, catdog, stderr, stdout, synth, train_one_epoch, wgpu_or_skip,
};

#[test]
fn devices_lists_the_cpu_and_says_what_auto_picks() {
    let devices: Value =
        serde_json::from_str(&stdout(&catdog().devices().json().succeeds())).unwrap();
    let cpu = &devices["cpu"];
    assert!(!cpu["model"].as_str().unwrap().is_empty());
    assert!(cpu["threads"].as_u64().unwrap() >= 1);
    assert!(cpu["memory_bytes"].as_u64().unwrap() > 0);
    let gpus = devices["gpus"].as_array().unwrap();
    for gpu in gpus {
        for field in ["name", "vendor", "kind", "api", "driver"] {
            assert!(gpu[field].is_string(), "{field} in {gpu}");
        }
    }
    let any_hardware = gpus
        .iter()
        .any(|gpu| gpu["kind"].as_str().unwrap() != "software");
    assert_eq!(devices["hardware_gpu"], any_hardware);
    let auto = devices["auto"]["backend"].as_str().unwrap();
    assert_eq!(auto == "wgpu", any_hardware, "{devices}");
    assert!(!devices["auto"]["reason"].as_str().unwrap().is_empty());

    // The adapter `--backend wgpu` opens, and what its kernels are compiled to: WGSL on a
    // software rasterizer (vendor/cubecl-wgpu/PATCHED.md), SPIR-V or WGSL on Vulkan.
    let wgpu = &devices["wgpu"];
    if gpus.is_empty() {
        assert!(wgpu.is_null(), "{devices}");
    } else if wgpu_or_skip("devices on wgpu").is_some() {
        let opened = wgpu["device"].as_str().unwrap();
        let features = &wgpu["features"];
        assert!(
            !features.is_null(),
            "this build has wgpu's runtime: {devices}"
        );
        let compiler = features["compiler"].as_str().unwrap();
        if opened.contains("software rasterizer") {
            assert_eq!(compiler, "WGSL", "{devices}");
        } else if opened.contains(" on Vulkan") {
            assert!(["SPIR-V", "WGSL"].contains(&compiler), "{devices}");
        }
        assert!(features["f16"].is_boolean(), "{devices}");
        assert!(features["cooperative_matrix"].is_boolean(), "{devices}");
    }

    let text = stdout(&catdog().devices().succeeds());
    if !wgpu["features"].is_null() {
        assert!(
            text.contains("kernels, cooperative matrix (tensor cores): "),
            "{text}"
        );
    }
    if !any_hardware {
        assert!(
            text.contains("No hardware GPU") || text.contains("GPU: none"),
            "{text}"
        );
    }
    assert!(text.contains("--backend auto"), "{text}");
    // The first line answers "does this computer have a GPU?".
    let first = text.lines().next().unwrap();
    match any_hardware {
        true => assert!(first.starts_with("GPU: yes, "), "{text}"),
        false => assert!(
            first.starts_with("No GPU found: catdog will use the CPU."),
            "{text}"
        ),
    }
}

/// On a machine without a desktop session, looking for a GPU prints no driver noise that
/// reads like catdog's own errors.
#[test]
fn looking_for_a_gpu_without_a_desktop_session_prints_no_driver_noise() {
    let output = catdog().devices().env_remove("XDG_RUNTIME_DIR").succeeds();
    let err = stderr(&output);
    assert!(!err.contains("XDG_RUNTIME_DIR"), "{err}");
}

#[test]
fn backend_gpu_without_a_gpu_suggests_the_cpu() {
    if let Some(gpu) = catdog::device::hardware_gpu() {
        eprintln!(
            "SKIPPED backend_gpu_without_a_gpu_suggests_the_cpu: this machine has {}",
            gpu.describe()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let output = catdog()
        .train()
        .backend("gpu")
        .out(dir.path())
        .fails_with("--backend cpu");
    assert!(stderr(&output).contains("no hardware GPU") || stderr(&output).contains("no GPU"));
    // The verb fits every command, not only training.
    let predict = catdog()
        .predict()
        .backend("gpu")
        .arg("--samples")
        .fails_with("Use --backend cpu to run on the CPU");
    assert!(
        !stderr(&predict).contains("to train"),
        "{}",
        stderr(&predict)
    );
}

/// The Vulkan loader pointed at a driver file that does not exist: `catdog devices` and
/// `--backend gpu` name the variable and say what to do, instead of only "no GPU".
#[test]
#[cfg(target_os = "linux")]
fn a_vulkan_loader_pointed_at_nothing_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("no-such-icd.json");
    let variable = format!("VK_ICD_FILENAMES={}", nowhere.display());
    let run = |command: Catdog| {
        command
            .env("VK_ICD_FILENAMES", &nowhere)
            .env_remove("VK_DRIVER_FILES")
            .run()
    };
    let devices: serde_json::Value =
        serde_json::from_slice(&run(catdog().devices().json()).stdout).unwrap();
    if devices["hardware_gpu"] == true {
        eprintln!("SKIPPED a_vulkan_loader_pointed_at_nothing_is_named: a GPU outside Vulkan");
        return;
    }
    let reason = devices["auto"]["reason"].as_str().unwrap();
    assert!(reason.contains(&variable), "{reason}");
    assert!(reason.contains("does not exist"), "{reason}");
    let out = dir.path().join("model");
    let train = run(catdog().train().backend("gpu").out(&out));
    assert_fails_with(&train, &variable);
    assert_fails_with(&train, "unset VK_ICD_FILENAMES");
    assert!(!out.exists());
}

/// wgpu's tuned kernels are kept in catdog's cache folder, whatever folder catdog starts in:
/// the first run on an adapter says it tunes them (`predict` too, which otherwise does not
/// name its backend), the next one that it reads them. Forward passes only, for a model
/// trained on flex: on lavapipe, tuning a training step's kernels takes minutes.
#[test]
fn gpu_kernels_are_tuned_once_and_kept_in_catdogs_cache() {
    if wgpu_or_skip("gpu_kernels_are_tuned_once_and_kept_in_catdogs_cache").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pictures = dir.path().join("pictures");
    let model = dir.path().join("model");
    synth(&pictures, 8, 16);
    train_one_epoch(&pictures, &model, 16).succeeds();
    let cache = dir.path().join("cache");
    // `command` on wgpu with the model, started in `dir` with `cache` as the user's cache
    // folder; it must succeed.
    let run = |command: Catdog| {
        let output = command
            .backend("wgpu")
            .model(&model)
            .current_dir(dir.path())
            .env("XDG_CACHE_HOME", &cache)
            .succeeds();
        stderr(&output)
    };
    let first = run(catdog().predict().arg(&pictures));
    assert!(
        first.contains("Tuning GPU kernels for this adapter, once"),
        "{first}"
    );
    let kernels = cache.join("catdog/gpu-kernels");
    let kept: Vec<_> = fs::read_dir(&kernels).unwrap().flatten().collect();
    assert!(!kept.is_empty(), "nothing kept in {}", kernels.display());
    let second = run(catdog().eval().data(&pictures));
    assert!(
        second.contains("backend: wgpu on ")
            && second.contains("tuned by an earlier run are read from")
            && !second.contains("Tuning GPU kernels"),
        "{second}"
    );
}
