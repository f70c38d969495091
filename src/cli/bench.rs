//! `catdog bench`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use crate::bench::{self, BenchSettings};
use crate::chart;
use crate::device::{BackendChoice, Precision};
use crate::fs::write_atomically;
use crate::model::NetworkKind;
use crate::output::{self, TerminalBenchProgress};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog bench\n  \
    catdog bench --backends wgpu,flex --image-size 128 --chart bench.svg\n  \
    catdog bench --backends gpu,cpu --batch-size 32,128,512 --data-on-device\n  \
    catdog bench --network resnet18     # the article's kind of network, 224 px\n  \
    catdog bench --data ~/Pictures/pets --json > bench.json")]
pub struct BenchArgs {
    /// Backends to measure, comma-separated [default: wgpu if there is a GPU, flex, and
    /// ndarray but for resnet18]
    #[arg(short, long, value_enum, value_delimiter = ',', value_name = "LIST")]
    pub backends: Vec<BackendChoice>,
    /// The network every backend trains; `small-cnn,resnet18` measures one, then the other,
    /// and ends with both answers in one line.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "LIST",
        default_value = "small-cnn"
    )]
    pub network: Vec<NetworkKind>,
    /// Side of the pictures in pixels [default: 64 for either small-cnn, 224 for resnet18]
    #[arg(long, value_name = "PX", value_parser = super::image_size)]
    pub image_size: Option<u32>,
    /// Photos per step; a comma-separated list measures each, and the table marks every
    /// backend's best.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "32",
          value_parser = clap::value_parser!(u32).range(1..=*bench::BATCH_SIZES.end() as i64))]
    pub batch_size: Vec<u32>,
    /// Upload the batches once and keep them on the device, so that the figures are the
    /// device's alone (by default each step makes its batch on the host and uploads it, as
    /// training does).
    #[arg(long)]
    pub data_on_device: bool,
    /// The float type the GPU computes in; the CPU backends compute in f32 only.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,
    /// Also time decoding these photos, and training on them straight from disk.
    #[arg(short, long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Minimum length of each timed window.
    #[arg(long, value_name = "S", default_value_t = defaults().seconds)]
    pub seconds: f64,
    /// Timed windows per figure; the median is reported.
    #[arg(long, value_name = "K", default_value_t = defaults().repeats as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub repeats: u32,
    /// Untimed training steps first (wgpu compiles and tunes its kernels then).
    #[arg(long, value_name = "N", default_value_t = defaults().warmup_steps as u32)]
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

fn defaults() -> BenchSettings {
    BenchSettings::default()
}

pub(super) fn run(args: BenchArgs) -> Result<ExitCode> {
    if let Some(path) = &args.chart {
        chart::check_chart_path(path)?;
    }
    let networks = distinct(&args.network);
    if networks.len() > 1 && (args.chart.is_some() || args.export_markdown.is_some()) {
        bail!(
            "--chart and --export-markdown take one network at a time, not {}",
            networks.len()
        );
    }
    let settings = |network: NetworkKind| BenchSettings {
        network,
        image_size: args.image_size.unwrap_or(network.default_image_size()),
        batch_sizes: distinct(&args.batch_size)
            .into_iter()
            .map(|size| size as usize)
            .collect(),
        data_on_device: args.data_on_device,
        seconds: args.seconds,
        repeats: args.repeats as usize,
        warmup_steps: args.warmup_steps as usize,
        data: args.data.clone(),
        cancel: None,
    };
    // Every network's settings checked before the first is measured (memory aside, which
    // depends on the backends).
    for &network in &networks {
        settings(network).check(false)?;
    }
    let mut reports = Vec::new();
    for &network in &networks {
        let choices = match args.backends.is_empty() {
            true => {
                if let Some(why) = bench::ndarray_left_out(network) {
                    eprintln!("bench: {why}");
                }
                bench::default_choices(network)
            }
            false => args.backends.clone(),
        };
        let backends = bench::open_backends(&choices, args.precision, &mut |line| {
            eprintln!("bench: {line}")
        })?;
        let report = bench::run(&backends, &settings(network), &mut TerminalBenchProgress)?;
        if let Some(path) = &args.export_markdown {
            write_atomically(path, output::bench_markdown(&report).as_bytes())?;
        }
        if let Some(path) = &args.chart {
            chart::write(&output::bench_chart(&report), path)?;
        }
        if args.json {
            // With the plain answer that opens the text report, for scripts that show it; one
            // line per network.
            let mut json = serde_json::to_value(&report)?;
            json["verdict"] = output::bench_verdict(&report).into();
            println!("{json}");
        } else {
            println!("{}", output::bench_text(&report));
        }
        reports.push(report);
    }
    if reports.len() > 1 && !args.json {
        println!("{}", output::networks_line(&reports));
    }
    Ok(ExitCode::SUCCESS)
}

/// A list flag's values (`--batch-size`, `--network`), each once, in the order given.
fn distinct<T: Copy + PartialEq>(values: &[T]) -> Vec<T> {
    let mut kept: Vec<T> = Vec::new();
    for &value in values {
        if !kept.contains(&value) {
            kept.push(value);
        }
    }
    kept
}
