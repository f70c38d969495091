//! `catdog eval` for people (its JSON is the [`Evaluation`] itself), and its reliability
//! diagram.

use crate::chart::{ConfidenceBand, ReliabilityDiagram};
use crate::inference::{Evaluation, Photos, SURE};
use crate::numbers::format_count;

/// `catdog eval` for people: accuracy, a line per class, the confusion matrix, the mistakes.
pub fn evaluation_text(evaluation: &Evaluation) -> String {
    let mut out = format!(
        "accuracy {:.1} % on {} photos",
        evaluation.accuracy * 100.0,
        format_count(evaluation.photos as u64)
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
    out.push_str(&format!(
        "\nthe model ran at {:.0} photos/s (decoded photos to probabilities)",
        evaluation.infer_images_per_sec
    ));
    out.push_str(&calibration_text(evaluation));
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

/// How far its probabilities can be trusted: the calibration error, the wrong answers it was
/// sure of, and how the "not sure" answers compare with the others.
fn calibration_text(evaluation: &Evaluation) -> String {
    let temperature = match evaluation.temperature {
        None => "no temperature fitted".to_string(),
        Some(t) => format!("logits divided by the temperature {t:.2} fitted in training"),
    };
    let mut out = format!(
        "\ncalibration error {:.1} % ({temperature}; 0 % means a photo called 0.9 is right 9 \
         times in 10)\nwrong answers with a probability of {SURE:.2} or more: {} of {} photos",
        evaluation.reliability.error * 100.0,
        format_count(evaluation.wrong_and_sure as u64),
        format_count(evaluation.photos as u64),
    );
    let not_sure = &evaluation.not_sure;
    let unusual = evaluation.unusual;
    if not_sure.threshold > 0.0 || unusual.is_some() || evaluation.neither.is_some() {
        let share = not_sure.photos as f64 / evaluation.photos.max(1) as f64;
        let or_unusual = match (unusual, evaluation.neither) {
            (Some(_), _) => " or unlike the photos it learned from",
            (None, Some(_)) => " or neither a cat nor a dog",
            (None, None) => "",
        };
        out.push_str(&format!(
            "\n\"not sure\" (below {:.2}{or_unusual}): {} photos ({:.1} %), {:.1} % of them \
             right; the other answers {:.1} % right",
            not_sure.threshold,
            format_count(not_sure.photos as u64),
            share * 100.0,
            not_sure.accuracy * 100.0,
            not_sure.sure_accuracy * 100.0
        ));
    }
    if let Some(unusual) = unusual {
        let share = unusual.photos as f64 / evaluation.photos.max(1) as f64;
        out.push_str(&format!(
            "\nunlike the photos it learned from: {} photos ({:.1} %), {:.1} % of them right",
            format_count(unusual.photos as u64),
            share * 100.0,
            unusual.accuracy * 100.0,
        ));
    }
    if let Some(neither) = evaluation.neither {
        let share = neither.photos as f64 / evaluation.photos.max(1) as f64;
        out.push_str(&format!(
            "\ncalled neither a cat nor a dog: {} photos ({:.1} %), its class right on {:.1} % \
             of them",
            format_count(neither.photos as u64),
            share * 100.0,
            neither.accuracy * 100.0,
        ));
    }
    out
}

/// The reliability diagram of `evaluation`, for `catdog eval --calibration`.
pub fn reliability_diagram(evaluation: &Evaluation) -> ReliabilityDiagram {
    ReliabilityDiagram {
        title: format!(
            "{} photos: calibration error {:.1} %",
            format_count(evaluation.photos as u64),
            evaluation.reliability.error * 100.0
        ),
        bands: evaluation
            .reliability
            .bins
            .iter()
            .map(|bin| ConfidenceBand {
                low: bin.low,
                high: bin.high,
                photos: bin.photos,
                confidence: bin.mean_confidence,
                accuracy: bin.accuracy,
            })
            .collect(),
        lowest: 1.0 / evaluation.classes.len().max(1) as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::{NotSure, Photos, Reliability};

    /// Counts read as people write them: 2,002 photos, not 2002.
    #[test]
    fn the_accuracy_line_groups_thousands() {
        let evaluation = Evaluation {
            subset: Photos::All,
            flip: true,
            photos: 2002,
            accuracy: 0.99,
            classes: vec!["cat".into(), "dog".into()],
            confusion_matrix: vec![vec![1000, 1], vec![19, 982]],
            per_class: Vec::new(),
            most_confidently_wrong: Vec::new(),
            temperature: None,
            reliability: Reliability::of(&[(0.9, true)]),
            wrong_and_sure: 0,
            not_sure: NotSure::of(&[], 0.8),
            unusual: None,
            neither: None,
            infer_images_per_sec: 30.0,
            skipped: Vec::new(),
            skipped_photos: 0,
        };
        let text = evaluation_text(&evaluation);
        assert!(
            text.starts_with("accuracy 99.0 % on 2,002 photos"),
            "{text}"
        );
    }
}
