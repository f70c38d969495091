//! `catdog bench`'s results: a table with the article's comparison, Markdown, a bar chart.

use super::verdict::bench_verdict;
use crate::bench::{BenchReport, Measurement, best_run, cpu_range};
use crate::chart::{BarChart, BarGroup};
use crate::device::{BackendKind, Precision};
use crate::numbers::format_number;

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
            let cpu_rates = cpu_range(report, run.batch_size);
            let ratio = |base: Option<f64>| {
                base.map_or("-".to_string(), |b| {
                    format!("{:.1}×", run.train_images_per_sec / b)
                })
            };
            let is_best = several
                && best_run(report, run.backend).is_some_and(|best| std::ptr::eq(best, run));
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
                ratio(cpu_rates.map(|(slowest, _)| slowest)),
                ratio(cpu_rates.map(|(_, fastest)| fastest)),
            ]
        })
        .collect();
    (header, rows)
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

/// Why ndarray's figures are so far below flex's, for whoever compares the two.
const NDARRAY_IS_SLOW: &str = "ndarray (an older CPU backend, deprecated by burn) convolves \
    with a loop of scalar multiply-adds and takes the gradients from generic code that \
    convolves over the whole gradient image; flex, with catdog's faster convolutions, turns \
    all three into matrix products that use the CPU's vector instructions (Winograd's method \
    for the 3×3 ones).";

/// The bench result for people: the answer first ([`bench_verdict`]), then the table, the
/// warm-up times and the data pipeline's figures.
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
    let mut out = bench_verdict(report);
    out.push_str(&format!(
        "\nThe details: {}, {} px, {}, median of {} windows of ≥ {} s (min–max); CPU backends on {} \
         threads; {}\n",
        settings.network.title(),
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
    ));
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
                "{} at batch {} {:.1} s + {:.1} s",
                run.backend, run.batch_size, run.warmup_seconds, run.infer_warmup_seconds
            )
        })
        .collect();
    out.push_str(&format!(
        "Warm-up, untimed ({} training steps + as many inference batches; wgpu compiles and \
         tunes its kernels then, once per adapter): {}\n",
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
    out.truncate(out.trim_end().len());
    out
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
            "{} photos per second, {} px, {}",
            report.settings.network.title(),
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
