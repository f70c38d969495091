//! `catdog eval`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use super::with_default;
use crate::chart::{self, check_chart_path};
use crate::inference::{
    NOT_SURE_BELOW, Photos, Predictor, check_contact_sheet_path, evaluate_folder, fit_typical_on,
    held_out_photos, write_contact_sheet,
};
use crate::model::{FIT_PHOTOS_AT_LEAST, ModelChoice, ModelInfo, TrainSettings, save_info};
use crate::output;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog eval --data data/oxford-pets   # your model, or the built-in one\n  \
    catdog eval --model models/big --data photos/test --worst 20 --json\n  \
    catdog eval --data photos/test --mistakes mistakes.png\n  \
    catdog eval --data photos/test --calibration calibration.svg\n  \
    catdog eval --data photos --held-out --no-flip   # the photos `train --data photos` held out")]
pub struct EvalArgs {
    /// Labelled photos: one sub-folder per class, or Kaggle's `cat.123.jpg` names.
    #[arg(short, long, value_name = "DIR")]
    pub data: PathBuf,
    #[command(flatten)]
    pub answering: super::AnsweringArgs,
    /// How many of the most confidently wrong photos to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub worst: usize,
    /// Draw those photos, with what the model said, on a contact sheet (PNG).
    #[arg(long, value_name = "F.png")]
    pub mistakes: Option<PathBuf>,
    /// Evaluate only the photos that `catdog train --data DIR` held out for validation, not the
    /// ones it learned from; refused for any other folder.
    #[arg(long)]
    pub held_out: bool,
    #[arg(long, value_name = "F", requires = "held_out",
          help = with_default("The --val-split the model was trained with, for a model saved \
                               before catdog recorded it", defaults().val_split))]
    pub val_split: Option<f64>,
    #[arg(long, requires = "held_out",
          help = with_default("The --seed the model was trained with, for a model saved before \
                               catdog recorded it", defaults().seed))]
    pub seed: Option<u64>,
    /// Draw the reliability diagram (SVG or PNG): per band of probability, how many answers
    /// were right.
    #[arg(long, value_name = "F.svg")]
    pub calibration: Option<PathBuf>,
    /// With --held-out: fit which photos the model calls unusual (unlike those it learned
    /// from) on the held-out photos, as `catdog train` does, and save it in the model's
    /// catdog.json before evaluating; for a model saved before catdog fitted that itself.
    #[arg(long, requires = "held_out")]
    pub fit_unusual: bool,
    /// Print the whole result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

fn defaults() -> TrainSettings {
    TrainSettings::default()
}

pub(super) fn run(args: EvalArgs) -> Result<ExitCode> {
    if let Some(sheet) = &args.mistakes {
        check_contact_sheet_path(sheet)?;
    }
    if let Some(diagram) = &args.calibration {
        check_chart_path(diagram)?;
    }
    let backend = super::open_backend(args.answering.backend, args.answering.precision, true)?;
    let model = super::model_choice(args.answering.model);
    if args.fit_unusual && model == ModelChoice::Builtin {
        bail!("--fit-unusual saves into the model's folder: give --model DIR");
    }
    let mut predictor = Predictor::load(&model, &backend)?.with_flip(!args.answering.no_flip);
    let subset = if args.held_out {
        let fallback = (defaults().val_split, defaults().seed);
        held_out_photos(predictor.info(), args.val_split, args.seed, fallback)?
    } else {
        Photos::All
    };
    if let (true, ModelChoice::Folder(dir)) = (args.fit_unusual, &model) {
        fit_unusual(&predictor, &args.data, subset, dir)?;
        predictor = Predictor::load(&model, &backend)?.with_flip(!args.answering.no_flip);
    }
    let not_sure_below = args.answering.not_sure_below.unwrap_or(NOT_SURE_BELOW);
    let evaluation = evaluate_folder(&predictor, &args.data, subset, args.worst, not_sure_below)?;
    for skip in &evaluation.skipped {
        eprintln!("warning: skipped {}: {}", skip.path.display(), skip.reason);
    }
    if let Some(sheet) = &args.mistakes {
        write_contact_sheet(&evaluation.most_confidently_wrong, sheet)?;
        eprintln!("Drew the mistakes in {}", sheet.display());
    }
    if let Some(diagram) = &args.calibration {
        chart::write(&output::reliability_diagram(&evaluation), diagram)?;
        eprintln!("Drew the reliability diagram in {}", diagram.display());
    }
    match args.json {
        true => {
            let mut json = serde_json::to_value(&evaluation)?;
            json["model"] = output::model_name(&model).into();
            println!("{json}");
        }
        false => print!(
            "{}\n{}",
            output::model_line(&predictor),
            output::evaluation_text(&evaluation)
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// `--fit-unusual`: fits [`crate::model::Typical`] on the `subset` of `data` and saves it in
/// the model folder `dir`.
fn fit_unusual(predictor: &Predictor, data: &Path, subset: Photos, dir: &Path) -> Result<()> {
    let network = predictor.info().network();
    if network.look_size().is_none() {
        bail!(
            "--fit-unusual: a {} has no look to fit (only SmallCnn models have one)",
            network.title()
        );
    }
    let Some(typical) = fit_typical_on(predictor, data, subset)? else {
        bail!(
            "cannot fit which photos are unusual for the model in {}: fewer than \
             {FIT_PHOTOS_AT_LEAST} different photos decoded, or all look alike inside it",
            dir.display()
        );
    };
    let photos = typical.photos;
    let info = ModelInfo {
        typical: Some(typical),
        ..predictor.info().clone()
    };
    save_info(dir, &info)?;
    eprintln!(
        "Fitted which photos are unusual on {photos} held-out photos; saved in {}",
        dir.join("catdog.json").display()
    );
    Ok(())
}
