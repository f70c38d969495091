//! `catdog devices` and `catdog bench` end to end, with settings small enough for CI.

mod common;

use common::catdog;

use std::fs;

use serde_json::Value;

fn succeed(args: &[&str]) -> String {
    let output = catdog(args);
    assert!(
        output.status.success(),
        "catdog {args:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// `catdog bench` on `backends` with settings small enough for CI (16 px, batch 4, windows
/// of 0.2 s after one warm-up step), `repeats` windows per figure, then `extra` flags.
fn bench(backends: &str, repeats: u32, extra: &[&str]) -> String {
    let repeats = repeats.to_string();
    let mut args = vec![
        "bench",
        "--backends",
        backends,
        "--image-size",
        "16",
        "--batch-size",
        "4",
        "--seconds",
        "0.2",
        "--repeats",
        &repeats,
        "--warmup-steps",
        "1",
    ];
    args.extend_from_slice(extra);
    succeed(&args)
}

/// `catdog bench --network NETWORKS` at 32 px, ResNet-18's smallest, in batches of 2 with one
/// warm-up step and one short window, then `extra` flags.
fn at_32_px<'a>(networks: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "bench",
        "--network",
        networks,
        "--image-size",
        "32",
        "--batch-size",
        "2",
        "--seconds",
        "0.05",
        "--repeats",
        "1",
        "--warmup-steps",
        "1",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn devices_lists_the_cpu_and_says_what_auto_picks() {
    let devices: Value = serde_json::from_str(&succeed(&["devices", "--json"])).unwrap();
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
    } else if common::wgpu_or_skip("devices on wgpu").is_some() {
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

    let text = succeed(&["devices"]);
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

#[test]
fn bench_measures_every_backend_and_exports_json_markdown_and_charts() {
    let mut backends = vec!["flex", "ndarray"];
    if common::wgpu_or_skip("bench on wgpu").is_some() {
        backends.insert(0, "wgpu");
    }
    let dir = tempfile::tempdir().unwrap();
    let markdown = dir.path().join("bench.md");
    let svg = dir.path().join("bench.svg");
    let list = backends.join(",");
    let output = bench(
        &list,
        2,
        &[
            "--json",
            "--export-markdown",
            markdown.to_str().unwrap(),
            "--chart",
            svg.to_str().unwrap(),
        ],
    );

    let report: Value = serde_json::from_str(&output).expect("one JSON object");
    assert_eq!(report["settings"]["image_size"], 16);
    assert_eq!(report["settings"]["batch_sizes"], serde_json::json!([4]));
    assert_eq!(report["settings"]["data_on_device"], false);
    assert!(
        report["machine"]["cpu"]["compute_threads"]
            .as_u64()
            .unwrap()
            >= 1
    );
    let runs = report["runs"].as_array().unwrap();
    let names: Vec<&str> = runs
        .iter()
        .map(|run| run["backend"].as_str().unwrap())
        .collect();
    assert_eq!(names, backends);
    for run in runs {
        assert!(!run["device"].as_str().unwrap().is_empty());
        // Training and prediction each warmed up before their timing (wgpu tunes the kernels
        // of each at their first use).
        for warmup in ["warmup_seconds", "infer_warmup_seconds"] {
            assert!(run[warmup].as_f64().unwrap() > 0.0, "{warmup}: {run}");
        }
        for (figure, measurement) in [
            ("train_images_per_sec", "train"),
            ("infer_images_per_sec", "infer"),
        ] {
            let windows: Vec<f64> = run[measurement]["windows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_f64().unwrap())
                .collect();
            assert_eq!(windows.len(), 2, "{run}");
            assert!(windows.iter().all(|&w| w > 0.0), "{run}");
            let (min, max) = (
                run[measurement]["min"].as_f64().unwrap(),
                run[measurement]["max"].as_f64().unwrap(),
            );
            let median = run[figure].as_f64().unwrap();
            assert!(min <= median && median <= max, "{run}");
        }
    }

    let table = fs::read_to_string(&markdown).unwrap();
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 2 + backends.len(), "{table}");
    for backend in &backends {
        assert_eq!(
            rows.iter()
                .filter(|r| r.starts_with(&format!("| {backend} ")))
                .count(),
            1,
            "{table}"
        );
    }

    let chart = fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg") && chart.trim_end().ends_with("</svg>"));
    for backend in &backends {
        assert!(chart.contains(backend), "{backend} missing from the chart");
    }

    // The text says why ndarray is slow where it is measured, and only there.
    let why = "ndarray (an older CPU backend, deprecated by burn) convolves with";
    assert!(bench("ndarray", 1, &[]).contains(why));
    assert!(!bench("flex", 1, &[]).contains(why));
}

/// `--batch-size 2,4` measures both sizes, and the best one is the one marked; with
/// `--data-on-device` the batches are uploaded once, and the report says so.
#[test]
fn bench_measures_each_batch_size_and_marks_the_best() {
    let dir = tempfile::tempdir().unwrap();
    let markdown = dir.path().join("bench.md");
    let args = [
        "bench",
        "--backends",
        "flex",
        "--image-size",
        "16",
        "--batch-size",
        "2,4",
        "--data-on-device",
        "--seconds",
        "0.2",
        "--repeats",
        "1",
        "--warmup-steps",
        "1",
    ];
    let mut with_json = args.to_vec();
    with_json.extend(["--json", "--export-markdown", markdown.to_str().unwrap()]);
    let report: Value = serde_json::from_str(&succeed(&with_json)).unwrap();
    assert_eq!(report["settings"]["batch_sizes"], serde_json::json!([2, 4]));
    assert_eq!(report["settings"]["data_on_device"], true);
    assert_eq!(report["settings"]["network"], "small-cnn");
    let verdict = report["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("The answer: SmallCnn "), "{verdict}");
    let runs = report["runs"].as_array().unwrap();
    let batches: Vec<u64> = runs
        .iter()
        .map(|r| r["batch_size"].as_u64().unwrap())
        .collect();
    assert_eq!(batches, [2, 4], "{report}");
    let rate = |run: &Value| run["train_images_per_sec"].as_f64().unwrap();
    assert!(
        runs.iter()
            .all(|r| rate(r) > 0.0 && r["infer_images_per_sec"].as_f64().unwrap() > 0.0)
    );
    let best = runs
        .iter()
        .max_by(|a, b| rate(a).total_cmp(&rate(b)))
        .unwrap()["batch_size"]
        .as_u64()
        .unwrap();
    let table = fs::read_to_string(&markdown).unwrap();
    let marked: Vec<&str> = table.lines().filter(|l| l.contains("★ best")).collect();
    assert_eq!(marked.len(), 1, "{table}");
    assert!(marked[0].contains(&format!("| {best} |")), "{table}");

    let text = succeed(&args);
    assert!(text.contains("batches 2, 4"), "{text}");
    assert!(text.contains("kept on the device"), "{text}");
    assert!(
        text.contains("SmallCnn at 16 px, batch 2"),
        "the answer is for the first batch size: {text}"
    );
    assert!(text.contains("Each at its best batch size: CPU "), "{text}");
}

/// `--network resnet18`: every figure is ResNet-18's, and the answer says so; at 224 px it
/// is the article's kind of network (not measured here: minutes on 2 cores).
#[test]
fn bench_measures_resnet18_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("bench.svg");
    let chart = svg.to_str().unwrap();
    let text = succeed(&at_32_px(
        "resnet18",
        &["--backends", "flex,ndarray", "--chart", chart],
    ));
    assert!(
        text.contains("The answer: ResNet-18 training photos per second"),
        "{text}"
    );
    assert!(
        text.contains(
            "ResNet-18 at 32 px, the article's kind of network, batch 2, about 37 million"
        ),
        "{text}"
    );
    assert!(
        text.contains("for bigger pictures. ResNet-18 at 224 px needs about 49× the work"),
        "{text}"
    );
    assert!(text.contains("The details: ResNet-18, 32 px"), "{text}");
    assert!(report_rate(&text, "this CPU") > 0.0, "{text}");
    let chart = fs::read_to_string(&svg).unwrap();
    assert!(
        chart.contains("ResNet-18 photos per second, 32 px"),
        "{chart}"
    );

    // Without --backends, ndarray (minutes a step at 224 px) is left out, saying so.
    let output = catdog(&at_32_px("resnet18", &["--json"]));
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let backends: Vec<&str> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["backend"].as_str().unwrap())
        .collect();
    assert!(
        !backends.contains(&"ndarray") && backends.contains(&"flex"),
        "{backends:?}"
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("ndarray left out"), "{err}");

    // Both networks, one after the other, and both answers in one line at the end.
    let text = succeed(&at_32_px("small-cnn,resnet18", &["--backends", "flex"]));
    let small = text.find("The answer: SmallCnn").expect(&text);
    let resnet = text.find("The answer: ResNet-18").expect(&text);
    let line = text
        .find("In one line, training photos per second: ")
        .expect(&text);
    assert!(small < resnet && resnet < line, "{text}");
    let line = text[line..].lines().next().unwrap();
    assert!(
        line.contains("SmallCnn at 32 px, batch 2: CPU ")
            && line.contains("; ResNet-18 at 32 px, batch 2: CPU ")
            && line.ends_with("; the article: CPU 10, GPU 1,000."),
        "{line}"
    );
    let output = catdog(&[
        "bench",
        "--network",
        "small-cnn,resnet18",
        "--chart",
        "x.svg",
    ]);
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("take one network at a time"), "{err}");

    let output = catdog(&["bench", "--network", "resnet18", "--image-size", "16"]);
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("at least 32 px for ResNet-18, not 16"),
        "{err}"
    );
}

#[test]
fn bench_chart_as_png_and_its_text_report() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("bench.png");
    let text = bench("flex", 1, &["--chart", png.to_str().unwrap()]);
    assert!(text.contains("flex"), "{text}");
    // The answer comes first: this CPU's photos/s, the GPU's (none here, or lavapipe's), the
    // article's, and one job's waiting time at each, before the table's details.
    assert!(text.starts_with("The answer: "), "{text}");
    let flex = report_rate(&text, "this CPU");
    assert!(flex > 0.0, "{text}");
    assert!(text.contains("this GPU"), "{text}");
    assert!(
        text.contains("the article CPU ≈ 10") && text.contains("GPU ≈ 1,000 photos/s"),
        "{text}"
    );
    assert!(
        text.contains("One job, 10 epochs over the 25,000 photos of the Kaggle set, takes ")
            && text.contains(
                " on this CPU; at the article's rates, 6 h 56 min on its CPU and 4 min on its GPU."
            ),
        "the same job at every rate:\n{text}"
    );
    assert!(
        text.find("The answer").unwrap() < text.find("The details").unwrap(),
        "{text}"
    );
    assert!(
        text.contains("threads"),
        "the CPU thread count is printed:\n{text}"
    );
    let decoded = image::open(&png).expect("a valid PNG");
    assert!(decoded.width() > 100 && decoded.height() > 100);
}

/// Settings within every range whose training step would not fit in memory are refused at
/// once, with what it would take, instead of growing until the machine ends the process.
#[test]
fn a_step_larger_than_memory_is_refused_before_any_work() {
    let output = catdog(&[
        "bench",
        "--backends",
        "flex",
        "--image-size",
        "1024",
        "--batch-size",
        "4096",
    ]);
    common::assert_fails_with(&output, "more than half of this computer's");
    common::assert_fails_with(&output, "4096 pictures of 1024 px");
    // wgpu on a software rasterizer computes in this machine's memory too.
    if common::wgpu_or_skip("a step larger than memory on a software wgpu").is_some()
        && catdog::device::hardware_gpu().is_none()
    {
        let output = catdog(&[
            "bench",
            "--backends",
            "wgpu",
            "--image-size",
            "1024",
            "--batch-size",
            "4096",
        ]);
        common::assert_fails_with(&output, "more than half of this computer's");
    }
}

#[test]
fn bench_with_data_times_decoding_the_cache_and_training_as_train_does() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("photos");
    succeed(&[
        "synth",
        "--out",
        data.to_str().unwrap(),
        "--count",
        "40",
        "--size",
        "48",
    ]);
    // Broken photos are left out of the timing, as `catdog train` leaves them out.
    fs::write(data.join("cat/empty.jpg"), b"").unwrap();
    fs::write(data.join("dog/not-a-photo.png"), b"plain text").unwrap();
    let report: Value = serde_json::from_str(&bench(
        "flex",
        2,
        &["--data", data.to_str().unwrap(), "--json"],
    ))
    .unwrap();
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(skipped[0].ends_with("empty.jpg") && skipped[1].ends_with("not-a-photo.png"));
    let text = bench("flex", 1, &["--data", data.to_str().unwrap()]);
    assert!(text.contains("Left out 2 photos"), "{text}");
    let run = &report["runs"][0];
    for figure in ["decode", "cached_batches", "end_to_end_train"] {
        let windows = run[figure]["windows"].as_array().unwrap();
        assert_eq!(windows.len(), 2, "{figure}: {run}");
        assert!(
            run[figure]["median"].as_f64().unwrap() > 0.0,
            "{figure}: {run}"
        );
    }
    assert!(
        !data.join(".catdog-cache").exists(),
        "the pixel cache is not written among the photos"
    );
}

/// wgpu's tuned kernels are kept in catdog's cache folder, whatever folder catdog starts in:
/// the first run on an adapter says it tunes them (`predict` too, which otherwise does not
/// name its backend), the next one that it reads them. Forward passes only, for a model
/// trained on flex: on lavapipe, tuning a training step's kernels takes minutes.
#[test]
fn gpu_kernels_are_tuned_once_and_kept_in_catdogs_cache() {
    if common::wgpu_or_skip("gpu_kernels_are_tuned_once_and_kept_in_catdogs_cache").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pictures = dir.path().join("pictures");
    let model = dir.path().join("model");
    let (pictures, model) = (pictures.to_str().unwrap(), model.to_str().unwrap());
    succeed(&["synth", "--out", pictures, "--count", "8", "--size", "16"]);
    succeed(&[
        "train",
        "--data",
        pictures,
        "--backend",
        "flex",
        "--epochs",
        "1",
        "--image-size",
        "16",
        "--out",
        model,
    ]);
    let cache = dir.path().join("cache");
    let run = |command: &str, photos: &[&str]| {
        let output = common::command()
            .args([command, "--backend", "wgpu", "--model", model])
            .args(photos)
            .current_dir(dir.path())
            .env("XDG_CACHE_HOME", &cache)
            .output()
            .unwrap();
        common::assert_success(&output);
        common::stderr(&output)
    };
    let first = run("predict", &[pictures]);
    assert!(
        first.contains("Tuning GPU kernels for this adapter, once"),
        "{first}"
    );
    let kernels = cache.join("catdog/gpu-kernels");
    let kept: Vec<_> = fs::read_dir(&kernels).unwrap().flatten().collect();
    assert!(!kept.is_empty(), "nothing kept in {}", kernels.display());
    let second = run("eval", &["--data", pictures]);
    assert!(
        second.contains("backend: wgpu on ")
            && second.contains("tuned by an earlier run are read from")
            && !second.contains("Tuning GPU kernels"),
        "{second}"
    );
}

/// The photos/s on the verdict's line that starts with `label`: "  this CPU    716 photos/s …".
fn report_rate(text: &str, label: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no line {label:?} in:\n{text}"));
    let figure = line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .unwrap();
    figure
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("{line}"))
}
