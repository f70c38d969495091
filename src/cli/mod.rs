//! The command line: `catdog train`, `predict`, `eval`, `bench`, `devices`, `download`,
//! `serve` and `synth`, one file each. The only module that knows about clap; each command turns its
//! flags into the library's types, calls the library, and prints through [`crate::output`].

mod bench;
mod devices;
mod download;
mod eval;
mod predict;
mod serve;
mod synth;
mod train;
mod values;

use std::fmt::Display;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::device::{self, Backend, BackendChoice, Precision};
use crate::model::{IMAGE_SIZES, ModelChoice};
use crate::training::TrainOptions;

#[derive(Debug, Parser)]
#[command(
    name = "catdog",
    version,
    arg_required_else_help = true,
    // catdog's own `help`, which also takes `--help` (clap's refuses every flag).
    disable_help_subcommand = true,
    about = "Train a small network to tell cats from dogs, on the GPU or the CPU, \
             and see how many photos per second each one processes.",
    after_help = "Examples:\n  \
        catdog predict photo.jpg              # cat or dog, and how sure (the built-in model)\n  \
        catdog devices                        # does this computer have a GPU?\n  \
        catdog bench                          # this CPU and GPU in photos/s, beside the article\n  \
        catdog train                          # the speed demo on generated pictures (models/demo)\n  \
        catdog train -b cpu                   # the same on the CPU, to compare photos/s\n  \
        catdog download oxford-pets           # 7,390 real photos into data/oxford-pets\n  \
        catdog train -d data/oxford-pets      # a model of your own (models/catdog)\n  \
        catdog predict ~/Pictures/pets        # every photo in a folder\n  \
        catdog serve --open                   # all of it on a page in your browser"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Train a model on a folder of photos (or on generated pictures) and save it.
    Train(train::TrainArgs),
    /// Say whether photos show a cat or a dog, with the probability.
    Predict(predict::PredictArgs),
    /// Measure a model on a labelled photo folder: accuracy, per class, and its worst mistakes.
    Eval(eval::EvalArgs),
    /// Measure photos per second of each backend, side by side.
    Bench(bench::BenchArgs),
    /// Show the CPU and GPUs this machine has, and which backend auto picks.
    Devices(devices::DevicesArgs),
    /// Download a data set of cat and dog photos into a folder catdog trains on.
    Download(download::DownloadArgs),
    /// Open catdog as a page in the browser: drop photos on it, race the CPU against the GPU.
    Serve(serve::ServeArgs),
    /// Write a generated dataset of drawn cat and dog faces.
    Synth(synth::SynthArgs),
    /// Print this help, or a command's (the same as `catdog COMMAND --help`).
    Help {
        /// The command whose help to print.
        command: Option<String>,
    },
}

/// Runs a parsed command line; errors are printed, and become a non-zero exit code.
fn run(cli: Cli) -> ExitCode {
    if !matches!(cli.command, Command::Serve(_) | Command::Download(_)) {
        end_quietly_when_the_reader_leaves();
    }
    let result = match cli.command {
        Command::Train(args) => train::run(args),
        Command::Predict(args) => predict::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Devices(args) => devices::run(args),
        Command::Download(args) => download::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Synth(args) => synth::run(args),
        Command::Help { command } => help(command.as_deref()),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", format!("{err:#}").trim_end());
            ExitCode::FAILURE
        }
    }
}

/// Lets a closed pipe end the process, as it ends other Unix tools: `catdog train | head -2`
/// then stops quietly once `head` has its lines. Rust's runtime ignores SIGPIPE, so printing
/// would otherwise panic (exit code 101). Not for `serve` and `download`, which talk to
/// sockets: a client that goes away must not end them.
fn end_quietly_when_the_reader_leaves() {
    #[cfg(unix)]
    {
        use nix::sys::signal::{SigHandler, Signal, signal};
        // SAFETY: restores the default action; no handler runs.
        let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
    }
}

/// `catdog help [COMMAND]`: clap's help for catdog or for COMMAND, as `--help` prints it.
fn help(command: Option<&str>) -> Result<ExitCode> {
    use clap::CommandFactory;
    let words: Vec<&str> = ["catdog"]
        .into_iter()
        .chain(command)
        .chain(["--help"])
        .collect();
    match Cli::command().try_get_matches_from(words) {
        Err(err) if err.kind() == clap::error::ErrorKind::DisplayHelp => {
            err.print()?;
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            let names: Vec<String> = Cli::command()
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect();
            anyhow::bail!(
                "catdog has no command '{}': its commands are {}",
                command.unwrap_or_default(),
                names.join(", ")
            )
        }
    }
}

/// Parses the command line of this process and runs it.
pub fn main() -> ExitCode {
    run(Cli::parse())
}

/// Whether catdog takes these words as a command line, without running anything: `Ok` for a
/// command or for `--help`/`--version`, clap's error otherwise. For checking the examples in
/// the help texts and documents (tests/specs/examples.rs).
pub fn parse_check(words: &[String]) -> Result<(), String> {
    use clap::error::ErrorKind;
    match Cli::try_parse_from(words) {
        Ok(_) => Ok(()),
        Err(err)
            if matches!(
                err.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) =>
        {
            Ok(())
        }
        Err(err) => Err(err.to_string()),
    }
}

/// Help for a flag whose default is the library's: `"TEXT [default: VALUE]"`.
fn with_default(text: &str, value: impl Display) -> String {
    format!("{text} [default: {value}]")
}

/// The flags `predict` and `eval` share: which model answers, where it runs, and how.
#[derive(Debug, clap::Args)]
pub struct AnsweringArgs {
    #[arg(short, long, value_name = "DIR|builtin", help = MODEL_HELP)]
    pub model: Option<PathBuf>,
    /// Where to compute; any backend runs a model trained on any other.
    #[arg(short, long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// The float type the GPU computes in.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,
    #[arg(long, help = NO_FLIP_HELP)]
    pub no_flip: bool,
    /// Hidden: averaging with the mirror image became the default; scripts that asked for it
    /// with `--flip` still work.
    #[arg(long, hide = true, conflicts_with = "no_flip")]
    pub flip: bool,
    #[arg(long, value_name = "P", value_parser = probability,
          help = with_default(NOT_SURE_HELP, crate::inference::NOT_SURE_BELOW))]
    pub not_sure_below: Option<f32>,
}

/// `--model`'s help, for the commands that run a trained model.
const MODEL_HELP: &str = "Model folder written by `catdog train`, or `builtin` for the one \
    built into catdog (trained on Kaggle photos) [default: models/catdog where it holds a \
    model, builtin otherwise]";

/// `--no-flip`'s help, for predict, eval and serve.
const NO_FLIP_HELP: &str = "Answer from the photo alone. Without it, each photo's answer is the \
    mean of the photo's and its mirror image's: twice the work, for about half a point of accuracy";

/// `--not-sure-below`'s help, for predict and eval.
const NOT_SURE_HELP: &str = "Call an answer \"not sure\" when its probability is below P \
    (0 to 1; at 0 only a photo unlike those the model learned from is)";

/// An image side in pixels within [`IMAGE_SIZES`], for clap's `--image-size` and `--size`.
fn image_size(text: &str) -> std::result::Result<u32, String> {
    match text.parse::<u32>() {
        Ok(px) if IMAGE_SIZES.contains(&px) => Ok(px),
        _ => Err(format!(
            "{text} is not an image size catdog takes: give {} to {} (pixels)",
            IMAGE_SIZES.start(),
            IMAGE_SIZES.end()
        )),
    }
}

/// A probability from 0 to 1, for clap.
fn probability(text: &str) -> std::result::Result<f32, String> {
    match text.parse::<f32>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "{text} is not a probability: give a number from 0 to 1"
        )),
    }
}

/// The model `--model` names, or the default one when it is absent.
fn model_choice(arg: Option<PathBuf>) -> ModelChoice {
    match arg {
        Some(value) => ModelChoice::parse(value),
        None => ModelChoice::default_for(&TrainOptions::default().out),
    }
}

/// `--backend` opened for a saved model, computing in `--precision`. `eval`, whose report gives
/// a speed, names the backend as `train` does; `predict` speaks only where this run tunes GPU
/// kernels, which can take minutes, so that a first run does not seem to hang.
fn open_backend(choice: BackendChoice, precision: Precision, name_it: bool) -> Result<Backend> {
    let selection = device::select(choice)?;
    if name_it {
        eprintln!("{}", backend_line(&selection));
    } else if let Some(note) = &selection.tuning_note {
        eprintln!("{note}");
    }
    let mut backend = selection.backend;
    backend.set_precision(precision)?;
    Ok(backend)
}

/// "backend: wgpu on …. Why it was chosen, and where its tuned kernels are kept."
fn backend_line(selection: &device::Selection) -> String {
    format!(
        "backend: {} on {}. {}",
        selection.backend.kind, selection.backend.device_name, selection.reason
    )
}
