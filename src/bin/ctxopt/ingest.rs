//! `ctxopt ingest`: replays frame logs into the session store, as the proxy does live, so
//! sessions recorded earlier (or while the store was unavailable) reach `build_context`.
//! Ingesting a log twice adds nothing.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use ctxopt::framelog::Header;
use ctxopt::import::frame_log::{Replay, Replayed};
use ctxopt::import::mcp::{ingest, IngestError};
use ctxopt::store::{Scope, Store, StoreArgs};

/// Arguments of `ctxopt ingest`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Frame logs (JSON Lines, as ctxopt-proxy writes them).
    #[arg(required = true)]
    logs: Vec<PathBuf>,
    #[command(flatten)]
    store: StoreArgs,
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
/// run keeps what it stored and a rerun completes it. Each log streams by (a line at a
/// time): memory does not grow with its size.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut store = crate::serve::raw_if_asked(
        Store::open_arg(args.store.store.as_deref())?,
        args.no_redact,
        "ctxopt ingest",
    );
    let mut counts = Counts::default();
    for log in &args.logs {
        ingest_log(&mut store, &args, log, &mut counts)?;
    }
    tracing::info!(
        "ctxopt ingest: {} record(s) stored, {} already present",
        counts.inserted,
        counts.duplicates
    );
    Ok(ExitCode::SUCCESS)
}

/// Records stored and found already stored.
#[derive(Default)]
struct Counts {
    inserted: usize,
    duplicates: usize,
}

/// Where one log's records go, known once its header (or its first pair) is read.
struct Target {
    scope: Scope,
    log_path: String,
}

fn target(args: &Args, log: &Path, header: Option<&Header>) -> anyhow::Result<Target> {
    let server = args
        .server
        .clone()
        .or_else(|| header.map(|h| h.server_name.clone()))
        .unwrap_or_else(|| "unknown".into());
    let session = header.map_or_else(
        || log.display().to_string(),
        |h| format!("{}-{}", h.started, h.proxy_pid),
    );
    let scope = Scope::resolve(args.store.workspace.as_deref(), &server, session)
        .context("resolving the workspace")?;
    let log_path = std::path::absolute(log)
        .unwrap_or_else(|_| log.to_path_buf())
        .display()
        .to_string();
    Ok(Target { scope, log_path })
}

fn ingest_log(
    store: &mut Store,
    args: &Args,
    log: &Path,
    counts: &mut Counts,
) -> anyhow::Result<()> {
    tracing::debug!("ctxopt ingest: reading {}", log.display());
    let mut target: Option<Target> = None;
    let mut header: Option<Header> = None;
    let mut records = Vec::new();
    let mut calls = 0;
    let mut bad_lines = 0u64;
    let mut flush = |target: &Target, records: &mut Vec<_>| -> anyhow::Result<()> {
        let outcome = store.insert(&target.scope, records)?;
        tracing::debug!(
            "ctxopt ingest: {} record(s) in, {} new",
            records.len(),
            outcome.inserted
        );
        counts.inserted += outcome.inserted;
        counts.duplicates += outcome.duplicates;
        records.clear();
        Ok(())
    };
    for item in Replay::open(log)? {
        let pair = match item? {
            Replayed::Header(h) => {
                header.get_or_insert(h);
                continue;
            }
            Replayed::Bad(_) => {
                bad_lines += 1;
                continue;
            }
            Replayed::Pair(pair) => pair,
        };
        if target.is_none() {
            target = Some(self::target(args, log, header.as_ref())?);
        }
        let Some(target) = &target else { continue };
        // Relayed frames only reach the server's tools: nothing here is ours.
        match ingest(&pair.as_frame_pair(&target.log_path), &|_| false) {
            Ok(made) => records.extend(made),
            Err(IngestError::NotToolCall | IngestError::NoOutcome) => {}
            Err(err) => tracing::warn!("ctxopt ingest: {} seq {}: {err}", log.display(), pair.seq),
        }
        calls += 1;
        if calls % BATCH == 0 {
            flush(target, &mut records)?;
        }
    }
    if let Some(target) = &target {
        flush(target, &mut records)?;
    }
    if bad_lines > 0 {
        tracing::warn!(
            "ctxopt ingest: {}: {bad_lines} line(s) are not frame-log records",
            log.display()
        );
    }
    Ok(())
}
