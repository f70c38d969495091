//! `catdog train`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::with_default;
use crate::data::Augmentation;
use crate::device::{self, BackendChoice, Precision};
use crate::model::{ModelChoice, NetworkKind, TrainSettings};
use crate::output::{self, TerminalProgress};
use crate::training::{self, Schedule, TrainOptions, TrainOutcome, TrainRequest};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog train\n  \
    catdog train --backend gpu --epochs 10\n  \
    catdog train --data data/dogs-vs-cats --image-size 128 --out models/big\n  \
    catdog train --data DIR --augment --epochs 30 --batch-size 64 --lr 0.002 --schedule one-cycle\n  \
    catdog train --backend cpu --json\n  \
    catdog train --network resnet18 --data DIR --backend gpu\n  \
    catdog train --network efficientnet-lite0 --data DIR --epochs 0   # a few photos a class\n  \
    catdog train --resume --out models/big     # after Ctrl-C or a crash")]
pub struct TrainArgs {
    /// Folder of photos: one sub-folder per class (DIR/cat/, DIR/dog/) or Kaggle's names
    /// (DIR/cat.1.jpg). Without it, catdog trains on generated pictures.
    #[arg(short, long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(20..=training::MAX_GENERATED as i64),
          conflicts_with = "data",
          help = with_default("How many pictures to generate when there is no --data",
                              defaults().generated_count))]
    pub generated: Option<u32>,
    /// Where to compute: auto picks the GPU when there is a real one.
    #[arg(short, long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// The float type the GPU trains in; the model is saved in f32 either way [default: f32]
    #[arg(long, value_enum)]
    pub precision: Option<Precision>,
    #[arg(short, long, value_parser = clap::value_parser!(u32),
          help = with_default("Passes over the training photos; 0 with --pretrained fits the \
                               new last layer alone, in one pass, and trains nothing else",
                              defaults().epochs))]
    pub epochs: Option<u32>,
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096),
          help = with_default("Photos per training step", defaults().batch_size))]
    pub batch_size: Option<u32>,
    /// The network to train [default: small-cnn]
    #[arg(long, value_enum)]
    pub network: Option<NetworkKind>,
    /// Start from ImageNet's weights, which have seen a million photos (efficientnet-lite0
    /// only); `--pretrained false` starts from random ones [default: true for
    /// efficientnet-lite0]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub pretrained: Option<bool>,
    #[arg(long, value_name = "F",
          help = with_default("With --pretrained, the share of --lr the network's ImageNet \
                               part learns at (0 keeps it as it is; the new last layer learns \
                               at all of --lr)", defaults().backbone_rate))]
    pub backbone_rate: Option<f64>,
    /// With --pretrained, the first N epochs train the new last layer alone (the ImageNet part
    /// frozen), then the whole network learns [default: 0]
    #[arg(long, value_name = "N")]
    pub frozen_epochs: Option<u32>,
    /// With --pretrained, normalise by ImageNet's batch-norm statistics while training too,
    /// and keep them, instead of following each batch's [default: false]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub hold_batch_norm: Option<bool>,
    /// Photos are squashed to this many pixels square [default: 64 for either small-cnn, 224
    /// for resnet18 and efficientnet-lite0]
    #[arg(long, value_name = "PX", value_parser = super::image_size)]
    pub image_size: Option<u32>,
    #[arg(long, value_name = "F",
          help = with_default(
              "AdamW's (peak) learning rate",
              format!(
                  "{}; {} for efficientnet-lite0",
                  defaults().learning_rate,
                  TrainSettings::for_network(NetworkKind::EfficientNetLite0).learning_rate
              )
          ))]
    pub lr: Option<f64>,
    #[arg(long, value_enum,
          help = with_default("How the learning rate changes over the run",
                              defaults().schedule.name()))]
    pub schedule: Option<Schedule>,
    #[arg(long, value_name = "F",
          help = with_default("AdamW's weight decay", defaults().weight_decay))]
    pub weight_decay: Option<f64>,
    /// Stop once validation accuracy has not improved for N epochs (the best epoch is kept
    /// either way)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub patience: Option<u32>,
    #[arg(long, value_name = "F",
          help = with_default("Fraction of each class held back to measure accuracy",
                              defaults().val_split))]
    pub val_split: Option<f64>,
    #[arg(long,
          help = with_default("Seeds the weights, the split, the shuffling and the augmentation",
                              defaults().seed))]
    pub seed: Option<u64>,
    /// Vary the training pictures, differently every epoch: `--augment` alone is `light`
    #[arg(long, value_enum, value_name = "KIND", num_args = 0..=1,
          default_missing_value = "light")]
    pub augment: Option<Augmentation>,
    #[arg(long, value_name = "F",
          help = with_default("Zero this fraction of the features before the classifier in \
                               every training step", defaults().dropout))]
    pub dropout: Option<f64>,
    #[arg(long, value_name = "F",
          help = with_default("Give this share of each target's probability to all classes \
                               evenly; the training loss shown then includes it",
                              defaults().label_smoothing))]
    pub label_smoothing: Option<f64>,
    /// Model folder to write; it also holds the run's checkpoint [default: models/catdog
    /// with --data, models/demo for the generated pictures]
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Continue the interrupted run in --out, with the photos and settings it was started with.
    #[arg(long)]
    pub resume: bool,
    /// Print the final report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

fn defaults() -> TrainSettings {
    TrainSettings::default()
}

impl TrainArgs {
    /// Sets, on `settings`, each setting whose flag was given; the others keep their values.
    fn set_on(&self, settings: &mut TrainSettings) {
        fn set<T: Copy>(given: Option<T>, setting: &mut T) {
            if let Some(value) = given {
                *setting = value;
            }
        }
        let size = |n: Option<u32>| n.map(|n| n as usize);
        if self.data.is_some() {
            settings.data.clone_from(&self.data);
        }
        set(size(self.generated), &mut settings.generated_count);
        set(self.network, &mut settings.network);
        set(self.pretrained, &mut settings.pretrained);
        set(self.backbone_rate, &mut settings.backbone_rate);
        set(size(self.frozen_epochs), &mut settings.frozen_epochs);
        set(self.hold_batch_norm, &mut settings.hold_batch_norm);
        set(self.image_size, &mut settings.image_size);
        set(size(self.epochs), &mut settings.epochs);
        set(size(self.batch_size), &mut settings.batch_size);
        set(self.lr, &mut settings.learning_rate);
        set(self.schedule, &mut settings.schedule);
        set(self.weight_decay, &mut settings.weight_decay);
        if let Some(patience) = size(self.patience) {
            settings.patience = Some(patience);
        }
        set(self.val_split, &mut settings.val_split);
        set(self.seed, &mut settings.seed);
        set(self.augment, &mut settings.augment);
        set(self.dropout, &mut settings.dropout);
        set(self.label_smoothing, &mut settings.label_smoothing);
        set(self.precision, &mut settings.precision);
    }

    /// The request as the library takes it: the folder, `--resume`, and the flags given.
    fn options(&self) -> Result<TrainOptions> {
        TrainRequest {
            out: self.out.clone(),
            resume: self.resume,
            flags: &|settings| self.set_on(settings),
        }
        .options()
    }
}

pub(super) fn run(args: TrainArgs) -> Result<ExitCode> {
    let options = args.options()?;
    let selection = device::select(args.backend)?;
    eprintln!("{}", super::backend_line(&selection));
    training::install_interrupt_handlers()?;
    let report = match training::train(
        &options,
        &selection.backend,
        &mut TerminalProgress::default(),
    )? {
        TrainOutcome::Finished(report) => report,
        TrainOutcome::Stopped(stopped) => {
            eprintln!("{stopped}");
            return Ok(ExitCode::from(stopped.by.exit_code()));
        }
        TrainOutcome::NothingLeft(line) => {
            eprintln!("{line}");
            return Ok(ExitCode::SUCCESS);
        }
    };
    if args.json {
        println!("{}", output::train_json(&report));
    } else {
        println!("{}", output::train_summary(&report));
        if options.settings.data.is_none() {
            println!(
                "\nThat was the speed demo on drawn faces. {} {}",
                which_model_predicts(&options.out, true),
                output::REAL_PHOTOS
            );
        } else {
            println!("\n{}", which_model_predicts(&options.out, false));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// After a run saved its model in `out`: which model `catdog predict PHOTO` answers with now,
/// and how to ask the built-in one.
fn which_model_predicts(out: &Path, drawings: bool) -> String {
    match super::model_choice(None) {
        ModelChoice::Folder(dir) if same_folder(&dir, out) => format!(
            "`catdog predict PHOTO` and `catdog eval` now answer with this model ({}){}; \
             `--model builtin` asks the built-in one.",
            dir.display(),
            if drawings {
                ", and it learned drawings"
            } else {
                ""
            }
        ),
        ModelChoice::Folder(dir) => format!(
            "`catdog predict PHOTO` still answers with your model in {}.",
            dir.display()
        ),
        ModelChoice::Builtin => {
            "`catdog predict PHOTO` still answers with the built-in model.".to_string()
        }
    }
}

/// Whether `a` and `b` name one folder (`./models/catdog` is `models/catdog`).
fn same_folder(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Train {
        #[command(flatten)]
        args: TrainArgs,
    }

    /// Each flag that `--resume` could name sets its own setting, and only it: a setting added
    /// without its flag (or a flag written onto the wrong field) fails here.
    #[test]
    fn each_flag_sets_its_own_setting_and_no_other() {
        // Every field named, none at its default: a new setting must be added here too.
        let other = TrainSettings {
            data: Some(PathBuf::from("pets")),
            generated_count: 500,
            network: NetworkKind::ResNet18,
            pretrained: true,
            backbone_rate: 0.0,
            frozen_epochs: 2,
            hold_batch_norm: true,
            image_size: 96,
            val_split: 0.2,
            epochs: 9,
            batch_size: 16,
            learning_rate: 0.002,
            schedule: Schedule::OneCycle,
            weight_decay: 0.01,
            seed: 7,
            augment: Augmentation::Photo,
            patience: Some(3),
            dropout: 0.3,
            label_smoothing: 0.1,
            precision: Precision::F16,
        };
        let defaults = TrainSettings::default().as_flags();
        for (flag, value) in other.as_flags() {
            let parsed = Train::try_parse_from(["train", flag, &value])
                .unwrap_or_else(|err| panic!("{flag} {value}: {err}"));
            let mut settings = TrainSettings::default();
            parsed.args.set_on(&mut settings);
            let changed: Vec<(&str, String)> = settings
                .as_flags()
                .into_iter()
                .zip(&defaults)
                .filter(|(now, before)| now != *before)
                .map(|(now, _)| now)
                .collect();
            assert_eq!(changed, [(flag, value.clone())], "{flag} {value}");
        }
    }
}
