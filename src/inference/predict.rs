//! Prediction: a saved model and a photo in, the class and its probability out.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use burn::tensor::Device;

use super::{BATCH, NOT_SURE_BELOW, Readout, Runner, both, most_probable, probabilities};
use crate::data::decode_photos;
use crate::device::{Backend, Batch, is_cpu};
use crate::model::{
    ImagenetNetwork, ImagenetView, ModelChoice, ModelInfo, Network, NetworkKind, Typical,
    imagenet_classes,
};

/// What the model thinks one photo shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    pub path: PathBuf,
    /// The most probable class.
    pub label: String,
    pub probability: f32,
    /// Every class with its probability, in class order.
    pub probabilities: Vec<(String, f32)>,
    /// Whether `probability` reached the predictor's threshold and the photo is not unusual;
    /// otherwise catdog says "not sure" instead of the bare label.
    pub sure: bool,
    /// Whether the photo looks unlike those the model learned from ([`crate::model::Typical`]);
    /// always false for a model without that record.
    pub unusual: bool,
    /// Where ImageNet's classifier sees neither a cat nor a dog: what it sees instead. Always
    /// `None` for a model that cannot tell ([`Predictor::tells_neither`]).
    pub neither: Option<Neither>,
    /// The probability ImageNet's classifier gives all its cat and dog classes together, for
    /// a model that can tell.
    pub cat_or_dog: Option<f32>,
}

/// A photo that is neither a cat nor a dog, as ImageNet's classifier sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Neither {
    /// The ImageNet class it looks most like (`sports car`).
    pub looks_like: String,
    /// That class's probability.
    pub probability: f32,
}

/// A photo is neither a cat nor a dog where ImageNet's cat and dog classes together have less
/// than this probability.
pub const CAT_OR_DOG_AT_LEAST: f32 = 0.1;

/// What the model makes of one photo: its class probabilities, in class order, whether it is
/// unusual, and whether it is neither a cat nor a dog.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub probabilities: Vec<f32>,
    pub unusual: bool,
    /// What ImageNet's classifier makes of it, for a model that can tell.
    pub view: Option<ImagenetView>,
}

impl Answer {
    /// [`Neither`] where ImageNet's cat and dog classes together have too little probability.
    pub fn neither(&self) -> Option<Neither> {
        let view = self.view?;
        (view.cat_or_dog < CAT_OR_DOG_AT_LEAST).then(|| Neither {
            looks_like: imagenet_classes()[view.other].to_string(),
            probability: view.other_probability,
        })
    }
}

/// A saved model loaded on a backend.
pub struct Predictor {
    model: Network,
    choice: ModelChoice,
    info: ModelInfo,
    device: Device,
    flip: bool,
    not_sure_below: f32,
    /// ImageNet's own network, for a cat-and-dog EfficientNet-Lite0 started from its weights.
    imagenet: Option<ImagenetNetwork>,
}

impl Predictor {
    /// Loads the chosen model onto `backend`, whichever backend trained it.
    pub fn load(choice: &ModelChoice, backend: &Backend) -> Result<Predictor> {
        // On the CPU the two networks load side by side: each load is one thread's work.
        let info = choice.describe()?;
        let tells_neither = tells_neither(&info);
        let (loaded, imagenet) = both(
            is_cpu(&backend.device),
            || choice.load_described(&info, &backend.device),
            || match tells_neither {
                true => ImagenetNetwork::load(&backend.device).map(Some),
                false => Ok(None),
            },
        );
        let model = loaded?;
        let imagenet = imagenet?;
        let model = model.folded();
        Ok(Predictor {
            model,
            choice: choice.clone(),
            info,
            device: backend.device.clone(),
            flip: false,
            not_sure_below: NOT_SURE_BELOW,
            imagenet,
        })
    }

    /// Whether this model says of a photo that it is neither a cat nor a dog, and what it
    /// looks like instead.
    pub fn tells_neither(&self) -> bool {
        self.imagenet.is_some()
    }

    /// Answers below this probability are "not sure".
    pub fn with_not_sure_below(self, not_sure_below: f32) -> Predictor {
        Predictor {
            not_sure_below,
            ..self
        }
    }

    pub fn not_sure_below(&self) -> f32 {
        self.not_sure_below
    }

    /// Averages each photo's probabilities with those of its mirror image (test-time
    /// augmentation): twice the work for a steadier answer.
    pub fn with_flip(self, flip: bool) -> Predictor {
        Predictor { flip, ..self }
    }

    pub fn flip(&self) -> bool {
        self.flip
    }

    /// Which model this is, for the output to name.
    pub fn choice(&self) -> &ModelChoice {
        &self.choice
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Predicts each photo; a photo that cannot be read gets its own error, the others
    /// are still predicted. Results come in the order of `paths`.
    /// The outer error is the device failing, which ends the whole run.
    pub fn predict_files(&self, paths: &[PathBuf]) -> Result<Vec<Result<Prediction>>> {
        let mut results = Vec::with_capacity(paths.len());
        // A chunk at a time, so that a large folder is never all in memory at once.
        for chunk in paths.chunks(BATCH) {
            let decoded = decode_photos(chunk, self.info.image_size, &|| {});
            let pixels: Vec<&[u8]> = decoded.iter().filter_map(|d| d.as_deref().ok()).collect();
            let mut answers = self.answers(&pixels)?.into_iter();
            for (path, decoded) in chunk.iter().zip(decoded) {
                results.push(decoded.map(|_| {
                    let answer = answers.next().expect("one answer per decoded photo");
                    self.prediction(path, answer)
                }));
            }
        }
        Ok(results)
    }

    /// Predicts photos already decoded to the model's size (`size × size × 3` bytes each,
    /// [`ModelInfo::image_size`]), each named by its path, in order.
    pub fn predict_decoded(&self, photos: &[(PathBuf, Vec<u8>)]) -> Result<Vec<Prediction>> {
        let pixels: Vec<&[u8]> = photos.iter().map(|(_, p)| p.as_slice()).collect();
        let answers = self.answers(&pixels)?;
        Ok(photos
            .iter()
            .zip(answers)
            .map(|((path, _), answer)| self.prediction(path, answer))
            .collect())
    }

    /// Class probabilities of images already at the model's size (`size × size × 3` bytes).
    pub fn probabilities(&self, images: &[&[u8]]) -> Result<Vec<Vec<f32>>> {
        Ok(self
            .answers(images)?
            .into_iter()
            .map(|a| a.probabilities)
            .collect())
    }

    /// [`probabilities`](Self::probabilities), and whether each image looks unlike those the
    /// model learned from (from the same pass).
    pub fn answers(&self, images: &[&[u8]]) -> Result<Vec<Answer>> {
        let typical = self.info.typical.as_ref();
        let readings = self.runner().run(images)?;
        if readings.rows.iter().flatten().any(|p| p.is_nan()) {
            bail!(
                "{} answers NaN (not a number) instead of probabilities: its weights hold NaN \
                 or infinite values, so no answer of it can be trusted. Train it again, or use \
                 --model builtin",
                match &self.choice {
                    ModelChoice::Builtin => "the built-in model".to_string(),
                    ModelChoice::Folder(dir) => format!("the model in {}", dir.display()),
                }
            );
        }
        let photos = readings.rows.len();
        let unusual: Vec<bool> = match (typical, readings.looks) {
            (Some(typical), Some(looks)) => looks.iter().map(|l| typical.is_unusual(l)).collect(),
            _ => vec![false; photos],
        };
        let views: Vec<Option<ImagenetView>> = match readings.views {
            Some(views) => views.into_iter().map(Some).collect(),
            None => vec![None; photos],
        };
        Ok(probabilities(readings.rows)
            .into_iter()
            .zip(unusual)
            .zip(views)
            .map(|((probabilities, unusual), view)| Answer {
                probabilities,
                unusual,
                view,
            })
            .collect())
    }

    /// Fits what `images` (at the model's size) look like inside the model ([`Typical`]).
    pub fn fit_typical(&self, images: &[&[u8]]) -> Result<Option<Typical>> {
        self.runner().fit_typical(images)
    }

    /// The model as it answers: at its size, [`BATCH`] photos at a time, with the mirror image
    /// where asked, its temperature, and the looks where there is a typical look to hold them
    /// against.
    fn runner(&self) -> Runner<'_> {
        Runner {
            model: &self.model,
            size: self.info.image_size,
            normalization: &self.info.normalization,
            device: &self.device,
            readout: Readout {
                flip: self.flip,
                temperature: self.info.temperature(),
                looks: self.info.typical.is_some(),
            },
            batch: Batch::Fixed(BATCH),
            imagenet: self.imagenet.as_ref(),
        }
    }

    fn prediction(&self, path: &Path, answer: Answer) -> Prediction {
        let neither = answer.neither();
        let Answer {
            probabilities,
            unusual,
            view,
        } = answer;
        let (best, probability) = most_probable(&probabilities);
        Prediction {
            path: path.to_path_buf(),
            label: self.info.classes[best].clone(),
            probability,
            sure: probability >= self.not_sure_below && !unusual && neither.is_none(),
            unusual,
            neither,
            cat_or_dog: view.map(|v| v.cat_or_dog),
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

/// Whether a model of `info` says of a photo that it is neither a cat nor a dog: an
/// EfficientNet-Lite0 started from ImageNet's weights for the classes cat and dog, which takes
/// ImageNet's network's pictures (size aside) and costs about as much a photo. (A faster
/// network would be slowed down many times by a second look.)
fn tells_neither(info: &ModelInfo) -> bool {
    let classes: Vec<String> = info.classes.iter().map(|c| c.to_lowercase()).collect();
    info.network() == NetworkKind::EfficientNetLite0
        && info.settings.as_ref().is_some_and(|s| s.pretrained)
        && classes == ["cat", "dog"]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{SAMPLE_PHOTOS, decode_photo_bytes};
    use crate::device::{CpuBackend, cpu_backend};

    /// The built-in model calls the sample cat a cat and the sample dog a dog, surely, and
    /// says of a black picture that it is neither, naming what it looks like instead; each
    /// alone (its passes side by side) as in a batch (one pass after another).
    #[test]
    fn the_builtin_model_knows_the_samples_and_a_picture_of_neither() {
        let predictor = Predictor::load(&ModelChoice::Builtin, &cpu_backend(CpuBackend::Flex))
            .unwrap()
            .with_flip(true);
        assert!(predictor.tells_neither());
        let size = predictor.info().image_size;
        let mut photos: Vec<(PathBuf, Vec<u8>)> = SAMPLE_PHOTOS
            .into_iter()
            .map(|(name, bytes)| (name.into(), decode_photo_bytes(bytes, size, name).unwrap()))
            .collect();
        photos.push(("black".into(), vec![0; (size * size * 3) as usize]));
        // On two threads whatever the machine: three photos are then one pass after another,
        // one photo alone its passes side by side.
        let two_threads = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let answers = two_threads.install(|| predictor.predict_decoded(&photos).unwrap());
        for (answer, class) in answers.iter().zip(["cat", "dog"]) {
            assert_eq!(answer.label, class, "{answer:?}");
            assert!(answer.sure && answer.neither.is_none(), "{answer:?}");
            assert!(answer.cat_or_dog.unwrap() > 0.9, "{answer:?}");
        }
        let black = &answers[2];
        assert!(!black.sure, "{black:?}");
        let neither = black.neither.as_ref().expect("a black picture is neither");
        assert!(black.cat_or_dog.unwrap() < CAT_OR_DOG_AT_LEAST, "{black:?}");
        assert!(imagenet_classes().contains(&neither.looks_like.as_str()));
        for (photo, together) in photos.iter().zip(&answers) {
            let alone = &two_threads
                .install(|| predictor.predict_decoded(std::slice::from_ref(photo)))
                .unwrap()[0];
            let close = |a: f32, b: f32| (a - b).abs() < 1e-4;
            assert!(
                alone
                    .probabilities
                    .iter()
                    .zip(&together.probabilities)
                    .all(|(a, b)| close(a.1, b.1))
                    && close(alone.cat_or_dog.unwrap(), together.cat_or_dog.unwrap())
                    && alone.neither.as_ref().map(|n| &n.looks_like)
                        == together.neither.as_ref().map(|n| &n.looks_like),
                "{alone:?}\n{together:?}"
            );
        }
    }
}
