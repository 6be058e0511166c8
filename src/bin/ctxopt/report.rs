//! `ctxopt report`.

use std::path::PathBuf;
use std::process::ExitCode;

use ctxopt::measure::report::{self, html, text};
use ctxopt::store::Store;

/// Output formats of `ctxopt report`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Format {
    /// Aligned plain-text tables.
    Table,
    /// The JSON document described in docs/report.md.
    Json,
    /// Markdown tables.
    Md,
    /// One self-contained HTML file with charts.
    Html,
}

/// Arguments of `ctxopt report`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Frame logs written by ctxopt-proxy (any number; several sessions and servers).
    #[arg(required = true, value_name = "FRAME-LOG")]
    logs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Also read the hook ledger of this store (a path): what the client hooks injected into
    /// each session's context, beside what wire compaction saved.
    #[arg(long, value_name = "STORE")]
    store: Option<PathBuf>,
    /// Write the report here (whole, mode 0600, via a temporary file: anomaly details quote
    /// frame text) instead of to stdout.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Runs `ctxopt report`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut report = report::collect(&args.logs)?;
    if let Some(path) = &args.store {
        anyhow::ensure!(path.is_file(), "{}: no such store", path.display());
        report.hook_injections = Store::open_path(path)?.injection_totals(None)?;
    }
    let rendered = match args.format {
        Format::Table => text::render(&report, text::Style::Plain),
        Format::Md => text::render(&report, text::Style::Markdown),
        Format::Json => serde_json::to_string_pretty(&report)? + "\n",
        Format::Html => html::render(&report),
    };
    crate::output_file::emit(args.output.as_deref(), rendered.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
