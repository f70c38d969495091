//! `catdog predict`: a line per photo, or a JSON object per photo.

use serde_json::{Value, json};

use super::lossy;
use crate::inference::Prediction;
use crate::model::ModelChoice;

/// `photo.jpg  dog  0.93`, the path padded to `path_width`.
pub fn prediction_line(prediction: &Prediction, path_width: usize) -> String {
    format!(
        "{:<path_width$}  {}  {:.2}",
        prediction.path.display(),
        prediction.label,
        prediction.probability
    )
}

/// `{"path": …, "label": …, "probability": …, "probabilities": {"cat": …, "dog": …},
/// "model": …}`, the model as [`super::model_name`] gives it.
pub fn prediction_json(prediction: &Prediction, model: &ModelChoice) -> Value {
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
        "model": super::model_name(model),
    })
}

/// `predicted 2,001 photos in 3.1 s: 645 photos/s, decoding included`.
pub fn prediction_speed(photos: usize, seconds: f64) -> String {
    format!(
        "predicted {} photos in {seconds:.1} s: {:.0} photos/s, decoding included",
        crate::chart::format_count(photos as u64),
        photos as f64 / seconds.max(1e-9)
    )
}
