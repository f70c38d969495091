//! `catdog download`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use crate::download::{self, Request, SOURCES, Source};
use crate::output::{self, TerminalDownloadProgress};

#[derive(Debug, Args)]
#[command(after_help = "Data sets:\n  \
    oxford-pets   the Oxford-IIIT Pet images: 7,390 photos of 37 breeds, 792 MB (CC BY-SA 4.0)\n  \
    kaggle        Microsoft's copy of the Kaggle Dogs vs. Cats photos: about 25,000\n\n\
    Examples:\n  \
    catdog download oxford-pets                  # into data/oxford-pets/cat, …/dog\n  \
    catdog download kaggle --to ~/photos/kaggle\n  \
    catdog download oxford-pets --archive ~/Downloads/images.tar.gz   # downloaded by hand\n\n\
    An interrupted download resumes when the same command runs again.")]
pub struct DownloadArgs {
    /// The data set: oxford-pets or kaggle.
    #[arg(value_name = "SET", value_parser = SOURCES.map(|s| s.name))]
    pub set: String,
    /// The folder to create, with cat/ and dog/ inside [default: data/SET].
    #[arg(long, value_name = "DIR")]
    pub to: Option<PathBuf>,
    /// Fetch the same archive from this server instead (URL of the folder holding it).
    #[arg(long, value_name = "URL")]
    pub mirror: Option<String>,
    /// Unpack this archive, already downloaded, instead of fetching it.
    #[arg(long, value_name = "FILE", conflicts_with = "mirror")]
    pub archive: Option<PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn run(args: DownloadArgs) -> Result<ExitCode> {
    let Some(source) = Source::named(&args.set) else {
        bail!("no data set named {}", args.set);
    };
    let to = args
        .to
        .unwrap_or_else(|| PathBuf::from("data").join(source.name));
    let request = Request {
        to,
        mirror: args.mirror,
        archive: args.archive,
    };
    eprintln!("{}: {}", source.name, source.title);
    let summary = download::download(source, &request, &mut TerminalDownloadProgress::default())?;
    match args.json {
        true => println!("{}", serde_json::to_string(&summary)?),
        false => println!("{}", output::download_summary(&summary)),
    }
    Ok(ExitCode::SUCCESS)
}
