//! `catdog synth`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::data::synth;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog synth --out data/synth\n  \
    catdog synth --out data/synth --count 10000 --size 128")]
pub struct SynthArgs {
    /// Folder to write cat/ and dog/ into.
    #[arg(short, long, value_name = "DIR")]
    pub out: PathBuf,
    /// Pictures to draw, half of each class.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(2..))]
    pub count: u32,
    /// Side of each picture in pixels.
    #[arg(long, value_name = "PX", default_value_t = 64, value_parser = super::image_size)]
    pub size: u32,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

pub(super) fn run(args: SynthArgs) -> Result<ExitCode> {
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
