//! `catdog train`'s report: a summary for people, or one JSON object.

use serde_json::{Value, json};

use super::duration::{EPOCHS, KAGGLE_PHOTOS, human_duration, training_time};
use super::lossy;
use super::verdict::{ARTICLE_CPU, ARTICLE_GPU};
use crate::chart::format_number;
use crate::device::Precision;
use crate::training::TrainReport;

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
        "Kept the last epoch".to_string()
    } else {
        format!("Kept epoch {} (the best on validation)", kept.epoch)
    };
    let first = report.epochs[0].train_images_per_sec;
    let speed = match report.epochs.len() {
        1 => format!("{first:.1} photos/s (one epoch, warm-up included)"),
        n => {
            let later = match n {
                2 => "epoch 2".to_string(),
                n => format!("the median of epochs 2–{n}"),
            };
            format!(
                "{:.1} photos/s ({later}; epoch 1, which includes the warm-up: {first:.1})",
                report.images_per_sec()
            )
        }
    };
    let calibration = report
        .calibration
        .map(|c| {
            let floor = if c.fitted < c.temperature {
                format!(
                    " (the best fit was {:.2}: catdog never makes a model surer than it is)",
                    c.fitted
                )
            } else {
                String::new()
            };
            format!(
                "\nIts probabilities are calibrated on those {} photos: logits divided by a \
                 temperature of {:.2}{floor}, calibration error {:.1} % → {:.1} %.",
                c.photos,
                c.temperature,
                c.error_before * 100.0,
                c.error_after * 100.0
            )
        })
        .unwrap_or_else(|| match report.val_images {
            0 => String::new(),
            _ => "\nNo temperature fitted: it answered every validation photo right, so they \
                  cannot say how sure it should be; it answers at temperature 1."
                .to_string(),
        });
    let took: f64 = report.epochs.iter().map(|e| e.train_seconds).sum();
    let waiting = format!(
        "The {} epochs over these {} photos took {}; at that speed, {EPOCHS} epochs over the {} \
         photos of the Kaggle set would take {} on this backend (at the article's rates, {} \
         on a CPU and {} on a GPU).",
        report.epochs.len(),
        report.train_images,
        human_duration(took),
        format_number(KAGGLE_PHOTOS as f64),
        training_time(KAGGLE_PHOTOS, EPOCHS, report.images_per_sec()),
        training_time(KAGGLE_PHOTOS, EPOCHS, ARTICLE_CPU),
        training_time(KAGGLE_PHOTOS, EPOCHS, ARTICLE_GPU)
    );
    format!(
        "Trained on {} photos of {} from {}{skipped}, {} epochs, backend {} on {}{}.\n\
         {decode}Training ran at {speed}.\n\
         {waiting}\n\
         {which}{accuracy}.{calibration}\n\
         Model saved in {}; try: catdog predict --model {} PHOTO",
        report.train_images,
        report.classes.join(" and "),
        report.data,
        report.epochs.len(),
        report.backend.kind,
        report.backend.device_name,
        match report.backend.precision {
            Precision::F32 => String::new(),
            other => format!(", in {} (the model is saved in f32)", other.name()),
        },
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
        "precision": report.backend.precision,
        "epochs": report.epochs.len(),
        "kept_epoch": kept.epoch,
        "train_images_per_sec": report.images_per_sec(),
        "first_epoch_images_per_sec": report.epochs[0].train_images_per_sec,
        "val_accuracy": kept.val_accuracy,
        "val_loss": kept.val_loss,
        "calibration": report.calibration,
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
