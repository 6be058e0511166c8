//! `ctxopt report`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ctxopt::measure::report::{self, html, text};

/// Output formats of `ctxopt report`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
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
pub struct Args {
    /// Frame logs written by ctxopt-proxy (any number; several sessions and servers).
    #[arg(required = true, value_name = "FRAME-LOG")]
    logs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Write the report here instead of to stdout (created with mode 0600: anomaly details
    /// quote frame text).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Runs `ctxopt report`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let report = report::collect(&args.logs)?;
    let rendered = match args.format {
        Format::Table => text::render(&report, text::Style::Plain),
        Format::Md => text::render(&report, text::Style::Markdown),
        Format::Json => serde_json::to_string_pretty(&report)? + "\n",
        Format::Html => html::render(&report),
    };
    match &args.output {
        Some(path) => write_private(path, rendered.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => print!("{rendered}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `bytes` to `path`, readable by its owner only (an existing file is narrowed too).
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)
}
