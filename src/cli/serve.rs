//! `catdog serve`.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{MODEL_HELP, NOT_SURE_HELP, model_choice, open_backend, probability};
use crate::device::{BackendChoice, Precision};
use crate::inference::NOT_SURE_BELOW;
use crate::serve::{ServeOptions, Server, default_bench_history};
use crate::training::{Interrupt, install_interrupt_handlers_saying, interrupted};

/// What the first Ctrl-C prints.
const STOPPING: &str = "\ncatdog: stopping the server; Ctrl-C again quits at once.\n";

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    catdog serve --open                 # the page, in your browser\n  \
    catdog serve --port 9000\n  \
    catdog serve --model models/catdog  # answer with a model of your own")]
pub struct ServeArgs {
    /// The port to listen on (0: any free one).
    #[arg(short, long, value_name = "N", default_value_t = 8080)]
    pub port: u16,
    /// The address to listen on. Anything but 127.0.0.1 (or ::1) lets other computers on the
    /// network use the page.
    #[arg(long, value_name = "IP", default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Open the page in the default browser.
    #[arg(long)]
    pub open: bool,
    #[arg(short, long, value_name = "DIR", help = MODEL_HELP)]
    pub model: Option<PathBuf>,
    /// Where the model answers: cpu, gpu, … (the race on the page measures every backend).
    #[arg(short, long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    #[arg(long, value_name = "P", value_parser = probability, default_value_t = NOT_SURE_BELOW,
          help = NOT_SURE_HELP)]
    pub not_sure_below: f32,
    #[arg(long, help = super::NO_FLIP_HELP)]
    pub no_flip: bool,
}

pub(super) fn run(args: ServeArgs) -> Result<ExitCode> {
    let backend = open_backend(args.backend, Precision::F32, true)?;
    // `::ffff:127.0.0.1` is 127.0.0.1 written as an IPv6 address: this computer only.
    if !args.host.to_canonical().is_loopback() {
        eprintln!(
            "warning: listening on {}: anyone who can reach this computer over the network can \
             use the page (send it photos, run the race). Leave --host out to keep it to this \
             computer.",
            args.host
        );
    }
    let server = Server::start(ServeOptions {
        host: args.host,
        port: args.port,
        model: model_choice(args.model),
        backend,
        not_sure_below: args.not_sure_below,
        flip: !args.no_flip,
        bench_history: default_bench_history(),
    })?;
    install_interrupt_handlers_saying(STOPPING)?;
    let url = server.url();
    println!("catdog serve: the page is at {url}");
    println!("{}", server.model_line());
    println!("Ctrl-C stops it.");
    // A script (or a test) reads the address as soon as it is there.
    std::io::stdout().flush()?;
    if args.open
        && let Err(err) = open::that_detached(&url)
    {
        eprintln!("cannot open a browser ({err}): open {url} in yours");
    }
    server.run(&|| interrupted().is_some())?;
    eprintln!("catdog: the server stopped.");
    // Ctrl-C is how a user stops it; SIGTERM (a service manager, `kill`) is reported as
    // other programs report it, 143.
    Ok(match interrupted() {
        Some(Interrupt::Terminated) => ExitCode::from(Interrupt::Terminated.exit_code()),
        _ => ExitCode::SUCCESS,
    })
}
