//! `ctxopt-proxy [OPTIONS] -- <command> [args…]`: wraps an MCP stdio server, relays every
//! frame byte for byte and logs each with its token cost.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ctxopt::relay::{self, server_name, LogTarget, ProxyConfig};
use ctxopt::tokenizer::Tokenizer;

#[derive(Debug, Parser)]
#[command(
    name = "ctxopt-proxy",
    version,
    override_usage = "ctxopt-proxy [OPTIONS] -- <COMMAND> [ARGS]...",
    about = "Relay an MCP stdio server byte for byte and log every frame with its token cost",
    after_help = "Logs go to $XDG_STATE_HOME/ctxopt/logs (default ~/.local/state/ctxopt/logs), \
                  one file per run, mode 0600. They hold raw frames: treat them as secrets."
)]
struct Args {
    /// Write the frame log to this file (appended to if it exists).
    #[arg(long, value_name = "PATH", conflicts_with = "no_log")]
    log: Option<PathBuf>,
    /// Do not write a frame log.
    #[arg(long)]
    no_log: bool,
    /// A short name for the server, used in the log file name and header.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Tokenizer for token counts: o200k_base, cl100k_base or chars/4.
    #[arg(long, default_value = "o200k_base")]
    tokenizer: Tokenizer,
    /// Seconds a server may take to exit after a forwarded signal before it is killed.
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = parse_seconds)]
    grace_period: Duration,
    /// The server's command and arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

/// Seconds (fractions allowed) between 0 and one day.
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if !(0.0..=86_400.0).contains(&secs) {
        return Err("expected seconds between 0 and 86400".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let log = match (args.no_log, args.log) {
        (true, _) => LogTarget::Disabled,
        (false, Some(path)) => LogTarget::Path(path),
        (false, None) => LogTarget::Default,
    };
    let config = ProxyConfig {
        server_name: args
            .name
            .map(|n| server_name::sanitize(&n))
            .unwrap_or_else(|| server_name::derive(&args.command)),
        command: args.command,
        log,
        tokenizer: args.tokenizer,
        grace: args.grace_period,
    };
    match relay::run(config) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("ctxopt-proxy: {err}");
            ExitCode::from(70)
        }
    }
}
