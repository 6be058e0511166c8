//! `ctxopt`: build contexts from session records and measure what MCP costs.

/// The allocator of this binary: the optimizer allocates many small strings, and mimalloc
/// serves them faster than the system allocator (see docs/benchmarks.md, "Speed"). The proxy
/// binary keeps the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod audit;
mod auth;
mod bench;
mod build_context;
mod client_select;
mod evidence_args;
mod export;
mod gap;
mod import;
mod import_swe;
mod ingest;
mod install_hooks;
mod output_file;
mod replay;
mod report;
mod run_hook;
mod serve;
mod status;
mod trust;
mod verify;
mod wrap;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "ctxopt",
    version,
    about = "Compact session context and measure MCP token costs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build a compact, provenance-tagged context from session records.
    Build(build_context::Args),
    /// Run the optimizer benchmark over fixtures/scenarios.
    Bench(bench::Args),
    /// Per-tool cost report over frame logs.
    Report(report::Args),
    /// Tool-definition footprint of a server's tools/list.
    Audit(audit::Args),
    /// Compare client-reported tool calls with the calls on the wire.
    Gap(gap::Args),
    /// Convert a mini-swe-agent trajectory (*.traj.json) into a records file.
    ImportSwe(import_swe::Args),
    /// Convert Claude Code, Gemini CLI, Codex or mini-swe-agent sessions into a records file.
    Import(import::Args),
    /// Run as a Claude Code or Gemini CLI hook: payload on stdin, context JSON on stdout.
    Hook(run_hook::Args),
    /// Serve build_context and the other context tools as a stdio MCP server.
    Serve(serve::Args),
    /// Replay frame logs into the session store.
    Ingest(ingest::Args),
    /// Send frame logs to an OpenTelemetry collector as spans and metrics (OTLP/HTTP).
    Export(export::Args),
    /// Put every stdio server of your MCP clients behind ctxopt-proxy (and add ctxopt serve).
    Wrap(wrap::WrapArgs),
    /// Take the servers from behind ctxopt-proxy again, exactly as they were.
    Unwrap(wrap::UnwrapArgs),
    /// Serve a frame log back as a stdio MCP server (answers from the recorded session).
    Replay(replay::Args),
    /// Re-send a frame log's requests to a live server and report what drifted (exit 1).
    Verify(verify::Args),
    /// Accept a server's changed tool catalog held back by ctxopt-proxy --hold-changed-tools
    /// (without a name: list what waits).
    Trust(trust::Args),
    /// Per client config: which servers are wrapped, their latest log and last session.
    Status(status::Args),
    /// Install or remove ctxopt's hooks in Claude Code's or Gemini CLI's settings.
    Hooks(install_hooks::Args),
    /// Authorize ctxopt-proxy for a remote server that asks for OAuth (login, logout, status).
    Auth(auth::Args),
}

fn main() -> ExitCode {
    ctxopt::diagnostics::init();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() && run_hook::run_by_a_client(&args) => {
            return run_hook::refuse_command_line(&args, &e)
        }
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Build(args) => build_context::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Report(args) => report::run(args),
        Command::Audit(args) => audit::run(args),
        Command::Gap(args) => gap::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Ingest(args) => ingest::run(args),
        Command::ImportSwe(args) => import_swe::run(args),
        Command::Export(args) => export::run(args),
        Command::Import(args) => import::run(args),
        Command::Hook(args) => run_hook::run(args),
        Command::Wrap(args) => wrap::run_wrap(args),
        Command::Unwrap(args) => wrap::run_unwrap(args),
        Command::Replay(args) => replay::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Trust(args) => trust::run(args),
        Command::Status(args) => status::run(args),
        Command::Hooks(args) => install_hooks::run(args),
        Command::Auth(args) => auth::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            tracing::error!("ctxopt: {err:#}");
            ExitCode::from(2)
        }
    }
}
