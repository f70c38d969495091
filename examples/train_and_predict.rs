//! catdog as a library: train on the built-in pictures, then classify a photo.
//!
//! cargo run --release --example train_and_predict -- [PHOTO]
//!
//! Without PHOTO, it classifies a freshly drawn dog.

use std::path::PathBuf;

use anyhow::bail;
use catdog::device::{BackendChoice, select};
use catdog::inference::Predictor;
use catdog::model::ModelChoice;
use catdog::training::{TrainOptions, TrainOutcome, train};

fn main() -> anyhow::Result<()> {
    let backend = select(BackendChoice::Auto)?.backend;
    let options = TrainOptions {
        out: PathBuf::from("models/example"),
        ..TrainOptions::default()
    };
    let report = match train(&options, &backend, &mut ())? {
        TrainOutcome::Finished(report) => report,
        TrainOutcome::Stopped(stopped) => bail!("{stopped}"),
        TrainOutcome::NothingLeft(line) => bail!("{line}"),
    };
    println!(
        "trained on {}: {:.0} photos/s, validation accuracy {:.1} %",
        backend.device_name,
        report.images_per_sec(),
        report.kept_epoch().val_accuracy.unwrap_or_default() * 100.0
    );

    let photo = match std::env::args_os().nth(1) {
        Some(photo) => PathBuf::from(photo),
        None => {
            let dir = options.out.join("drawn");
            catdog::data::synth::write_dataset(&dir, 2, 64, 7)?;
            dir.join("dog/00000.png")
        }
    };
    let predictor = Predictor::load(&ModelChoice::Folder(options.out.clone()), &backend)?;
    for prediction in predictor.predict_files(&[photo])? {
        let prediction = prediction?;
        println!(
            "{}: {} ({:.0} %)",
            prediction.path.display(),
            prediction.label,
            prediction.probability * 100.0
        );
    }
    Ok(())
}
