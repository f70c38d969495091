//! `catdog bench`'s results: a table with the article's comparison, Markdown, a bar chart.

use super::duration::{EPOCHS, KAGGLE_PHOTOS, training_time};
use crate::bench::{BackendRun, BenchReport, Measurement};
use crate::chart::{BarChart, BarGroup, format_number};
use crate::device::{BackendKind, Precision};

/// The bench table, as rows of cells: backend, device, batch, train, infer, and the speed-ups
/// over the CPU backends at the same batch size. With several batch sizes, each backend's
/// best training figure is marked "★ best".
fn bench_rows(report: &BenchReport) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let header = vec![
        "backend",
        "device",
        "batch",
        "train photos/s",
        "infer photos/s",
        "× slowest CPU",
        "× fastest CPU",
    ];
    let several = report.settings.batch_sizes.len() > 1;
    let rows = report
        .runs
        .iter()
        .map(|run| {
            let cpu_rates: Vec<f64> = report
                .runs
                .iter()
                .filter(|r| r.backend != BackendKind::Wgpu && r.batch_size == run.batch_size)
                .map(|r| r.train_images_per_sec)
                .collect();
            let ratio = |base: Option<f64>| {
                base.map_or("-".to_string(), |b| {
                    format!("{:.1}×", run.train_images_per_sec / b)
                })
            };
            let is_best = several && std::ptr::eq(best_run(report, run.backend), run);
            vec![
                match run.precision {
                    Precision::F32 => run.backend.to_string(),
                    other => format!("{} {}", run.backend, other.name()),
                },
                run.device.clone(),
                run.batch_size.to_string(),
                format!(
                    "{}{}",
                    with_spread(&run.train),
                    if is_best { " ★ best" } else { "" }
                ),
                with_spread(&run.infer),
                ratio(cpu_rates.iter().copied().reduce(f64::min)),
                ratio(cpu_rates.iter().copied().reduce(f64::max)),
            ]
        })
        .collect();
    (header, rows)
}

/// `backend`'s run with the most training photos per second, over every batch size.
fn best_run(report: &BenchReport, backend: BackendKind) -> &BackendRun {
    report
        .runs
        .iter()
        .filter(|r| r.backend == backend)
        .max_by(|a, b| a.train_images_per_sec.total_cmp(&b.train_images_per_sec))
        .expect("every backend measured has a run")
}

/// Each backend once, in the order measured: its best run.
fn best_runs(report: &BenchReport) -> Vec<&BackendRun> {
    let mut backends: Vec<BackendKind> = Vec::new();
    for run in &report.runs {
        if !backends.contains(&run.backend) {
            backends.push(run.backend);
        }
    }
    backends.into_iter().map(|b| best_run(report, b)).collect()
}

/// "batch 32", "batches 32, 128, 512".
fn batch_sizes(sizes: &[usize]) -> String {
    let list: Vec<String> = sizes.iter().map(usize::to_string).collect();
    match list.len() {
        1 => format!("batch {}", list[0]),
        _ => format!("batches {}", list.join(", ")),
    }
}

/// "183 (180–185)": the median, and the range of the windows.
fn with_spread(m: &Measurement) -> String {
    format!(
        "{} ({}–{})",
        format_number(m.median),
        format_number(m.min),
        format_number(m.max)
    )
}

/// The bench result for people: a table, the data pipeline figures, and the comparison
/// with the article.
/// Why ndarray's figures are so far below flex's, for whoever compares the two.
const NDARRAY_IS_SLOW: &str = "ndarray (deprecated in burn 0.22, kept as it is) convolves with \
    a loop of scalar multiply-adds and takes the gradients from burn's generic \
    conv_transpose2d and a convolution over the whole gradient image; flex, as patched in \
    vendor/burn-flex, uses im2col and SIMD matrix products for all three.";

pub fn bench_text(report: &BenchReport) -> String {
    let (header, rows) = bench_rows(report);
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let settings = &report.settings;
    let mut out = format!(
        "SmallCnn, {} px, {}, median of {} windows of ≥ {} s (min–max); CPU backends on {} \
         threads; {}\n",
        settings.image_size,
        batch_sizes(&settings.batch_sizes),
        settings.repeats,
        settings.seconds,
        report.machine.cpu.compute_threads,
        if settings.data_on_device {
            "batches uploaded once and kept on the device (--data-on-device)"
        } else {
            "each step makes its batch on the host and uploads it, as training does"
        }
    );
    out.push_str(&line(header.iter().map(|h| h.to_string()).collect()));
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    if report
        .runs
        .iter()
        .any(|r| r.backend == BackendKind::Ndarray)
    {
        out.push_str(NDARRAY_IS_SLOW);
        out.push('\n');
    }
    let warmups: Vec<String> = report
        .runs
        .iter()
        .map(|run| {
            format!(
                "{} at batch {} {:.1} s",
                run.backend, run.batch_size, run.warmup_seconds
            )
        })
        .collect();
    out.push_str(&format!(
        "Warm-up, untimed ({} steps; wgpu compiles and tunes its kernels then, once per \
         adapter): {}\n",
        settings.warmup_steps,
        warmups.join(", ")
    ));
    for run in &report.runs {
        if let (Some(decode), Some(cached), Some(e2e)) =
            (&run.decode, &run.cached_batches, &run.end_to_end_train)
        {
            out.push_str(&format!(
                "{} at batch {}: decode + resize {} photos/s; augmented batches from the pixel cache {} \
                 photos/s; training as `catdog train --augment` does (cache, prefetch, \
                 augmentation) {} photos/s, against {} on ready batches\n",
                run.backend,
                run.batch_size,
                with_spread(decode),
                with_spread(cached),
                with_spread(e2e),
                format_number(run.train_images_per_sec)
            ));
        }
    }
    if let Some(first) = report.skipped.first() {
        out.push_str(&format!(
            "Left out {} photos of {} that do not decode (the first: {}: {}).\n",
            report.skipped.len(),
            report
                .settings
                .data
                .as_deref()
                .map_or_else(String::new, |dir| dir.display().to_string()),
            first.path,
            first.reason
        ));
    }
    out.push_str(&article_comparison(report));
    out.push('\n');
    out.push_str(&waiting_times(report));
    out
}

/// What the measured speeds mean in waiting time, beside the article's "ready in 10 minutes"
/// or "in 3 days": each backend at its best batch size.
fn waiting_times(report: &BenchReport) -> String {
    let times: Vec<String> = best_runs(report)
        .into_iter()
        .map(|run| {
            format!(
                "{} {}{}",
                run.backend,
                training_time(KAGGLE_PHOTOS, EPOCHS, run.train_images_per_sec),
                if report.settings.batch_sizes.len() > 1 {
                    format!(" (batch {})", run.batch_size)
                } else {
                    String::new()
                }
            )
        })
        .collect();
    format!(
        "At these training speeds ({} px, {}), {EPOCHS} epochs over the {} photos of the \
         Kaggle set take: {} (the article: \"ready in 10 minutes\" on a GPU, \"in 3 days\" on \
         a CPU).",
        report.settings.image_size,
        match report.settings.batch_sizes.len() {
            1 => batch_sizes(&report.settings.batch_sizes),
            _ => "each at its best batch size".to_string(),
        },
        format_number(KAGGLE_PHOTOS as f64),
        times.join(", ")
    )
}

/// The table as Markdown, one row per backend and batch size.
pub fn bench_markdown(report: &BenchReport) -> String {
    let (header, rows) = bench_rows(report);
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!("|{}\n", " --- |".repeat(header.len())));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

/// The bench as a bar chart: training and inference photos/s per backend.
pub fn bench_chart(report: &BenchReport) -> BarChart {
    BarChart {
        title: format!(
            "SmallCnn photos per second, {} px, {}",
            report.settings.image_size,
            batch_sizes(&report.settings.batch_sizes)
        ),
        y_label: "photos per second".to_string(),
        series: vec!["training".to_string(), "inference".to_string()],
        groups: report
            .runs
            .iter()
            .map(|run| BarGroup {
                label: if report.settings.batch_sizes.len() > 1 {
                    format!("{} b{}", run.backend, run.batch_size)
                } else {
                    run.backend.to_string()
                },
                values: vec![run.train_images_per_sec, run.infer_images_per_sec],
            })
            .collect(),
    }
}

/// Plain sentences setting this machine's training figures beside the article's: at the
/// first batch size measured, every backend alike; with several, also each at its best.
fn article_comparison(report: &BenchReport) -> String {
    let article = "The article: CPU ≈ 10, GPU ≈ 1,000 photos/s (100×).";
    let first = report.settings.batch_sizes[0];
    let same_batch: Vec<&BackendRun> = report
        .runs
        .iter()
        .filter(|r| r.batch_size == first)
        .collect();
    let mut out = format!(
        "{article} This machine at batch {first}: {}",
        compare(&same_batch, false)
    );
    if report.settings.batch_sizes.len() > 1 {
        out.push_str(&format!(
            " Each at its best batch size: {}",
            compare(&best_runs(report), true)
        ));
    }
    out
}

/// The fastest CPU backend of `runs` against its hardware GPU, in one sentence.
fn compare(runs: &[&BackendRun], name_batches: bool) -> String {
    let batch = |run: &BackendRun| {
        if name_batches {
            format!(", batch {}", run.batch_size)
        } else {
            String::new()
        }
    };
    let cpu = runs
        .iter()
        .filter(|r| r.backend != BackendKind::Wgpu)
        .max_by(|a, b| a.train_images_per_sec.total_cmp(&b.train_images_per_sec));
    let gpu = runs.iter().find(|r| r.hardware_gpu);
    let software = runs
        .iter()
        .find(|r| r.backend == BackendKind::Wgpu && !r.hardware_gpu);
    let software_note = |before: &str| {
        software.map_or(String::new(), |s| {
            format!(
                " ({before} {}: {} photos/s{})",
                s.device,
                format_number(s.train_images_per_sec),
                batch(s)
            )
        })
    };
    match (cpu, gpu) {
        (Some(cpu), Some(gpu)) => format!(
            "CPU {} photos/s ({}{}), GPU {} photos/s ({}{}): the GPU is {:.0}× faster.",
            format_number(cpu.train_images_per_sec),
            cpu.backend,
            batch(cpu),
            format_number(gpu.train_images_per_sec),
            gpu.device,
            batch(gpu),
            gpu.train_images_per_sec / cpu.train_images_per_sec
        ),
        (None, Some(gpu)) => format!(
            "GPU {} photos/s ({}{}); add --backends flex to compare the CPU.",
            format_number(gpu.train_images_per_sec),
            gpu.device,
            batch(gpu)
        ),
        (Some(cpu), None) => format!(
            "CPU {} photos/s ({}{}), and no hardware GPU to compare with{}.",
            format_number(cpu.train_images_per_sec),
            cpu.backend,
            batch(cpu),
            software_note("wgpu on a software rasterizer on the same CPU,")
        ),
        (None, None) => format!(
            "no CPU backend and no hardware GPU were measured{}.",
            software_note("wgpu on the software rasterizer")
        ),
    }
}
