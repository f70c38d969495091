//! `catdog devices`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::device::Survey;
use crate::output;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog devices\n  \
    catdog devices --json")]
pub struct DevicesArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn run(args: DevicesArgs) -> Result<ExitCode> {
    let survey = Survey::take()?;
    match args.json {
        true => println!("{}", output::devices_json(&survey)),
        false => println!("{}", output::devices_text(&survey)),
    }
    Ok(ExitCode::SUCCESS)
}
