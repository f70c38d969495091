//! `catdog bench`'s results: a table with the article's comparison, Markdown, a bar chart.

use super::duration::{EPOCHS, KAGGLE_PHOTOS, training_time};
use crate::bench::{BenchReport, Measurement};
use crate::chart::{BarChart, BarGroup, format_number};
use crate::device::BackendKind;

/// The bench table, as rows of cells: backend, device, train, infer, and the speed-ups.
fn bench_rows(report: &BenchReport) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let header = vec![
        "backend",
        "device",
        "train photos/s",
        "infer photos/s",
        "× slowest CPU",
        "× fastest CPU",
    ];
    let cpu_rates: Vec<f64> = report
        .runs
        .iter()
        .filter(|r| r.backend != BackendKind::Wgpu)
        .map(|r| r.train_images_per_sec)
        .collect();
    let slowest = cpu_rates.iter().copied().reduce(f64::min);
    let fastest = cpu_rates.iter().copied().reduce(f64::max);
    let ratio = |base: Option<f64>, rate: f64| {
        base.map_or("-".to_string(), |b| format!("{:.1}×", rate / b))
    };
    let rows = report
        .runs
        .iter()
        .map(|run| {
            vec![
                run.backend.to_string(),
                run.device.clone(),
                with_spread(&run.train),
                with_spread(&run.infer),
                ratio(slowest, run.train_images_per_sec),
                ratio(fastest, run.train_images_per_sec),
            ]
        })
        .collect();
    (header, rows)
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
        "SmallCnn, {} px, batch {}, median of {} windows of ≥ {} s (min–max); CPU backends on {} threads\n",
        settings.image_size,
        settings.batch_size,
        settings.repeats,
        settings.seconds,
        report.machine.cpu.compute_threads
    );
    out.push_str(&line(header.iter().map(|h| h.to_string()).collect()));
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    let warmups: Vec<String> = report
        .runs
        .iter()
        .map(|run| format!("{} {:.1} s", run.backend, run.warmup_seconds))
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
                "{}: decode + resize {} photos/s; augmented batches from the pixel cache {} \
                 photos/s; training as `catdog train --augment` does (cache, prefetch, \
                 augmentation) {} photos/s, against {} on ready batches\n",
                run.backend,
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
/// or "in 3 days".
fn waiting_times(report: &BenchReport) -> String {
    let times: Vec<String> = report
        .runs
        .iter()
        .map(|run| {
            format!(
                "{} {}",
                run.backend,
                training_time(KAGGLE_PHOTOS, EPOCHS, run.train_images_per_sec)
            )
        })
        .collect();
    format!(
        "At these training speeds ({} px, batch {}), {EPOCHS} epochs over the {} photos of the \
         Kaggle set take: {} (the article: \"ready in 10 minutes\" on a GPU, \"in 3 days\" on \
         a CPU).",
        report.settings.image_size,
        report.settings.batch_size,
        format_number(KAGGLE_PHOTOS as f64),
        times.join(", ")
    )
}

/// The table as Markdown, one row per backend.
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
            "SmallCnn photos per second, {} px, batch {}",
            report.settings.image_size, report.settings.batch_size
        ),
        y_label: "photos per second".to_string(),
        series: vec!["training".to_string(), "inference".to_string()],
        groups: report
            .runs
            .iter()
            .map(|run| BarGroup {
                label: run.backend.to_string(),
                values: vec![run.train_images_per_sec, run.infer_images_per_sec],
            })
            .collect(),
    }
}

/// One plain sentence setting this machine's training figures beside the article's.
pub fn article_comparison(report: &BenchReport) -> String {
    let article = "The article: CPU ≈ 10, GPU ≈ 1,000 photos/s (100×).";
    let cpu = report
        .runs
        .iter()
        .filter(|r| r.backend != BackendKind::Wgpu)
        .max_by(|a, b| a.train_images_per_sec.total_cmp(&b.train_images_per_sec));
    let gpu = report.runs.iter().find(|r| r.hardware_gpu);
    let software = report
        .runs
        .iter()
        .find(|r| r.backend == BackendKind::Wgpu && !r.hardware_gpu);
    let machine = match (cpu, gpu) {
        (Some(cpu), Some(gpu)) => format!(
            "This machine: CPU {} photos/s ({}), GPU {} photos/s ({}): the GPU is {:.0}× faster.",
            format_number(cpu.train_images_per_sec),
            cpu.backend,
            format_number(gpu.train_images_per_sec),
            gpu.device,
            gpu.train_images_per_sec / cpu.train_images_per_sec
        ),
        (None, Some(gpu)) => format!(
            "This machine: GPU {} photos/s ({}); add --backends flex to compare the CPU.",
            format_number(gpu.train_images_per_sec),
            gpu.device
        ),
        (Some(cpu), None) => format!(
            "This machine: CPU {} photos/s ({}), and no hardware GPU to compare with{}.",
            format_number(cpu.train_images_per_sec),
            cpu.backend,
            software.map_or(String::new(), |s| format!(
                " (wgpu on {} is a software rasterizer on the same CPU: {} photos/s)",
                s.device,
                format_number(s.train_images_per_sec)
            ))
        ),
        (None, None) => format!(
            "This machine: no CPU backend and no hardware GPU were measured{}.",
            software.map_or(String::new(), |s| format!(
                " (wgpu on the software rasterizer {}: {} photos/s)",
                s.device,
                format_number(s.train_images_per_sec)
            ))
        ),
    };
    format!("{article} {machine}")
}
