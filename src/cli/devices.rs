//! `catdog devices`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::device::{self, BackendChoice};
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
    let cpu = device::cpu_info();
    let adapters = device::all_gpu_adapters();
    let auto = device::plan(BackendChoice::Auto)?;
    // The adapter `--backend wgpu` would use, opened to ask what its kernels can use.
    let wgpu = (!adapters.is_empty()).then(|| {
        device::select(BackendChoice::Wgpu)
            .map(|selection| selection.backend)
            .map_err(|err| format!("{err:#}"))
    });
    if args.json {
        println!(
            "{}",
            output::devices_json(cpu, &adapters, &auto, wgpu.as_ref())
        );
    } else {
        println!(
            "{}",
            output::devices_text(cpu, &adapters, &auto, wgpu.as_ref())
        );
    }
    Ok(ExitCode::SUCCESS)
}
