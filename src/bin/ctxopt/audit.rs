//! `ctxopt audit`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use ctxopt::evidence::catalog;
use ctxopt::injected::tool_filter::ToolFilter;
use ctxopt::measure::audit::{audit, render_table};
use ctxopt::measure::toollist::Hidden;
use ctxopt::measure::{probe, toollist};
use ctxopt::tokenizer::Tokenizer;

/// Output formats of `ctxopt audit`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Format {
    /// A plain-text table.
    Table,
    /// The JSON document described in docs/audit.md.
    Json,
}

/// Arguments of `ctxopt audit`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("input").required(true).args(["capture", "log", "diff", "server"]))]
pub(crate) struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// A captured tools/list response (JSON-RPC response or bare result, one page a line).
    #[arg(long, value_name = "FILE")]
    capture: Option<PathBuf>,
    /// A frame log: the last tools/list answer in it is audited.
    #[arg(long, value_name = "FRAME-LOG")]
    log: Option<PathBuf>,
    /// Two frame logs: what changed in the tool catalog from the first to the second (exit 1
    /// when it changed).
    #[arg(long, num_args = 2, value_names = ["LOG_A", "LOG_B"])]
    diff: Vec<PathBuf>,
    /// Tokenizer for every count.
    #[arg(long, default_value = "o200k_base")]
    tokenizer: Tokenizer,
    /// Seconds to wait for each answer of a started server.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Also count the listing without these tools (comma-separated), as
    /// `ctxopt-proxy --hide-tools` would show it.
    #[arg(long, value_name = "NAME,…", conflicts_with = "only_tools")]
    hide_tools: Option<String>,
    /// Also count the listing with only these tools (comma-separated), as
    /// `ctxopt-proxy --only-tools` would show it.
    #[arg(long, value_name = "NAME,…")]
    only_tools: Option<String>,
    /// Write the result here (whole, mode 0600, via a temporary file) instead of to stdout.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The server command to start, after `--`.
    #[arg(last = true, value_name = "SERVER COMMAND")]
    server: Vec<String>,
}

/// Runs `ctxopt audit`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let [a, b] = args.diff.as_slice() {
        let diff = catalog::diff(
            &toollist::from_frame_log(a)?.tools,
            &toollist::from_frame_log(b)?.tools,
            args.tokenizer,
        );
        let rendered = match args.format {
            Format::Table if diff.changed() => diff.lines().join("\n") + "\n",
            Format::Table => format!(
                "tool catalog unchanged: digest {}, {} tokens\n",
                diff.digest_now, diff.tokens_now
            ),
            Format::Json => serde_json::to_string_pretty(&diff)? + "\n",
        };
        crate::output_file::emit(args.output.as_deref(), rendered.as_bytes())?;
        return Ok(ExitCode::from(u8::from(diff.changed())));
    }
    let mut listing = if let Some(path) = &args.capture {
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
    let filter = ToolFilter::from_options(args.hide_tools.as_deref(), args.only_tools.as_deref());
    if filter.is_active() {
        listing.hidden = Hidden {
            names: listing
                .tools
                .iter()
                .filter_map(|t| t.get("name").and_then(|n| n.as_str()))
                .filter(|n| !filter.shows(n))
                .map(str::to_owned)
                .collect(),
            source: if args.only_tools.is_some() {
                "--only-tools"
            } else {
                "--hide-tools"
            }
            .into(),
        };
    }
    let mut report = audit(&listing, args.tokenizer);
    if let ToolFilter::Hide(names) | ToolFilter::Only(names) = &filter {
        let listed: Vec<&str> = report.tools.iter().map(|t| t.name.as_str()).collect();
        let unknown: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|n| !listed.contains(n))
            .collect();
        if !unknown.is_empty() {
            report.warnings.push(format!(
                "the server lists no tool named {}",
                unknown.join(", ")
            ));
        }
    }
    let rendered = match args.format {
        Format::Table => render_table(&report),
        Format::Json => serde_json::to_string_pretty(&report)? + "\n",
    };
    crate::output_file::emit(args.output.as_deref(), rendered.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
