//! `ctxopt ingest`: replays frame logs into the session store, as the proxy does live, so
//! sessions recorded earlier (or while the store was unavailable) reach `build_context`.
//! Ingesting a log twice adds nothing.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ctxopt::bridge::ingest::{ingest, IngestError};
use ctxopt::bridge::replay::replay;
use ctxopt::store::{Scope, Store};

/// Arguments of `ctxopt ingest`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Frame logs (JSON Lines, as ctxopt-proxy writes them).
    #[arg(required = true)]
    logs: Vec<PathBuf>,
    /// The store: a SQLite file, or `:memory:` (default: as `ctxopt serve`).
    #[arg(long)]
    store: Option<String>,
    /// The workspace the records belong to (default: the current directory).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// Store raw copies: secrets in the records are not redacted. Warns on stderr.
    #[arg(long)]
    no_redact: bool,
    /// The server name (default: the log header's `server_name`).
    #[arg(long)]
    server: Option<String>,
}

/// Tool calls stored per transaction: short transactions, so concurrent writers (proxies,
/// other ingests) interleave.
const BATCH: usize = 64;

/// Runs `ctxopt ingest`: one short transaction per [`BATCH`] tool calls, so an interrupted
/// run keeps what it stored and a rerun completes it.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut store = crate::serve::raw_if_asked(
        Store::open_arg(args.store.as_deref())?,
        args.no_redact,
        "ctxopt ingest",
    );
    let (mut inserted, mut duplicates) = (0, 0);
    for log in &args.logs {
        let text =
            std::fs::read_to_string(log).with_context(|| format!("reading {}", log.display()))?;
        let replayed = replay(&text);
        if !replayed.bad_lines.is_empty() {
            eprintln!(
                "ctxopt ingest: {}: {} line(s) are not frame-log records",
                log.display(),
                replayed.bad_lines.len()
            );
        }
        let header = replayed.header.as_ref();
        let server = args
            .server
            .clone()
            .or_else(|| header.map(|h| h.server_name.clone()))
            .unwrap_or_else(|| "unknown".into());
        let session = header.map_or_else(
            || log.display().to_string(),
            |h| format!("{}-{}", h.started, h.proxy_pid),
        );
        let scope = Scope::resolve(args.workspace.as_deref(), &server, session)
            .context("resolving the workspace")?;
        let log_path = std::path::absolute(log)
            .unwrap_or_else(|_| log.clone())
            .display()
            .to_string();
        for batch in replayed.pairs.chunks(BATCH) {
            let mut records = Vec::new();
            for pair in batch {
                // Relayed frames only reach the server's tools: nothing here is ours.
                match ingest(&pair.as_frame_pair(&log_path), &|_| false) {
                    Ok(made) => records.extend(made),
                    Err(IngestError::NotToolCall | IngestError::NoOutcome) => {}
                    Err(err) => {
                        eprintln!("ctxopt ingest: {} seq {}: {err}", log.display(), pair.seq)
                    }
                }
            }
            let outcome = store.insert(&scope, &records)?;
            inserted += outcome.inserted;
            duplicates += outcome.duplicates;
        }
    }
    eprintln!("ctxopt ingest: {inserted} record(s) stored, {duplicates} already present");
    Ok(ExitCode::SUCCESS)
}
