//! `catdog bench`, with settings small enough for CI: every backend measured and exported as
//! JSON, Markdown and charts, batch sizes compared, ResNet-18 named, the answer first, photo
//! folders timed as `train` reads them, and steps too large for memory refused.

use std::fs;

use serde_json::Value;

use crate::common::{Catdog, assert_fails_with, catdog, stdout, synth, wgpu_or_skip};

/// Runs `command`; it must succeed. What it printed on stdout.
fn succeed(command: Catdog) -> String {
    stdout(&command.succeeds())
}

/// `catdog bench` on `backends` with settings small enough for CI (16 px, batch 4, windows
/// of 0.2 s after one warm-up step), `repeats` windows per figure.
fn bench(backends: &str, repeats: u32) -> Catdog {
    catdog()
        .bench()
        .args(["--backends", backends])
        .size(16)
        .batch_size(4)
        .args(["--seconds", "0.2", "--repeats", &repeats.to_string()])
        .args(["--warmup-steps", "1"])
}

/// `catdog bench --network NETWORKS` at 32 px, ResNet-18's smallest, in batches of 2 with one
/// warm-up step and one short window.
fn at_32_px(networks: &str) -> Catdog {
    catdog()
        .bench()
        .args(["--network", networks])
        .size(32)
        .batch_size(2)
        .args(["--seconds", "0.05", "--repeats", "1", "--warmup-steps", "1"])
}

#[test]
fn bench_measures_every_backend_and_exports_json_markdown_and_charts() {
    let mut backends = vec!["flex", "ndarray"];
    if wgpu_or_skip("bench on wgpu").is_some() {
        backends.insert(0, "wgpu");
    }
    let dir = tempfile::tempdir().unwrap();
    let markdown = dir.path().join("bench.md");
    let svg = dir.path().join("bench.svg");
    let list = backends.join(",");
    let output = succeed(
        bench(&list, 2)
            .json()
            .arg("--export-markdown")
            .arg(&markdown)
            .arg("--chart")
            .arg(&svg),
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
}

/// The text says why ndarray is slow where it is measured, and only there.
#[test]
fn bench_says_why_ndarray_is_slow_only_where_it_is_measured() {
    let why = "ndarray (an older CPU backend, deprecated by burn) convolves with";
    assert!(succeed(bench("ndarray", 1)).contains(why));
    assert!(!succeed(bench("flex", 1)).contains(why));
}

/// `--batch-size 2,4` measures both sizes, and the best one is the one marked; with
/// `--data-on-device` the batches are uploaded once, and the report says so.
#[test]
fn bench_measures_each_batch_size_and_marks_the_best() {
    let dir = tempfile::tempdir().unwrap();
    let markdown = dir.path().join("bench.md");
    let both_sizes = || {
        catdog()
            .bench()
            .args(["--backends", "flex"])
            .size(16)
            .args(["--batch-size", "2,4", "--data-on-device"])
            .args(["--seconds", "0.2", "--repeats", "1", "--warmup-steps", "1"])
    };
    let with_json = both_sizes().json().arg("--export-markdown").arg(&markdown);
    let report: Value = serde_json::from_str(&succeed(with_json)).unwrap();
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

    let text = succeed(both_sizes());
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
    let text = succeed(
        at_32_px("resnet18")
            .args(["--backends", "flex,ndarray"])
            .arg("--chart")
            .arg(&svg),
    );
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
}

/// Without --backends, ndarray (minutes a step at 224 px) is left out of ResNet-18's
/// measures, saying so.
#[test]
fn bench_leaves_ndarray_out_of_resnet18_unless_asked() {
    let output = at_32_px("resnet18").json().run();
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
}

/// Both networks, one after the other, and both answers in one line at the end.
#[test]
fn bench_measures_both_networks_and_answers_in_one_line() {
    let text = succeed(at_32_px("small-cnn,resnet18").args(["--backends", "flex"]));
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
}

/// A chart takes one network at a time, and ResNet-18 at least 32 px.
#[test]
fn bench_refuses_a_chart_of_two_networks_and_resnet18_below_32_px() {
    let output = catdog()
        .bench()
        .args(["--network", "small-cnn,resnet18", "--chart", "x.svg"])
        .run();
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("take one network at a time"), "{err}");

    let output = catdog()
        .bench()
        .args(["--network", "resnet18"])
        .size(16)
        .run();
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
    let text = succeed(bench("flex", 1).arg("--chart").arg(&png));
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
    let huge_step = |backend: &str| {
        catdog()
            .bench()
            .args(["--backends", backend])
            .size(1024)
            .batch_size(4096)
            .run()
    };
    let output = huge_step("flex");
    assert_fails_with(&output, "more than half of this computer's");
    assert_fails_with(&output, "4096 pictures of 1024 px");
    // wgpu on a software rasterizer computes in this machine's memory too.
    if wgpu_or_skip("a step larger than memory on a software wgpu").is_some()
        && catdog::device::hardware_gpu().is_none()
    {
        let output = huge_step("wgpu");
        assert_fails_with(&output, "more than half of this computer's");
    }
}

#[test]
fn bench_with_data_times_decoding_the_cache_and_training_as_train_does() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("photos");
    synth(&data, 40, 48);
    // Broken photos are left out of the timing, as `catdog train` leaves them out.
    fs::write(data.join("cat/empty.jpg"), b"").unwrap();
    fs::write(data.join("dog/not-a-photo.png"), b"plain text").unwrap();
    let report: Value =
        serde_json::from_str(&succeed(bench("flex", 2).data(&data).json())).unwrap();
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(skipped[0].ends_with("empty.jpg") && skipped[1].ends_with("not-a-photo.png"));
    let text = succeed(bench("flex", 1).data(&data));
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
