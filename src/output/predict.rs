//! `catdog predict`: a line per photo, or a JSON object per photo.

use serde_json::{Value, json};

use super::lossy;
use crate::inference::Prediction;
use crate::model::ModelChoice;

/// `photo.jpg  dog  0.93`, or `photo.jpg  not sure (cat 0.58)` below the threshold, the path
/// padded to `path_width`.
pub fn prediction_line(prediction: &Prediction, path_width: usize) -> String {
    let path = prediction.path.display();
    format!("{path:<path_width$}  {}", answer_words(prediction))
}

/// `dog  0.93`, or `not sure (cat 0.58)` below the threshold, or `not sure (dog 0.97; unlike
/// the photos it learned from)` for an unusual photo, or `not a cat or a dog: looks like a
/// sports car` where ImageNet's classifier sees neither: what `predict` says of a photo.
pub fn answer_words(prediction: &Prediction) -> String {
    let (label, probability) = (&prediction.label, prediction.probability);
    if let Some(neither) = &prediction.neither {
        return neither_words(&neither.looks_like);
    }
    match (prediction.sure, prediction.unusual) {
        (true, _) => format!("{label}  {probability:.2}"),
        (false, false) => format!("not sure ({label} {probability:.2})"),
        (false, true) => {
            format!("not sure ({label} {probability:.2}; unlike the photos it learned from)")
        }
    }
}

/// `not a cat or a dog: looks like a sports car`.
pub fn neither_words(looks_like: &str) -> String {
    let article = match looks_like.chars().next() {
        Some(c) if "aeiouAEIOU".contains(c) => "an",
        _ => "a",
    };
    format!("{NEITHER}: looks like {article} {looks_like}")
}

/// What `predict` answers for a photo that is neither a cat nor a dog.
pub const NEITHER: &str = "not a cat or a dog";

/// `{"path": …, "answer": "dog", "not sure" or "not a cat or a dog", "label": …,
/// "probability": …, "sure": …, "unusual": …, "looks_like": "sports car" or null,
/// "cat_or_dog": ImageNet's probability of any cat or dog, or null, "probabilities": {"cat": …, "dog": …}, "model": …}`, the model as
/// [`super::model_name`] gives it; `label` is the most probable class, sure or not.
pub fn prediction_json(prediction: &Prediction, model: &ModelChoice) -> Value {
    let probabilities: serde_json::Map<String, Value> = prediction
        .probabilities
        .iter()
        .map(|(class, p)| (class.clone(), json!(p)))
        .collect();
    json!({
        "path": lossy(&prediction.path),
        "answer": match (&prediction.neither, prediction.sure) {
            (Some(_), _) => NEITHER,
            (None, true) => prediction.label.as_str(),
            (None, false) => "not sure",
        },
        "label": prediction.label,
        "probability": prediction.probability,
        "sure": prediction.sure,
        "unusual": prediction.unusual,
        "looks_like": prediction.neither.as_ref().map(|n| n.looks_like.as_str()),
        "cat_or_dog": prediction.cat_or_dog,
        "probabilities": probabilities,
        "model": super::model_name(model),
    })
}

/// `predicted 2,001 photos in 3.1 s: 645 photos/s, decoding included`.
pub fn prediction_speed(photos: usize, seconds: f64) -> String {
    format!(
        "predicted {} photos in {seconds:.1} s: {:.0} photos/s, decoding included",
        crate::numbers::format_count(photos as u64),
        photos as f64 / seconds.max(1e-9)
    )
}
