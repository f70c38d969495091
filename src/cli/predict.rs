//! `catdog predict`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;

use crate::data::{SAMPLE_PHOTOS, decode_photo_bytes, photos_in};
use crate::inference::{NOT_SURE_BELOW, Prediction, Predictor};
use crate::output;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog predict photo.jpg\n  \
    catdog predict --samples                   # the two sample photos built into catdog\n  \
    catdog predict --model builtin photo.jpg   # the model built into catdog\n  \
    catdog predict --model models/big ~/Pictures/pets\n  \
    catdog predict --json a.jpg b.png")]
pub struct PredictArgs {
    /// Photos, or folders whose photos (sub-folders included) are all predicted.
    #[arg(required_unless_present = "samples", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Also predict the two sample photos built into catdog: a cat and a dog (photos by
    /// Stefan van der Walt, CC0, and Joao Eriberto Mota Filho, CC BY-SA 4.0)
    #[arg(long)]
    pub samples: bool,
    #[command(flatten)]
    pub answering: super::AnsweringArgs,
    /// Print one JSON object per photo.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn run(args: PredictArgs) -> Result<ExitCode> {
    let mut photos = Vec::new();
    for path in &args.paths {
        if path.is_dir() {
            let found = photos_in(path)?;
            if found.is_empty() {
                bail!("no photos found in {}", path.display());
            }
            photos.extend(found);
        } else {
            photos.push(path.clone());
        }
    }
    let backend = super::open_backend(args.answering.backend, args.answering.precision, false)?;
    let model = super::model_choice(args.answering.model);
    let predictor = Predictor::load(&model, &backend)?
        .with_flip(!args.answering.no_flip)
        .with_not_sure_below(args.answering.not_sure_below.unwrap_or(NOT_SURE_BELOW));
    eprintln!("{}", output::model_line(&predictor));
    if let Some(note) = output::generated_model_note(&predictor) {
        eprintln!("{note}");
    }
    let width = photos
        .iter()
        .map(|p| p.display().to_string().chars().count())
        .chain(args.samples.then(|| sample_name("cat.jpg").chars().count()))
        .max()
        .unwrap_or(0);

    let started = Instant::now();
    let mut results = Vec::new();
    if args.samples {
        results.extend(predict_samples(&predictor)?);
    }
    results.extend(predictor.predict_files(&photos)?);
    let seconds = started.elapsed().as_secs_f64();
    let photos = results.len();
    let mut failures = 0;
    for result in results {
        match result {
            Ok(prediction) if args.json => {
                println!("{}", output::prediction_json(&prediction, &model))
            }
            Ok(prediction) => println!("{}", output::prediction_line(&prediction, width)),
            Err(err) => {
                failures += 1;
                eprintln!("error: {}", format!("{err:#}").trim_end());
            }
        }
    }
    // The speed of the photos answered; a photo that could not be read is not one of them.
    let predicted = photos - failures;
    if predicted > 1 {
        eprintln!("{}", output::prediction_speed(predicted, seconds));
    }
    if failures > 0 {
        match photos {
            1 => eprintln!("the photo could not be predicted"),
            _ => eprintln!("{failures} of {photos} photos could not be predicted"),
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// How a sample photo is named in the answers: `sample cat.jpg`.
fn sample_name(name: &str) -> String {
    format!("sample {name}")
}

/// The answers for the sample photos built into catdog.
fn predict_samples(predictor: &Predictor) -> Result<Vec<Result<Prediction>>> {
    let size = predictor.info().image_size;
    let mut decoded = Vec::new();
    for (name, bytes) in SAMPLE_PHOTOS {
        let name = sample_name(name);
        let pixels = decode_photo_bytes(bytes, size, &name)?;
        decoded.push((PathBuf::from(name), pixels));
    }
    Ok(predictor
        .predict_decoded(&decoded)?
        .into_iter()
        .map(Ok)
        .collect())
}
