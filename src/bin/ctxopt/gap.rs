//! `ctxopt gap`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ctxopt::measure::gap::client::{self, ClientFormat};
use ctxopt::measure::gap::{compare, read_wire, render_table};

/// Client output formats.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Format {
    /// Gemini CLI `--output-format json` (stats.tools.byName).
    GeminiJson,
    /// Claude Code `--output-format stream-json` (tool_use blocks).
    ClaudeStreamJson,
}

/// Output formats.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Output {
    /// A plain-text table.
    Table,
    /// The JSON document described in docs/gap.md.
    Json,
}

/// Arguments of `ctxopt gap`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The frame log of the trial.
    #[arg(long, value_name = "FRAME-LOG")]
    log: PathBuf,
    /// The client's own output for the same trial.
    #[arg(long, value_name = "FILE")]
    client: PathBuf,
    /// The client output format (detected when omitted).
    #[arg(long, value_enum)]
    client_format: Option<Format>,
    /// The name the client knows the server by (default: the log header's server name).
    #[arg(long, value_name = "NAME")]
    server: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Output,
    /// Write the result here (whole, mode 0600, via a temporary file) instead of to stdout.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Runs `ctxopt gap`. Exits 0 when clean, 1 when there is a gap, strays or no wire calls.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let wire = read_wire(&args.log)?;
    let text = std::fs::read_to_string(&args.client)
        .with_context(|| format!("reading {}", args.client.display()))?;
    let format = match args.client_format {
        Some(Format::GeminiJson) => ClientFormat::GeminiJson,
        Some(Format::ClaudeStreamJson) => ClientFormat::ClaudeStreamJson,
        None => client::detect(&text),
    };
    let calls = client::parse(&text, format)?;
    let server = args.server.unwrap_or_else(|| wire.server_name.clone());
    let report = compare(&wire, &calls, &server);
    let rendered = match args.format {
        Output::Table => render_table(&report),
        Output::Json => serde_json::to_string_pretty(&report)? + "\n",
    };
    crate::output_file::emit(args.output.as_deref(), rendered.as_bytes())?;
    Ok(if report.clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
