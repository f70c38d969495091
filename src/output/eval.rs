//! `catdog eval` for people (its JSON is the [`Evaluation`] itself).

use crate::inference::{Evaluation, Photos};

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
    out.push_str(&format!(
        "\nthe model ran at {:.0} photos/s (decoded photos to probabilities)",
        evaluation.infer_images_per_sec
    ));
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
