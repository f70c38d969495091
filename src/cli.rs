//! The command line: `catdog train`, `predict`, `bench`, `devices` and `synth`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Parser, Subcommand};

use crate::backend::{self, Backend, BackendChoice};
use crate::bench::{self, BenchSettings};
use crate::chart;
use crate::checkpoint;
use crate::contact_sheet;
use crate::dataset::photos_in;
use crate::evaluation::{Photos, evaluate_folder};
use crate::hardware;
use crate::interrupt;
use crate::predict::Predictor;
use crate::progress::{TerminalBenchProgress, TerminalProgress};
use crate::report;
use crate::saved_model;
use crate::synth;
use crate::train::{self, FitSettings, Schedule, Stopped, TrainOptions};

#[derive(Debug, Parser)]
#[command(
    name = "catdog",
    version,
    about = "Train a small network to tell cats from dogs, on the GPU or the CPU, \
             and see how many photos per second each one processes.",
    after_help = "Examples:\n  \
        catdog train                          # generated pictures, best backend here\n  \
        catdog train --backend cpu            # the same on the CPU, to compare photos/s\n  \
        catdog train --data ~/Pictures/pets   # your photos: pets/cat/*.jpg, pets/dog/*.jpg\n  \
        catdog predict photo.jpg\n  \
        catdog bench                          # photos/s of every backend, side by side\n  \
        catdog devices                        # does this computer have a GPU?"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Train a model on a folder of photos (or on generated pictures) and save it.
    Train(TrainArgs),
    /// Say whether photos show a cat or a dog, with the probability.
    Predict(PredictArgs),
    /// Measure a model on a labelled photo folder: accuracy, per class, and its worst mistakes.
    Eval(EvalArgs),
    /// Measure photos per second of each backend, side by side.
    Bench(BenchArgs),
    /// Show the CPU and GPUs this machine has, and which backend auto picks.
    Devices(DevicesArgs),
    /// Write a generated dataset of drawn cat and dog faces.
    Synth(SynthArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog train\n  \
    catdog train --backend gpu --epochs 10\n  \
    catdog train --data data/dogs-vs-cats --image-size 128 --out models/big\n  \
    catdog train --data DIR --augment --epochs 30 --batch-size 64 --lr 0.002 --schedule one-cycle\n  \
    catdog train --backend cpu --json\n  \
    catdog train --resume --out models/big     # after Ctrl-C or a crash")]
pub struct TrainArgs {
    /// Folder of photos: one sub-folder per class (DIR/cat/, DIR/dog/) or Kaggle's names
    /// (DIR/cat.1.jpg). Without it, catdog trains on generated pictures.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// How many pictures to generate when there is no --data [default: 2000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(20..))]
    pub generated: Option<u32>,
    /// Where to compute: auto picks the GPU when there is a real one.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Passes over the training photos [default: 5]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub epochs: Option<u32>,
    /// Photos per training step [default: 32]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub batch_size: Option<u32>,
    /// Photos are squashed to this many pixels square [default: 64]
    #[arg(long, value_name = "PX", value_parser = clap::value_parser!(u32).range(16..=1024))]
    pub image_size: Option<u32>,
    /// AdamW's (peak) learning rate [default: 0.001]
    #[arg(long, value_name = "F")]
    pub lr: Option<f64>,
    /// How the learning rate changes over the run [default: cosine]
    #[arg(long, value_enum)]
    pub schedule: Option<Schedule>,
    /// AdamW's weight decay [default: 0.0005]
    #[arg(long, value_name = "F")]
    pub weight_decay: Option<f64>,
    /// Stop once validation accuracy has not improved for N epochs (the best epoch is kept
    /// either way)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub patience: Option<u32>,
    /// Fraction of each class held back to measure accuracy [default: 0.1]
    #[arg(long, value_name = "F")]
    pub val_split: Option<f64>,
    /// Seeds the weights, the split, the shuffling and the augmentation [default: 42]
    #[arg(long)]
    pub seed: Option<u64>,
    /// Randomly flip, crop and colour-shift the training pictures, differently every epoch
    #[arg(long)]
    pub augment: bool,
    /// Zero this fraction of the features before the classifier in every training step
    /// [default: 0]
    #[arg(long, value_name = "F")]
    pub dropout: Option<f64>,
    /// Give this share of each target's probability to all classes evenly; the training loss
    /// shown then includes it [default: 0]
    #[arg(long, value_name = "F")]
    pub label_smoothing: Option<f64>,
    /// Model folder to write; it also holds the run's checkpoint.
    #[arg(long, value_name = "DIR", default_value = "models/catdog")]
    pub out: PathBuf,
    /// Continue the interrupted run in --out, with the photos and settings it was started with.
    #[arg(long)]
    pub resume: bool,
    /// Print the final report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog eval --data ../shared/data/dogs-vs-cats-2k\n  \
    catdog eval --model models/big --data photos/test --worst 20 --json\n  \
    catdog eval --data photos/test --mistakes mistakes.png\n  \
    catdog eval --data photos --held-out --flip   # the photos `train --data photos` held out")]
pub struct EvalArgs {
    /// Labelled photos: one sub-folder per class, or Kaggle's `cat.123.jpg` names.
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// Model folder written by `catdog train`.
    #[arg(long, value_name = "DIR", default_value = "models/catdog")]
    pub model: PathBuf,
    /// Where to compute.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// How many of the most confidently wrong photos to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub worst: usize,
    /// Draw those photos, with what the model said, on a contact sheet (PNG).
    #[arg(long, value_name = "F.png")]
    pub mistakes: Option<PathBuf>,
    /// Evaluate only the photos that `catdog train --data DIR` held out for validation
    /// (with the same --val-split and --seed), not the ones it learned from.
    #[arg(long)]
    pub held_out: bool,
    /// The --val-split the model was trained with [default: 0.1]
    #[arg(long, value_name = "F", requires = "held_out")]
    pub val_split: Option<f64>,
    /// The --seed the model was trained with [default: 42]
    #[arg(long, requires = "held_out")]
    pub seed: Option<u64>,
    /// Average each photo's prediction with its mirror image's (twice the work).
    #[arg(long)]
    pub flip: bool,
    /// Print the whole result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog predict photo.jpg\n  \
    catdog predict --model models/big ~/Pictures/pets\n  \
    catdog predict --json a.jpg b.png")]
pub struct PredictArgs {
    /// Photos, or folders whose photos (sub-folders included) are all predicted.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Model folder written by `catdog train`.
    #[arg(long, value_name = "DIR", default_value = "models/catdog")]
    pub model: PathBuf,
    /// Where to compute; any backend runs a model trained on any other.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Average each photo's prediction with its mirror image's (twice the work).
    #[arg(long)]
    pub flip: bool,
    /// Print one JSON object per photo.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog bench\n  \
    catdog bench --backends wgpu,flex --image-size 128 --chart bench.svg\n  \
    catdog bench --data ~/Pictures/pets --json > bench.json")]
pub struct BenchArgs {
    /// Backends to measure, comma-separated [default: wgpu if there is a GPU, flex, ndarray]
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    pub backends: Vec<BackendChoice>,
    /// Side of the pictures in pixels.
    #[arg(long, value_name = "PX", default_value_t = 64, value_parser = clap::value_parser!(u32).range(16..=1024))]
    pub image_size: u32,
    /// Photos per step.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub batch_size: u32,
    /// Also time decoding these photos, and training on them straight from disk.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Minimum length of each timed window.
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    pub seconds: f64,
    /// Timed windows per figure; the median is reported.
    #[arg(long, value_name = "K", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeats: u32,
    /// Untimed training steps first (wgpu compiles and tunes its kernels then).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub warmup_steps: u32,
    /// Print the whole result as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Also write the table as Markdown to this file.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Also draw a bar chart to this .svg or .png file.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog devices\n  \
    catdog devices --json")]
pub struct DevicesArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog synth --out data/synth\n  \
    catdog synth --out data/synth --count 10000 --size 128")]
pub struct SynthArgs {
    /// Folder to write cat/ and dog/ into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Pictures to draw, half of each class.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(2..))]
    pub count: u32,
    /// Side of each picture in pixels.
    #[arg(long, value_name = "PX", default_value_t = 64, value_parser = clap::value_parser!(u32).range(16..=1024))]
    pub size: u32,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// Runs a parsed command line; errors are printed, and become a non-zero exit code.
pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Train(args) => run_train(args),
        Command::Predict(args) => run_predict(args),
        Command::Eval(args) => run_eval(args),
        Command::Bench(args) => run_bench(args),
        Command::Devices(args) => run_devices(args),
        Command::Synth(args) => run_synth(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", format!("{err:#}").trim_end());
            ExitCode::FAILURE
        }
    }
}

fn run_train(args: TrainArgs) -> Result<ExitCode> {
    let options = if args.resume {
        resume_options(&args)?
    } else {
        new_run_options(&args)
    };
    if !(options.settings.learning_rate > 0.0 && options.settings.learning_rate.is_finite()) {
        bail!(
            "--lr must be a positive number, not {}",
            options.settings.learning_rate
        );
    }
    for (flag, value) in [
        ("--dropout", options.settings.dropout),
        ("--label-smoothing", options.settings.label_smoothing),
    ] {
        if !(0.0..1.0).contains(&value) {
            bail!("{flag} must be at least 0 and below 1, not {value}");
        }
    }
    if !(0.0..0.9).contains(&options.val_split) {
        bail!(
            "--val-split must be at least 0 and below 0.9, not {}",
            options.val_split
        );
    }
    let selection = backend::select(args.backend)?;
    eprintln!(
        "backend: {} on {}. {}",
        selection.backend.kind, selection.backend.device_name, selection.reason
    );
    interrupt::install()?;
    let result = train::train(
        &options,
        &selection.backend,
        &mut TerminalProgress::default(),
    );
    let report = match result {
        Ok(report) => report,
        Err(err) => match err.downcast_ref::<Stopped>() {
            Some(stopped) => {
                eprintln!("{stopped}");
                return Ok(ExitCode::from(stopped.by.exit_code()));
            }
            None => return Err(err),
        },
    };
    if args.json {
        println!("{}", report::train_json(&report));
    } else {
        println!("{}", report::train_summary(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// The options of a new run: the flags given, defaults for the others.
fn new_run_options(args: &TrainArgs) -> TrainOptions {
    let defaults = TrainOptions::default();
    TrainOptions {
        data: args.data.clone(),
        generated_count: args
            .generated
            .map_or(defaults.generated_count, |n| n as usize),
        image_size: args.image_size.unwrap_or(defaults.image_size),
        val_split: args.val_split.unwrap_or(defaults.val_split),
        settings: FitSettings {
            epochs: args.epochs.map_or(defaults.settings.epochs, |n| n as usize),
            batch_size: args
                .batch_size
                .map_or(defaults.settings.batch_size, |n| n as usize),
            learning_rate: args.lr.unwrap_or(defaults.settings.learning_rate),
            schedule: args.schedule.unwrap_or(defaults.settings.schedule),
            weight_decay: args.weight_decay.unwrap_or(defaults.settings.weight_decay),
            seed: args.seed.unwrap_or(defaults.settings.seed),
            augment: args.augment,
            patience: args.patience.map(|n| n as usize),
            dropout: args.dropout.unwrap_or(defaults.settings.dropout),
            label_smoothing: args
                .label_smoothing
                .unwrap_or(defaults.settings.label_smoothing),
        },
        out: args.out.clone(),
        resume: false,
    }
}

/// The options the checkpointed run in `--out` was started with; a flag given with
/// `--resume` must agree with them.
fn resume_options(args: &TrainArgs) -> Result<TrainOptions> {
    let Some(state) = checkpoint::read_state(&args.out)? else {
        bail!(
            "no checkpoint to resume in {}: `catdog train --out {}` writes one after every epoch",
            args.out.display(),
            args.out.display()
        );
    };
    let options = TrainOptions::of_run(&state.run, &args.out);
    let settings = &options.settings;
    let conflicts: Vec<String> = [
        args.data
            .as_ref()
            .filter(|d| options.data.as_ref() != Some(*d))
            .map(|d| format!("--data {} (the run uses {:?})", d.display(), options.data)),
        differs(
            "--generated",
            args.generated.map(|n| n as usize),
            options.generated_count,
        ),
        differs("--image-size", args.image_size, options.image_size),
        differs("--epochs", args.epochs.map(|n| n as usize), settings.epochs),
        differs(
            "--batch-size",
            args.batch_size.map(|n| n as usize),
            settings.batch_size,
        ),
        differs("--lr", args.lr, settings.learning_rate),
        differs(
            "--schedule",
            args.schedule.map(|s| format!("{s:?}")),
            format!("{:?}", settings.schedule),
        ),
        differs("--weight-decay", args.weight_decay, settings.weight_decay),
        differs("--dropout", args.dropout, settings.dropout),
        differs(
            "--label-smoothing",
            args.label_smoothing,
            settings.label_smoothing,
        ),
        differs(
            "--patience",
            args.patience.map(|n| n.to_string()),
            settings
                .patience
                .map_or("none".to_string(), |n| n.to_string()),
        ),
        differs("--val-split", args.val_split, options.val_split),
        differs("--seed", args.seed, settings.seed),
        (args.augment && !settings.augment)
            .then(|| "--augment (the run does not augment)".to_string()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !conflicts.is_empty() {
        bail!(
            "--resume continues the run in {} with the settings it was started with; \
             these differ: {}",
            args.out.display(),
            conflicts.join(", ")
        );
    }
    Ok(options)
}

/// `"FLAG VALUE (the run uses RUN)"` when a flag was given with a value other than the run's.
fn differs<T: PartialEq + std::fmt::Display>(
    flag: &str,
    given: Option<T>,
    run: T,
) -> Option<String> {
    given
        .filter(|value| *value != run)
        .map(|value| format!("{flag} {value} (the run uses {run})"))
}

fn run_predict(args: PredictArgs) -> Result<ExitCode> {
    let mut photos = Vec::new();
    for path in &args.paths {
        if path.is_dir() {
            let found = photos_in(path, true)?;
            if found.is_empty() {
                bail!("no photos found in {}", path.display());
            }
            photos.extend(found);
        } else {
            photos.push(path.clone());
        }
    }
    let selection = backend::select(args.backend)?;
    let predictor = Predictor::load(&args.model, &selection.backend)?.with_flip(args.flip);
    let width = photos
        .iter()
        .map(|p| p.display().to_string().chars().count())
        .max()
        .unwrap_or(0);

    let mut failures = 0;
    for result in predictor.predict_files(&photos) {
        match result {
            Ok(prediction) if args.json => println!("{}", report::prediction_json(&prediction)),
            Ok(prediction) => println!("{}", report::prediction_line(&prediction, width)),
            Err(err) => {
                failures += 1;
                eprintln!("error: {}", format!("{err:#}").trim_end());
            }
        }
    }
    if failures > 0 {
        eprintln!(
            "{failures} of {} photos could not be predicted",
            photos.len()
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn run_eval(args: EvalArgs) -> Result<ExitCode> {
    if let Some(sheet) = &args.mistakes {
        contact_sheet::check_path(sheet)?;
    }
    let selection = backend::select(args.backend)?;
    let predictor = Predictor::load(&args.model, &selection.backend)?.with_flip(args.flip);
    let subset = if args.held_out {
        let defaults = TrainOptions::default();
        Photos::HeldOut {
            val_split: args.val_split.unwrap_or(defaults.val_split),
            seed: args.seed.unwrap_or(defaults.settings.seed),
        }
    } else {
        Photos::All
    };
    let evaluation = evaluate_folder(&predictor, &args.data, subset, args.worst)?;
    for skip in &evaluation.skipped {
        eprintln!("warning: skipped {}: {}", skip.path.display(), skip.reason);
    }
    if let Some(sheet) = &args.mistakes {
        contact_sheet::write(&evaluation.most_confidently_wrong, sheet)?;
        eprintln!("Drew the mistakes in {}", sheet.display());
    }
    match args.json {
        true => println!("{}", serde_json::to_string(&evaluation)?),
        false => print!("{}", report::evaluation_text(&evaluation)),
    }
    Ok(ExitCode::SUCCESS)
}

fn run_bench(args: BenchArgs) -> Result<ExitCode> {
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        bail!("--seconds must be a positive number, not {}", args.seconds);
    }
    let choices = if args.backends.is_empty() {
        let mut defaults = vec![BackendChoice::Flex, BackendChoice::Ndarray];
        if hardware::hardware_gpu().is_some() {
            defaults.insert(0, BackendChoice::Gpu);
        }
        defaults
    } else {
        args.backends
    };
    let mut backends: Vec<Backend> = Vec::new();
    for choice in choices {
        let backend = backend::select(choice)?.backend;
        if !backends.iter().any(|b| b.kind == backend.kind) {
            backends.push(backend);
        }
    }
    let settings = BenchSettings {
        image_size: args.image_size,
        batch_size: args.batch_size as usize,
        seconds: args.seconds,
        repeats: args.repeats as usize,
        warmup_steps: args.warmup_steps as usize,
        data: args.data,
    };
    let report = bench::run(&backends, &settings, &mut TerminalBenchProgress)?;
    if let Some(path) = &args.export_markdown {
        saved_model::write_atomically(path, report::bench_markdown(&report).as_bytes())?;
    }
    if let Some(path) = &args.chart {
        chart::write(&report::bench_chart(&report), path)?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("{}", report::bench_text(&report));
    }
    Ok(ExitCode::SUCCESS)
}

fn run_devices(args: DevicesArgs) -> Result<ExitCode> {
    let cpu = hardware::cpu_info();
    let adapters = hardware::all_gpu_adapters();
    let auto = backend::plan(BackendChoice::Auto)?;
    if args.json {
        println!("{}", report::devices_json(cpu, &adapters, &auto));
    } else {
        println!("{}", report::devices_text(cpu, &adapters, &auto));
    }
    Ok(ExitCode::SUCCESS)
}

fn run_synth(args: SynthArgs) -> Result<ExitCode> {
    synth::write_dataset(&args.out, args.count as usize, args.size, args.seed)?;
    println!(
        "Wrote {} pictures of {} px into {}/cat and {}/dog.",
        args.count,
        args.size,
        args.out.display(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
