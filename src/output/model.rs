//! Which model answered: the line `predict` and `eval` start with, and its name in JSON.

use crate::inference::Predictor;
use crate::model::{BUILTIN_HELD_OUT, BUILTIN_TRAINED_ON, ModelChoice, NetworkKind};
use crate::numbers::format_count;

/// `model: models/catdog (...)` or `model: built-in (...)`, with what it learned from and
/// how it did on the photos it held out.
pub fn model_line(predictor: &Predictor) -> String {
    let info = predictor.info();
    let accuracy = info.val_accuracy.map(|a| format!("{:.1} %", a * 100.0));
    match predictor.choice() {
        ModelChoice::Builtin => format!(
            "model: built-in, trained on {} Kaggle photos, {} right on the {} it held out",
            format_count(BUILTIN_TRAINED_ON as u64),
            accuracy.unwrap_or_else(|| "?".into()),
            format_count(BUILTIN_HELD_OUT as u64),
        ),
        ModelChoice::Folder(dir) => {
            let learned_from = match info.trained_on.as_ref().map(|t| t.data.as_ref()) {
                Some(Some(data)) => format!("trained on {}", data.display()),
                Some(None) => "trained on generated pictures".into(),
                None => format!("trained for {} epochs", info.epochs),
            };
            // SmallCnn, the default, goes unnamed.
            let learned_from = match info.network() {
                NetworkKind::SmallCnn => learned_from,
                other => format!("{}, {learned_from}", other.title()),
            };
            match accuracy {
                Some(accuracy) => format!(
                    "model: {} ({learned_from}, {accuracy} right on the photos it held out)",
                    dir.display()
                ),
                None => format!("model: {} ({learned_from})", dir.display()),
            }
        }
    }
}

/// The model's name in JSON: `"builtin"` or its folder.
pub fn model_name(choice: &ModelChoice) -> String {
    match choice {
        ModelChoice::Builtin => "builtin".into(),
        ModelChoice::Folder(dir) => super::lossy(dir),
    }
}

/// The two ways to a model that knows photos, for people whose model learned drawings.
pub const REAL_PHOTOS: &str = "For real photos: `catdog predict --model builtin PHOTO` (the \
    model built into catdog, trained on Kaggle photos), or train on real ones: \
    `catdog download oxford-pets`, then `catdog train --data data/oxford-pets`.";

/// For a model that learned from generated pictures, asked about photo files: what it knows
/// and how to get one that knows photos. `None` for any other model.
pub fn generated_model_note(predictor: &Predictor) -> Option<String> {
    let trained_on = predictor.info().trained_on.as_ref()?;
    if trained_on.data.is_some() {
        return None;
    }
    Some(format!(
        "note: this model learned from generated drawings of cat and dog faces, not from \
         photos: on real photos it is right about as often as a coin toss.\n{REAL_PHOTOS}"
    ))
}
