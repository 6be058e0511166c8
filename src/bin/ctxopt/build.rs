//! `ctxopt build`: records in, a budgeted, provenance-tagged context out.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ctxopt::optimizer::parse::parse_records;
use ctxopt::optimizer::{self, BuildConfig, DEFAULT_BUDGET};
use ctxopt::tokenizer::Tokenizer;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The context text.
    Text,
    /// The whole result: context, sources, omitted, report, stats.
    Json,
}

/// Arguments of `ctxopt build`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The records file (JSON, see docs/records.md).
    #[arg(long, conflicts_with = "stdin", required_unless_present = "stdin")]
    records: Option<PathBuf>,
    /// Read the records from standard input.
    #[arg(long)]
    stdin: bool,
    /// The task, overriding the records' own.
    #[arg(long)]
    task: Option<String>,
    /// The token budget of the context.
    #[arg(long, default_value_t = DEFAULT_BUDGET)]
    budget: usize,
    /// What to print.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write here (whole, mode 0600, via a temporary file) instead of standard output.
    #[arg(long)]
    output: Option<PathBuf>,
    /// The tokenizer: o200k_base, cl100k_base or chars/4.
    #[arg(long, default_value = "o200k_base")]
    tokenizer: Tokenizer,
}

/// Runs `ctxopt build`. Malformed records are an error naming the place; nothing is
/// written then.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (text, origin) = match &args.records {
        Some(path) => (
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
            path.display().to_string(),
        ),
        None => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("reading standard input")?;
            (s, "<stdin>".to_string())
        }
    };
    let records = parse_records(&text).with_context(|| format!("{origin}: malformed records"))?;
    let config = BuildConfig {
        budget: args.budget,
        task: args.task,
        tokenizer: args.tokenizer,
        ..BuildConfig::default()
    };
    let out = optimizer::build(&records, &config)
        .with_context(|| format!("{origin}: invalid records"))?;
    let mut bytes = match args.format {
        Format::Text => out.context.into_bytes(),
        Format::Json => serde_json::to_vec_pretty(&out).context("encoding the result")?,
    };
    if args.format == Format::Json {
        bytes.push(b'\n');
    }
    crate::output_file::emit(args.output.as_deref(), &bytes)?;
    Ok(ExitCode::SUCCESS)
}
