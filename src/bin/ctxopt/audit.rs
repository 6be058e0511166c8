//! `ctxopt audit`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use ctxopt::measure::audit::{audit, render_table};
use ctxopt::measure::{probe, toollist};
use ctxopt::tokenizer::Tokenizer;

/// Output formats of `ctxopt audit`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// A plain-text table.
    Table,
    /// The JSON document described in docs/audit.md.
    Json,
}

/// Arguments of `ctxopt audit`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("input").required(true).args(["capture", "log", "server"]))]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// A captured tools/list response (JSON-RPC response or bare result, one page a line).
    #[arg(long, value_name = "FILE")]
    capture: Option<PathBuf>,
    /// A frame log: the last tools/list answer in it is audited.
    #[arg(long, value_name = "FRAME-LOG")]
    log: Option<PathBuf>,
    /// Tokenizer for every count.
    #[arg(long, default_value = "o200k_base")]
    tokenizer: Tokenizer,
    /// Seconds to wait for each answer of a started server.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Write the result here (whole, mode 0600, via a temporary file) instead of to stdout.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The server command to start, after `--`.
    #[arg(last = true, value_name = "SERVER COMMAND")]
    server: Vec<String>,
}

/// Runs `ctxopt audit`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let listing = if let Some(path) = &args.capture {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut listing = toollist::from_capture(&text)?;
        listing.source = format!(
            "capture:{}",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        listing
    } else if let Some(path) = &args.log {
        toollist::from_frame_log(path)?
    } else {
        probe::probe(&args.server, Duration::from_secs(args.timeout))?
    };
    let report = audit(&listing, args.tokenizer);
    let rendered = match args.format {
        Format::Table => render_table(&report),
        Format::Json => serde_json::to_string_pretty(&report)? + "\n",
    };
    crate::output_file::emit(args.output.as_deref(), rendered.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
