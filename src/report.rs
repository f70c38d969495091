//! What the commands print: sentences for people, JSON for programs.

use std::path::Path;

use serde_json::{Value, json};

use crate::backend::{BackendKind, Plan};
use crate::bench::{BenchReport, Measurement};
use crate::chart::{BarChart, BarGroup, format_number};
use crate::evaluation::{Evaluation, Photos};
use crate::hardware::{CpuInfo, GpuAdapter};
use crate::predict::Prediction;
use crate::train::TrainReport;

/// The human summary of a training run.
pub fn train_summary(report: &TrainReport) -> String {
    let kept = report.kept_epoch();
    let accuracy = kept
        .val_accuracy
        .map(|a| {
            format!(
                "; validation accuracy {:.1} % on {} photos",
                a * 100.0,
                report.val_images
            )
        })
        .unwrap_or_default();
    let skipped = match report.skipped.len() {
        0 => String::new(),
        n => format!(" ({n} unreadable photos skipped)"),
    };
    let decode = report
        .decode_images_per_sec
        .map(|rate| format!("Decoding ran at {rate:.0} photos/s.\n"))
        .unwrap_or_default();
    let which = if kept.epoch == report.epochs.len() {
        "Last epoch".to_string()
    } else {
        format!("Kept epoch {} (the best on validation)", kept.epoch)
    };
    format!(
        "Trained on {} photos of {} from {}{skipped}, {} epochs, backend {} on {}.\n\
         {decode}{which}: {:.1} photos/s{accuracy}.\n\
         Model saved in {}; try: catdog predict --model {} PHOTO",
        report.train_images,
        report.classes.join(" and "),
        report.data,
        report.epochs.len(),
        report.backend.kind,
        report.backend.device_name,
        kept.train_images_per_sec,
        report.model_dir.display(),
        report.model_dir.display(),
    )
}

/// The machine-readable report of a training run.
pub fn train_json(report: &TrainReport) -> Value {
    let kept = report.kept_epoch();
    json!({
        "backend": report.backend.kind,
        "device": report.backend.device_name,
        "epochs": report.epochs.len(),
        "kept_epoch": kept.epoch,
        "train_images_per_sec": kept.train_images_per_sec,
        "val_accuracy": kept.val_accuracy,
        "val_loss": kept.val_loss,
        "train_loss": kept.train_loss,
        "model": lossy(&report.model_dir),
        "data": report.data,
        "classes": report.classes,
        "train_images": report.train_images,
        "val_images": report.val_images,
        "skipped": report.skipped.iter().map(|s| json!({"path": lossy(&s.path), "reason": s.reason})).collect::<Vec<_>>(),
        "decode_images_per_sec": report.decode_images_per_sec,
        "per_epoch": report.epochs,
    })
}

/// A path as JSON text: file names that are not UTF-8 get U+FFFD where a byte is invalid.
fn lossy(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// `photo.jpg  dog  0.93`, the path padded to `path_width`.
pub fn prediction_line(prediction: &Prediction, path_width: usize) -> String {
    format!(
        "{:<path_width$}  {}  {:.2}",
        prediction.path.display(),
        prediction.label,
        prediction.probability
    )
}

/// `{"path": …, "label": …, "probability": …, "probabilities": {"cat": …, "dog": …}}`
pub fn prediction_json(prediction: &Prediction) -> Value {
    let probabilities: serde_json::Map<String, Value> = prediction
        .probabilities
        .iter()
        .map(|(class, p)| (class.clone(), json!(p)))
        .collect();
    json!({
        "path": lossy(&prediction.path),
        "label": prediction.label,
        "probability": prediction.probability,
        "probabilities": probabilities,
    })
}

/// `catdog devices`: the CPU, every adapter wgpu sees, and what `--backend auto` picks.
/// `catdog eval` for people: accuracy, a line per class, the confusion matrix, the mistakes.
pub fn evaluation_text(evaluation: &Evaluation) -> String {
    let mut out = format!(
        "accuracy {:.1} % on {} photos",
        evaluation.accuracy * 100.0,
        evaluation.photos
    );
    if let Photos::HeldOut { val_split, seed } = evaluation.subset {
        out.push_str(&format!(
            ", those `catdog train --val-split {val_split} --seed {seed}` held out"
        ));
    }
    if evaluation.flip {
        out.push_str(", each averaged with its mirror image");
    }
    if evaluation.skipped_photos > 0 {
        out.push_str(&format!(
            " ({} skipped in the folder)",
            evaluation.skipped_photos
        ));
    }
    out.push_str("\n\nclass  photos  precision  recall\n");
    for figures in &evaluation.per_class {
        out.push_str(&format!(
            "{:<5}  {:>6}  {:>7.1} %  {:>4.1} %\n",
            figures.class,
            figures.photos,
            figures.precision * 100.0,
            figures.recall * 100.0
        ));
    }
    out.push_str("\nconfusion matrix (rows: the photo's class, columns: predicted)\n      ");
    for class in &evaluation.classes {
        out.push_str(&format!(" {class:>6}"));
    }
    for (class, row) in evaluation.classes.iter().zip(&evaluation.confusion_matrix) {
        out.push_str(&format!("\n{class:<6}"));
        for count in row {
            out.push_str(&format!(" {count:>6}"));
        }
    }
    out.push('\n');
    if !evaluation.most_confidently_wrong.is_empty() {
        out.push_str("\nmost confidently wrong:\n");
        for mistake in &evaluation.most_confidently_wrong {
            out.push_str(&format!(
                "  {}  is {}, predicted {} ({:.2})\n",
                mistake.path, mistake.label, mistake.predicted, mistake.probability
            ));
        }
    }
    out
}

pub fn devices_text(cpu: &CpuInfo, adapters: &[&GpuAdapter], auto: &Plan) -> String {
    let mut out = format!(
        "CPU: {}, {} cores, {} threads (the CPU backends compute on {}), {:.1} GiB memory\n",
        cpu.model,
        cpu.cores.map_or_else(|| "?".to_string(), |c| c.to_string()),
        cpu.threads,
        cpu.compute_threads,
        cpu.memory_bytes as f64 / (1u64 << 30) as f64
    );
    if adapters.is_empty() {
        out.push_str(
            "GPU: none. wgpu finds no graphics adapter (no Vulkan, Metal or DX12 driver).\n",
        );
    } else {
        out.push_str("Graphics adapters wgpu finds:\n");
        for adapter in adapters {
            out.push_str(&format!(
                "  {}; vendor {}, driver {}\n",
                adapter.describe(),
                adapter.vendor,
                if adapter.driver.is_empty() {
                    "unknown"
                } else {
                    &adapter.driver
                }
            ));
        }
        if !adapters.iter().any(|a| a.kind.is_hardware()) {
            out.push_str("No hardware GPU: only software rasterizers, which run on the CPU.\n");
        }
    }
    out.push_str(&format!(
        "--backend auto uses {}. {}",
        auto.kind, auto.reason
    ));
    out
}

/// `catdog devices --json`.
pub fn devices_json(cpu: &CpuInfo, adapters: &[&GpuAdapter], auto: &Plan) -> Value {
    json!({
        "cpu": cpu,
        "gpus": adapters,
        "hardware_gpu": adapters.iter().any(|a| a.kind.is_hardware()),
        "auto": {"backend": auto.kind, "reason": auto.reason},
    })
}

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
    out.push_str(&article_comparison(report));
    out
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
