//! Prediction: a saved model and a photo in, the class and its probability out.

use std::path::{Path, PathBuf};

use anyhow::Result;
use burn::tensor::activation::softmax;
use burn::tensor::{Device, Tensor};
use rayon::prelude::*;

use crate::backend::Backend;
use crate::batch::Normalization;
use crate::decode::decode_photo;
use crate::model::SmallCnn;
use crate::saved_model::{self, ModelInfo};

/// Photos sent to the device at once.
const BATCH: usize = 64;

/// What the model thinks one photo shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    pub path: PathBuf,
    /// The most probable class.
    pub label: String,
    pub probability: f32,
    /// Every class with its probability, in class order.
    pub probabilities: Vec<(String, f32)>,
}

/// A saved model loaded on a backend.
pub struct Predictor {
    model: SmallCnn,
    info: ModelInfo,
    device: Device,
    flip: bool,
}

impl Predictor {
    /// Loads the model folder `dir` onto `backend`, whichever backend trained it.
    pub fn load(dir: &Path, backend: &Backend) -> Result<Predictor> {
        let (model, info) = saved_model::load(dir, &backend.device)?;
        Ok(Predictor {
            model,
            info,
            device: backend.device.clone(),
            flip: false,
        })
    }

    /// Averages each photo's probabilities with those of its mirror image (test-time
    /// augmentation): twice the work for a steadier answer.
    pub fn with_flip(self, flip: bool) -> Predictor {
        Predictor { flip, ..self }
    }

    pub fn flip(&self) -> bool {
        self.flip
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Predicts each photo; a photo that cannot be read gets its own error, the others
    /// are still predicted. Results come in the order of `paths`.
    pub fn predict_files(&self, paths: &[PathBuf]) -> Vec<Result<Prediction>> {
        let mut results = Vec::with_capacity(paths.len());
        for chunk in paths.chunks(BATCH) {
            let decoded: Vec<Result<Vec<u8>>> = chunk
                .par_iter()
                .map(|path| decode_photo(path, self.info.image_size))
                .collect();
            let pixels: Vec<&[u8]> = decoded.iter().filter_map(|d| d.as_deref().ok()).collect();
            let mut probabilities = self.probabilities(&pixels).into_iter();
            for (path, decoded) in chunk.iter().zip(decoded) {
                results.push(decoded.map(|_| {
                    let probabilities = probabilities.next().expect("one row per decoded photo");
                    self.prediction(path, probabilities)
                }));
            }
        }
        results
    }

    /// Class probabilities of images already at the model's size (`size × size × 3` bytes).
    pub fn probabilities(&self, images: &[&[u8]]) -> Vec<Vec<f32>> {
        class_probabilities(
            &self.model,
            images,
            self.info.image_size,
            &self.info.normalization,
            &self.device,
            self.flip,
        )
    }

    fn prediction(&self, path: &Path, probabilities: Vec<f32>) -> Prediction {
        let (best, probability) = most_probable(&probabilities);
        Prediction {
            path: path.to_path_buf(),
            label: self.info.classes[best].clone(),
            probability,
            probabilities: self
                .info
                .classes
                .iter()
                .cloned()
                .zip(probabilities)
                .collect(),
        }
    }
}

/// The index and probability of the most probable class.
pub fn most_probable(probabilities: &[f32]) -> (usize, f32) {
    probabilities
        .iter()
        .copied()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, 0.0))
}

/// Softmax of `model`'s logits for `images`, one row per image; with `flip`, the mean of
/// that and the softmax for the images mirrored left to right.
pub fn class_probabilities(
    model: &SmallCnn,
    images: &[&[u8]],
    size: u32,
    normalization: &Normalization,
    device: &Device,
    flip: bool,
) -> Vec<Vec<f32>> {
    if images.is_empty() {
        return Vec::new();
    }
    let input: Tensor<4> =
        Tensor::from_data(normalization.to_chw(images.iter().copied(), size), device);
    let mut probabilities = softmax(model.forward(input.clone()), 1);
    if flip {
        let mirrored = softmax(model.forward(input.flip([3])), 1);
        probabilities = (probabilities + mirrored) / 2.0;
    }
    let probabilities = probabilities.into_data();
    let values: Vec<f32> = probabilities.iter::<f32>().collect();
    let classes = probabilities.shape()[1];
    values.chunks(classes).map(<[f32]>::to_vec).collect()
}
