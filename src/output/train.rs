//! `catdog train`'s report: a summary for people, or one JSON object.

use serde_json::{Value, json};

use super::lossy;
use crate::bench::{ARTICLE_CPU, ARTICLE_GPU, EPOCHS, KAGGLE_PHOTOS, training_time};
use crate::device::Precision;
use crate::model::Calibration;
use crate::numbers::{format_count, format_number, human_duration};
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
                format_count(report.val_images as u64)
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
    // `--epochs 0`: one pass, epoch 0, which fitted the last layer alone.
    let alone = kept.is_last_layer_alone();
    let which = if alone {
        "The rest of the network is ImageNet's, unchanged".to_string()
    } else if kept.epoch == report.epochs.len() {
        "Kept the last epoch".to_string()
    } else {
        format!("Kept epoch {} (the best on validation)", kept.epoch)
    };
    let first = report.epochs[0].train_images_per_sec;
    let speed = match report.epochs.len() {
        _ if alone => format!("{first:.1} photos/s, the fit included"),
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
        .map(|c| calibration_sentence(&c))
        .unwrap_or_else(|| match report.val_images {
            0 => String::new(),
            _ => "\nIts probabilities are left as they are: it answered every validation photo \
                  right, so those photos cannot say how sure it should be."
                .to_string(),
        });
    let took: f64 = report.epochs.iter().map(|e| e.train_seconds).sum();
    let epochs = trained_epochs(report);
    let waiting = if alone {
        // A pass without training steps says nothing about how long training takes.
        format!("It took {}.", human_duration(took))
    } else if report.train_images * epochs < TOO_FEW_TO_EXTRAPOLATE {
        format!(
            "The {} over these {} took {}: too little to tell how long a real job would take \
             (`catdog bench` measures that).",
            count(epochs, "epoch", "epochs"),
            count(report.train_images, "photo", "photos"),
            human_duration(took),
        )
    } else {
        format!(
            "The {} over these {} photos took {}; at that speed, {EPOCHS} epochs over the {} \
             photos of the Kaggle set would take {} on this backend (at the article's rates, {} \
             on a CPU and {} on a GPU).",
            count(epochs, "epoch", "epochs"),
            format_count(report.train_images as u64),
            human_duration(took),
            format_number(KAGGLE_PHOTOS as f64),
            training_time(KAGGLE_PHOTOS, EPOCHS, report.images_per_sec()),
            training_time(KAGGLE_PHOTOS, EPOCHS, ARTICLE_CPU),
            training_time(KAGGLE_PHOTOS, EPOCHS, ARTICLE_GPU)
        )
    };
    let (trained, ran) = match alone {
        true => (
            "Fitted the last layer to",
            "The pass over them and their mirror images",
        ),
        false => ("Trained on", "Training"),
    };
    format!(
        "{trained} {} photos of {} from {}{skipped}, {}, backend {} on {}{}.\n\
         {decode}{ran} ran at {speed}.\n\
         {waiting}\n\
         {which}{accuracy}.{calibration}\n\
         Model saved in {}; try: catdog predict --model {} PHOTO",
        format_count(report.train_images as u64),
        report.classes.join(" and "),
        report.data,
        match alone {
            true => "no training epochs".to_string(),
            false => count(epochs, "epoch", "epochs"),
        },
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

/// Epochs of training steps: none in a run of `--epochs 0`, whose one pass is epoch 0.
fn trained_epochs(report: &TrainReport) -> usize {
    report
        .epochs
        .iter()
        .filter(|e| !e.is_last_layer_alone())
        .count()
}

/// Photos trained on in all (over every epoch) below which the run's speed says too little to
/// extrapolate a 25,000-photo job from: ten steps of the default batch.
const TOO_FEW_TO_EXTRAPOLATE: usize = 320;

/// "1 epoch", "5 epochs".
fn count(n: usize, one: &str, many: &str) -> String {
    format!(
        "{} {}",
        format_count(n as u64),
        if n == 1 { one } else { many }
    )
}

/// How the run's probabilities were checked on its validation photos, in plain words: softened
/// where it was surer than right, left alone where it was less sure (catdog never makes a model
/// surer than it is).
fn calibration_sentence(c: &Calibration) -> String {
    let error = |e: f64| format!("{:.1} %", e * 100.0);
    let photos = count(c.photos, "validation photo", "validation photos");
    if c.temperature > 1.0 {
        format!(
            "\nOn its {photos} it was surer than it was right, so its probabilities are \
             softened (temperature {:.2}): calibration error {} → {}.",
            c.temperature,
            error(c.error_before),
            error(c.error_after)
        )
    } else if c.fitted < c.temperature {
        format!(
            "\nOn its {photos} it was less sure than it was right (calibration error {}); \
             catdog leaves its probabilities as they are rather than make it surer.",
            error(c.error_before)
        )
    } else {
        format!(
            "\nOn its {photos} its probabilities matched how often it was right (calibration \
             error {}).",
            error(c.error_before)
        )
    }
}

/// The machine-readable report of a training run.
pub fn train_json(report: &TrainReport) -> Value {
    let kept = report.kept_epoch();
    json!({
        "backend": report.backend.kind,
        "device": report.backend.device_name,
        "precision": report.backend.precision,
        "epochs": trained_epochs(report),
        "kept_epoch": kept.epoch,
        "last_layer_alone": kept.is_last_layer_alone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn calibration(temperature: f64, fitted: f64) -> Calibration {
        Calibration {
            temperature,
            fitted,
            photos: 200,
            error_before: 0.157,
            error_after: 0.021,
        }
    }

    #[test]
    fn the_calibration_sentence_says_what_was_done_in_plain_words() {
        let softened = calibration_sentence(&calibration(1.35, 1.35));
        assert!(
            softened.contains("surer than it was right")
                && softened.contains("temperature 1.35")
                && softened.contains("15.7 % → 2.1 %"),
            "{softened}"
        );
        // A best fit below 1 is not applied: no "15.7 % → 15.7 %", no temperature of 1.00.
        let left = calibration_sentence(&calibration(1.0, 0.34));
        assert!(
            left.contains("less sure than it was right (calibration error 15.7 %)")
                && !left.contains('→')
                && !left.contains("temperature"),
            "{left}"
        );
        let matched = calibration_sentence(&calibration(1.0, 1.0));
        assert!(
            matched.contains("matched how often it was right"),
            "{matched}"
        );
        assert_eq!(count(1, "epoch", "epochs"), "1 epoch");
        assert_eq!(count(2_000, "photo", "photos"), "2,000 photos");
    }
}
