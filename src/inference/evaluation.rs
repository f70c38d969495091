//! How a network does on labelled pictures: validation's loss and accuracy during training,
//! and `catdog eval` on a photo folder, with where it goes wrong.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Result, bail};
use serde::Serialize;

use super::calibration::Reliability;
use super::{Predictor, Readout, Runner, most_probable};
use crate::data::{
    Dataset, DecodeWatch, DecodedPhotos, ImageSet, Skipped, check_val_split, load_or_decode,
};
use crate::model::{ModelInfo, Typical};

impl Runner<'_> {
    /// Mean cross-entropy and accuracy of the network on `set` (at the runner's size), read
    /// out plainly.
    pub fn evaluate(&self, set: &ImageSet) -> Result<(f64, f64)> {
        debug_assert_eq!(set.size(), self.size);
        let images: Vec<&[u8]> = (0..set.len()).map(|i| set.image(i)).collect();
        let rows = self
            .with_readout(Readout::PLAIN)
            .log_probabilities(&images)?;
        let mut loss_sum = 0.0;
        let mut correct = 0;
        for (row, &label) in rows.iter().zip(set.labels()) {
            loss_sum -= row[label];
            let predicted = (0..row.len())
                .max_by(|&a, &b| row[a].total_cmp(&row[b]))
                .unwrap_or(0);
            correct += usize::from(predicted == label);
        }
        Ok((
            loss_sum / set.len() as f64,
            correct as f64 / set.len() as f64,
        ))
    }
}

/// One class's figures: of the photos predicted as it, how many are it (precision); of the
/// photos that are it, how many were found (recall).
#[derive(Clone, Debug, Serialize)]
pub struct ClassFigures {
    pub class: String,
    pub photos: usize,
    pub precision: f64,
    pub recall: f64,
}

/// A photo the model got wrong, with how sure it was.
#[derive(Clone, Debug, Serialize)]
pub struct Mistake {
    /// The photo's path (any bytes that are not UTF-8 replaced, for printing).
    pub path: String,
    /// The photo's path as it is, to open it.
    #[serde(skip)]
    pub source: PathBuf,
    pub label: String,
    pub predicted: String,
    pub probability: f32,
}

/// A probability that leaves no doubt, for counting the wrong answers given with it.
pub const SURE: f32 = 0.95;

/// How the answers below a threshold of probability compare with the others.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct NotSure {
    pub threshold: f32,
    pub photos: usize,
    /// Share right of the answers below the threshold, and of those at or above it (0 where
    /// there are none).
    pub accuracy: f64,
    pub sure_accuracy: f64,
}

/// One labelled photo's answer, as the figures count it.
#[derive(Clone, Copy, Debug)]
pub struct Scored {
    pub probability: f64,
    pub right: bool,
    /// Unlike the photos the model learned from.
    pub unusual: bool,
    /// Neither a cat nor a dog, as ImageNet's classifier sees it.
    pub neither: bool,
}

impl NotSure {
    /// From each answer: below `threshold`, or of an unusual photo or one that is neither a
    /// cat nor a dog (which `predict` calls "not sure" whatever the probability).
    pub fn of(answers: &[Scored], threshold: f32) -> NotSure {
        let (unsure, sure): (Vec<&Scored>, Vec<&Scored>) = answers
            .iter()
            .partition(|a| a.probability < f64::from(threshold) || a.unusual || a.neither);
        let right = |answers: &[&Scored]| answers.iter().filter(|a| a.right).count();
        NotSure {
            threshold,
            photos: unsure.len(),
            accuracy: ratio(right(&unsure), unsure.len()),
            sure_accuracy: ratio(right(&sure), sure.len()),
        }
    }
}

/// Which photos of a folder to evaluate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Photos {
    All,
    /// Only those `catdog train --val-split val_split --seed seed` held out of training.
    HeldOut {
        val_split: f64,
        seed: u64,
    },
}

/// Some of the photos, and how often the model was right on them: those it found unlike the
/// photos it learned from ([`crate::model::Typical`]), or those it called neither a cat nor a
/// dog.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Unusual {
    pub photos: usize,
    /// Share right of them (0 where there are none).
    pub accuracy: f64,
}

impl Unusual {
    /// From each answer, those that `which` picks.
    pub fn of(answers: &[Scored], which: impl Fn(&Scored) -> bool) -> Unusual {
        let picked: Vec<&Scored> = answers.iter().filter(|a| which(a)).collect();
        let right = picked.iter().filter(|a| a.right).count();
        Unusual {
            photos: picked.len(),
            accuracy: ratio(right, picked.len()),
        }
    }
}

/// Everything `catdog eval --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct Evaluation {
    /// Which photos of the folder were evaluated.
    pub subset: Photos,
    /// Whether each photo's prediction was averaged with its mirror image's.
    pub flip: bool,
    pub photos: usize,
    pub accuracy: f64,
    pub classes: Vec<String>,
    /// `confusion_matrix[true class][predicted class]`: photo counts, in `classes` order.
    pub confusion_matrix: Vec<Vec<usize>>,
    pub per_class: Vec<ClassFigures>,
    /// The most confidently wrong photos, surest first.
    pub most_confidently_wrong: Vec<Mistake>,
    /// The temperature the model's logits were divided by; `None` for a model without one,
    /// which answers at temperature 1.
    pub temperature: Option<f64>,
    /// Right answers per band of probability, and the expected calibration error.
    pub reliability: Reliability,
    /// Wrong answers given with a probability of [`SURE`] or more.
    pub wrong_and_sure: usize,
    /// The answers `predict` calls "not sure" (probability below `threshold`, or an unusual
    /// photo), and how often those and the others were right.
    pub not_sure: NotSure,
    /// The photos that look unlike those the model learned from (which `predict` calls "not
    /// sure" too), and how often it was right on them; `None` for a model without that record.
    pub unusual: Option<Unusual>,
    /// The photos it called neither a cat nor a dog (which `predict` calls so, not a class),
    /// and how often its class was right on them; `None` for a model that cannot tell.
    pub neither: Option<Unusual>,
    /// How fast the model ran over the decoded photos: from pixels to probabilities, with the
    /// normalisation and the copy to the device, decoding excluded.
    pub infer_images_per_sec: f64,
    #[serde(skip)]
    pub skipped: Vec<Skipped>,
    pub skipped_photos: usize,
}

/// Evaluates `predictor` on the `subset` of the photos in `data`, whose classes must be the
/// model's; keeps the `worst` most confidently wrong photos, and counts the answers below
/// `not_sure_below`.
pub fn evaluate_folder(
    predictor: &Predictor,
    data: &Path,
    subset: Photos,
    worst: usize,
    not_sure_below: f32,
) -> Result<Evaluation> {
    let Chosen {
        dataset,
        photos,
        chosen,
    } = choose(predictor.info(), data, subset)?;
    let chosen: Vec<(usize, &Path)> = chosen
        .into_iter()
        .map(|(image, sample)| (image, dataset.samples[sample].path.as_path()))
        .collect();
    let classes = predictor.info().classes.clone();
    let images = &photos.images;

    let mut confusion_matrix = vec![vec![0; classes.len()]; classes.len()];
    let mut mistakes = Vec::new();
    let mut answers = Vec::with_capacity(chosen.len());
    let pixels: Vec<&[u8]> = chosen.iter().map(|&(i, _)| images.image(i)).collect();
    let started = Instant::now();
    let all_answers = predictor.answers(&pixels)?;
    let infer_images_per_sec = chosen.len() as f64 / started.elapsed().as_secs_f64();
    for (&(i, path), answer) in chosen.iter().zip(all_answers) {
        let (predicted, probability) = most_probable(&answer.probabilities);
        let label = images.labels()[i];
        confusion_matrix[label][predicted] += 1;
        answers.push(Scored {
            probability: f64::from(probability),
            right: predicted == label,
            unusual: answer.unusual,
            neither: answer.neither().is_some(),
        });
        if predicted != label {
            mistakes.push(Mistake {
                path: path.to_string_lossy().into_owned(),
                source: path.to_path_buf(),
                label: classes[label].clone(),
                predicted: classes[predicted].clone(),
                probability,
            });
        }
    }
    mistakes.sort_by(|a, b| b.probability.total_cmp(&a.probability));
    let wrong_and_sure = mistakes.iter().filter(|m| m.probability >= SURE).count();
    mistakes.truncate(worst);

    let correct: usize = (0..classes.len()).map(|c| confusion_matrix[c][c]).sum();
    let per_class = classes
        .iter()
        .enumerate()
        .map(|(c, class)| {
            let photos: usize = confusion_matrix[c].iter().sum();
            let predicted_as: usize = confusion_matrix.iter().map(|row| row[c]).sum();
            ClassFigures {
                class: class.clone(),
                photos,
                precision: ratio(confusion_matrix[c][c], predicted_as),
                recall: ratio(confusion_matrix[c][c], photos),
            }
        })
        .collect();
    Ok(Evaluation {
        subset,
        flip: predictor.flip(),
        photos: chosen.len(),
        accuracy: ratio(correct, chosen.len()),
        classes,
        confusion_matrix,
        per_class,
        most_confidently_wrong: mistakes,
        temperature: predictor.info().calibration.map(|c| c.temperature),
        reliability: Reliability::of(
            &answers
                .iter()
                .map(|a| (a.probability, a.right))
                .collect::<Vec<_>>(),
        ),
        wrong_and_sure,
        not_sure: NotSure::of(&answers, not_sure_below),
        unusual: predictor
            .info()
            .typical
            .as_ref()
            .map(|_| Unusual::of(&answers, |a| a.unusual)),
        neither: predictor
            .tells_neither()
            .then(|| Unusual::of(&answers, |a| a.neither)),
        infer_images_per_sec,
        skipped_photos: photos.skipped.len(),
        skipped: photos.skipped,
    })
}

/// The photos of a folder chosen for a model, decoded.
struct Chosen {
    dataset: Dataset,
    photos: DecodedPhotos,
    /// (decoded image, sample) of every chosen photo that could be decoded.
    chosen: Vec<(usize, usize)>,
}

/// The `subset` of the photos in `data`, decoded at the model's size; refused where the
/// folder's classes are not the model's, or none could be decoded.
fn choose(info: &ModelInfo, data: &Path, subset: Photos) -> Result<Chosen> {
    let scanned = Dataset::scan(data)?;
    // Class names are lower case since catdog matched them case-insensitively; older models
    // may know `Cat`. `Cats/` is the model's `cat`.
    let Some(dataset) = scanned.matched_to(&info.classes) else {
        let folders: Vec<String> = info
            .classes
            .iter()
            .map(|c| format!("{}/{}/", data.display(), c.to_lowercase()))
            .collect();
        bail!(
            "{} holds the classes {}, the model knows {}: eval needs a folder per class of \
             the model's, named as it names them ({}){}",
            data.display(),
            scanned.classes.join(", "),
            info.classes.join(", "),
            folders.join(", "),
            scanned
                .dates_note()
                .map(|n| format!(". {n}"))
                .unwrap_or_default()
        );
    };
    if let Photos::HeldOut { .. } = subset {
        check_trained_on(info, &dataset)?;
    }
    let photos = load_or_decode(&dataset, info.image_size, DecodeWatch::NONE)?;
    let samples = match subset {
        Photos::All => (0..dataset.samples.len()).collect(),
        Photos::HeldOut { val_split, seed } => dataset.split(val_split, seed).1,
    };
    let chosen: Vec<(usize, usize)> = samples
        .into_iter()
        .filter_map(|sample| Some((photos.image_of_sample[sample]?, sample)))
        .collect();
    if chosen.is_empty() {
        bail!(
            "none of the chosen photos in {} could be decoded",
            data.display()
        );
    }
    Ok(Chosen {
        dataset,
        photos,
        chosen,
    })
}

/// Fits what the `subset` of the photos in `data` look like inside `predictor`'s model
/// ([`Typical`]): for a model saved before catdog fitted it itself, on the photos its
/// training held out, as training does. `None` for a network without looks or too few photos.
pub fn fit_typical_on(
    predictor: &Predictor,
    data: &Path,
    subset: Photos,
) -> Result<Option<Typical>> {
    let Chosen { photos, chosen, .. } = choose(predictor.info(), data, subset)?;
    let pixels: Vec<&[u8]> = chosen
        .iter()
        .map(|&(image, _)| photos.images.image(image))
        .collect();
    predictor.fit_typical(&pixels)
}

/// The photos `catdog eval --held-out` scores: those the model's training held out, by the
/// split recorded with it; a `val_split` or `seed` given must agree with that record. A model
/// saved before catdog recorded it takes them as given, or `fallback` (train's defaults).
pub(crate) fn held_out_photos(
    info: &ModelInfo,
    val_split: Option<f64>,
    seed: Option<u64>,
    fallback: (f64, u64),
) -> Result<Photos> {
    let Some(trained) = &info.trained_on else {
        let val_split = val_split.unwrap_or(fallback.0);
        check_val_split(val_split)?;
        return Ok(Photos::HeldOut {
            val_split,
            seed: seed.unwrap_or(fallback.1),
        });
    };
    if let Some(given) = val_split.filter(|&given| given != trained.val_split) {
        bail!(
            "--val-split {given} is not the {} the model was trained with (its catdog.json \
             records it): leave it out",
            trained.val_split
        );
    }
    if let Some(given) = seed.filter(|&given| given != trained.seed) {
        bail!(
            "--seed {given} is not the {} the model was trained with (its catdog.json records \
             it): leave it out",
            trained.seed
        );
    }
    Ok(Photos::HeldOut {
        val_split: trained.val_split,
        seed: trained.seed,
    })
}

/// Refuses `--held-out` on a folder other than the one the model was trained on, as it was
/// then: its split would hold out other photos, some of which the model learned from.
fn check_trained_on(info: &ModelInfo, dataset: &Dataset) -> Result<()> {
    let Some(trained) = &info.trained_on else {
        return Ok(());
    };
    let here = dataset.root.display();
    match &trained.data {
        None => bail!(
            "the model was trained on generated pictures, so none of the photos in {here} were \
             held out of its training: evaluate it without --held-out"
        ),
        Some(folder)
            if trained.data_fingerprint != dataset.fingerprint
                && trained.data_listing.as_ref() != Some(&dataset.listing) =>
        {
            bail!(
                "the model was trained on {}, and {here} does not hold those photos as they were \
             then (added, removed or changed photos), so --held-out cannot tell which ones \
             training held out: evaluate without --held-out, or on that folder",
                folder.display()
            )
        }
        Some(_) => Ok(()),
    }
}

/// `part / whole`, or 0 when `whole` is 0 (a class never predicted has no precision).
fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}
