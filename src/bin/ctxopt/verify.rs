//! `ctxopt verify`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ctxopt::evidence::recording::{load, LoadOptions};
use ctxopt::evidence::verify::{render_table, verify, VerifyOptions};
use ctxopt::tokenizer::Tokenizer;

use crate::evidence_args::MatchArgs;

/// Output formats of `ctxopt verify`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Format {
    /// Plain text.
    Table,
    /// The JSON document described in docs/replay.md.
    Json,
}

/// Arguments of `ctxopt verify`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The frame log whose client requests are re-sent.
    #[arg(value_name = "FRAME-LOG")]
    log: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Seconds to wait for each answer.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Count answers whose values changed (same shape) as drift too.
    #[arg(long)]
    content: bool,
    /// Tokenizer for the token figures.
    #[arg(long, default_value = "o200k_base")]
    tokenizer: Tokenizer,
    #[command(flatten)]
    matching: MatchArgs,
    /// A remote live server's Streamable HTTP endpoint instead of a command: reached
    /// through `ctxopt-proxy --url` (no log, no injected tools), as the proxy reaches it.
    #[arg(long, value_name = "URL", conflicts_with = "server")]
    url: Option<String>,
    /// A header for the remote server, `Name: value` (repeatable; `${ENV}` in the value is
    /// expanded), as `ctxopt-proxy --header` takes it.
    #[arg(long, value_name = "HEADER", requires = "url")]
    header: Vec<String>,
    /// The live server's command, after `--`.
    #[arg(
        last = true,
        required_unless_present = "url",
        value_name = "SERVER COMMAND"
    )]
    server: Vec<String>,
}

/// The command that reaches the remote server at `url`: the `ctxopt-proxy` installed beside
/// this binary (else the one on `PATH`), relaying only: no log, no store, no injected tools.
fn remote_server(url: &str, headers: &[String]) -> Vec<String> {
    let beside = std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name(ctxopt::clients::entries::PROXY))
        .filter(|proxy| proxy.is_file());
    let proxy = beside.map_or_else(
        || ctxopt::clients::entries::PROXY.to_string(),
        |p| p.to_string_lossy().into_owned(),
    );
    let mut command = vec![proxy];
    for arg in [
        "--no-log", "--store", ":memory:", "--inject", "none", "--url", url,
    ] {
        command.push(arg.to_string());
    }
    for header in headers {
        command.push("--header".to_string());
        command.push(header.clone());
    }
    command
}

/// Runs `ctxopt verify`: exit 0 without drift, 1 with drift, 2 on error.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let recording = load(
        &args.log,
        &LoadOptions {
            run: args.matching.run,
            allow_incomplete: args.matching.allow_incomplete,
            as_delivered: false,
        },
    )?;
    for note in &recording.notes {
        eprintln!("ctxopt verify: {note}");
    }
    let options = VerifyOptions {
        volatile: args.matching.volatile()?,
        timeout: Duration::from_secs(args.timeout),
        content_is_drift: args.content,
        tokenizer: args.tokenizer,
    };
    let server = match &args.url {
        Some(url) => remote_server(url, &args.header),
        None => args.server,
    };
    let report = verify(&recording, &server, &options)?;
    match args.format {
        Format::Table => print!("{}", render_table(&report)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
    }
    Ok(ExitCode::from(u8::from(report.drift)))
}
