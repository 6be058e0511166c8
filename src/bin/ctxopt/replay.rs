//! `ctxopt replay`.

use std::path::PathBuf;
use std::process::ExitCode;

use ctxopt::evidence::recording::{load, LoadOptions};
use ctxopt::evidence::replay_server::{ReplayOptions, ReplayServer};

use crate::evidence_args::MatchArgs;

/// Arguments of `ctxopt replay`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The frame log to serve (opened read-only).
    #[arg(value_name = "FRAME-LOG")]
    log: PathBuf,
    /// Also fail on client messages out of recorded order, and on recorded ones never sent
    /// (exit status 1 when the client leaves).
    #[arg(long)]
    strict: bool,
    /// Serve what the client received (the proxy's compacted results, its rewritten tool
    /// lists) instead of what the server sent.
    #[arg(long)]
    as_delivered: bool,
    #[command(flatten)]
    matching: MatchArgs,
}

/// Runs `ctxopt replay`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let options = LoadOptions {
        run: args.matching.run,
        allow_incomplete: args.matching.allow_incomplete,
        as_delivered: args.as_delivered,
    };
    let recording = load(&args.log, &options)?;
    for note in &recording.notes {
        eprintln!("ctxopt replay: {note}");
    }
    if recording.redacted_frames > 0 {
        eprintln!(
            "ctxopt replay: {} frames of this log had secrets replaced by placeholders: they are served with the placeholders, not the original text",
            recording.redacted_frames
        );
    }
    let server = ReplayServer::new(
        recording,
        ReplayOptions {
            strict: args.strict,
            volatile: args.matching.volatile()?,
        },
    );
    let summary = server.serve(std::io::stdin().lock(), std::io::stdout().lock())?;
    eprintln!("ctxopt replay: {summary}");
    Ok(if summary.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
