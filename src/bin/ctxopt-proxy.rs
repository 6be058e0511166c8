//! `ctxopt-proxy [OPTIONS] -- <command> [args…]`: wraps an MCP stdio server, relays every
//! frame byte for byte and logs each with its token cost, stores tool results in the
//! session store and offers the injected tools (`build_context` and friends).
//!
//! Exit status (docs/exit-codes.md): the server's own, passed through (128 + N when signal N
//! killed it); 127 when the server command was not found, 126 when it could not be executed;
//! [`PROXY_FAILED`] (125) when the proxy itself failed (bad arguments, a workspace it cannot
//! use, a relay it could not set up), the code `env(1)` and `timeout(1)` use for theirs.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use ctxopt::compact;
use ctxopt::injected::tool_filter::ToolFilter;
use ctxopt::injected::tools::Selection;
use ctxopt::injected::Bridge;
use ctxopt::otel::live::OtlpSink;
use ctxopt::otel::ExportConfig;
use ctxopt::proxy::ingest_sink::IngestSink;
use ctxopt::proxy::intercept::Interceptor;
use ctxopt::redact::Redactor;
use ctxopt::relay::{self, server_name, FrameHandler, FrameSink, LogTarget, ProxyConfig};
use ctxopt::store::{self, Scope, Store};
use ctxopt::tokenizer::Tokenizer;

#[derive(Debug, Parser)]
#[command(
    name = "ctxopt-proxy",
    version,
    override_usage = "ctxopt-proxy [OPTIONS] -- <COMMAND> [ARGS]...",
    about = "Relay an MCP stdio server byte for byte, log every frame with its token cost, store the \
             tool results and answer build_context and friends from them",
    after_help = "Logs go to $XDG_STATE_HOME/ctxopt/logs (default ~/.local/state/ctxopt/logs), \
                  one file per run, mode 0600. They hold raw frames: treat them as secrets. \
                  Tool results go to the session store ($XDG_STATE_HOME/ctxopt/store.sqlite3 \
                  by default, mode 0600). Secrets are redacted in both (not on the wire); see \
                  docs/security.md."
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
    /// Injected tools: none (a byte-exact relay), build_context, or all six.
    #[arg(long, value_name = "WHICH", default_value = "all")]
    inject: Selection,
    /// The session store: a file, or `:memory:` for none that outlives the run.
    #[arg(long, value_name = "PATH")]
    store: Option<String>,
    /// The workspace the session's records belong to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Compact every tools/call result whose text counts more than TOKENS (o200k_base) to at
    /// most TOKENS; the whole result stays one get_result call away. Also
    /// CTXOPT_COMPACT_RESULTS. At least 200.
    #[arg(long, value_name = "TOKENS", value_parser = parse_limit)]
    compact_results: Option<usize>,
    /// With --compact-results: the largest result kept for get_result, in bytes; a larger
    /// one is relayed whole (with a line on stderr).
    #[arg(long, value_name = "BYTES", default_value_t = ctxopt::store::results::MAX_KEPT_BYTES)]
    max_kept_bytes: usize,
    /// Take these server tools out of tools/list (comma-separated); calls to them get an
    /// error and never reach the server.
    #[arg(long, value_name = "NAME,…", conflicts_with = "only_tools")]
    hide_tools: Option<String>,
    /// Offer only these server tools (comma-separated); the injected tools stay.
    #[arg(long, value_name = "NAME,…")]
    only_tools: Option<String>,
    /// Keep raw copies in the frame log and the store: secrets are not redacted (they never
    /// are on the wire). Warns on stderr.
    #[arg(long)]
    no_redact: bool,
    /// Hold each injected tool's answer back this many milliseconds (for testing
    /// cancellation).
    #[arg(long, value_name = "MS", default_value = "0", hide = true)]
    answer_delay_ms: u64,
    /// Export every request/response pair as an OpenTelemetry span (and metrics) to this
    /// OTLP/HTTP collector, e.g. http://127.0.0.1:4318; the standard OTEL_* variables work
    /// too. Off unless configured.
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// With export on: put tool arguments and results into spans (secret-named members
    /// masked). They can hold file contents and secrets.
    #[arg(long)]
    otlp_capture_content: bool,
    /// The server's command and arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true)]
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

/// A compaction limit: a whole number of tokens, at least [`compact::MIN_LIMIT`].
fn parse_limit(text: &str) -> Result<usize, String> {
    let tokens: usize = text
        .trim()
        .parse()
        .map_err(|e| format!("{e} (expected a number of tokens)"))?;
    if tokens < compact::MIN_LIMIT {
        return Err(format!(
            "expected at least {} tokens (the sentence naming get_result needs room)",
            compact::MIN_LIMIT
        ));
    }
    Ok(tokens)
}

/// The proxy's own failure, distinct from anything the wrapped server reports but its own 125.
const PROXY_FAILED: u8 = 125;

fn main() -> ExitCode {
    ctxopt::diagnostics::init();
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(err) => {
            // `--help` and `--version` print and succeed; a usage error is the proxy's failure.
            let _ = err.print();
            return if err.exit_code() == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(PROXY_FAILED)
            };
        }
    };
    let compact_results = match args.compact_results {
        Some(tokens) => Some(tokens),
        None => match std::env::var("CTXOPT_COMPACT_RESULTS") {
            Ok(text) if !text.trim().is_empty() => match parse_limit(&text) {
                Ok(tokens) => Some(tokens),
                Err(err) => {
                    tracing::error!("ctxopt-proxy: CTXOPT_COMPACT_RESULTS={text:?}: {err}");
                    return ExitCode::from(PROXY_FAILED);
                }
            },
            _ => None,
        },
    };
    let log = match (args.no_log, args.log) {
        (true, _) => LogTarget::Disabled,
        (false, Some(path)) => LogTarget::Path(path),
        (false, None) => LogTarget::Default,
    };
    let server_name = args
        .name
        .map(|n| server_name::sanitize(&n))
        .unwrap_or_else(|| server_name::derive(&args.command));
    let scope = match Scope::resolve(
        args.workspace.as_deref(),
        &server_name,
        store::new_session_id(),
    ) {
        Ok(scope) => scope,
        Err(err) => {
            tracing::error!("ctxopt-proxy: workspace: {err}");
            return ExitCode::from(PROXY_FAILED);
        }
    };
    let store_file = match args.store.as_deref() {
        Some(store::location::MEMORY) => None,
        Some(path) => Some(PathBuf::from(path)),
        None => store::StoreLocation::default_file().and_then(|l| match l {
            store::StoreLocation::File(path) => Some(path),
            store::StoreLocation::Memory => None,
        }),
    };
    // The installation's redactor; tool content put into OpenTelemetry spans is redacted
    // with it even under --no-redact (that flag is about what this machine keeps).
    let keyed = Arc::new(Redactor::for_store(store_file.as_deref()));
    let redactor = if args.no_redact {
        tracing::warn!(
            "ctxopt-proxy: --no-redact: the frame log and the store keep secrets in clear"
        );
        None
    } else {
        Some(keyed.clone())
    };
    // Opened beside the relay: a store another process holds locked never delays the
    // server's start.
    let tool_filter =
        ToolFilter::from_options(args.hide_tools.as_deref(), args.only_tools.as_deref());
    for name in tool_filter.injected_names_hidden() {
        tracing::warn!(
            "ctxopt-proxy: --hide-tools {name}: ctxopt-proxy's own {name} is not hidden (its tools are chosen with --inject, and get_result comes with --compact-results); only a server tool of that name is"
        );
    }
    let store = args.store;
    let store_redactor = redactor.clone();
    let bridge = Bridge::opening(
        move || Store::open_arg(store.as_deref()).map(|s| s.redacting(store_redactor)),
        scope,
    )
    .with_selection(args.inject)
    .with_tool_filter(tool_filter);
    let bridge = match compact_results {
        Some(tokens) => bridge
            .with_compaction(compact::Limits {
                tokens,
                tokenizer: args.tokenizer,
            })
            .with_kept_cap(args.max_kept_bytes),
        None => bridge,
    };
    tracing::debug!(
        "ctxopt-proxy: server {server_name} {:?}, log {log:?}, inject {:?}",
        args.command,
        args.inject
    );
    let bridge = Arc::new(bridge);
    let handler = bridge
        .takes_part()
        .then(|| Arc::new(Interceptor::new(bridge.clone())) as Arc<dyn FrameHandler>);
    let mut sinks: Vec<Box<dyn FrameSink>> = vec![Box::new(IngestSink::new(bridge))];
    sinks.extend(otlp_sink(
        args.otlp_endpoint.as_deref(),
        args.otlp_capture_content,
        keyed,
    ));
    let config = ProxyConfig {
        server_name,
        command: args.command,
        log,
        tokenizer: args.tokenizer,
        grace: args.grace_period,
        sinks,
        handler,
        answer_delay: Duration::from_millis(args.answer_delay_ms),
        redactor,
    };
    match relay::run(config) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            tracing::error!("ctxopt-proxy: {err}");
            ExitCode::from(PROXY_FAILED)
        }
    }
}

/// The live OpenTelemetry export, when `--otlp-endpoint` or the `OTEL_*` variables turn it
/// on; a configuration it cannot use is said on stderr and relaying goes on without it.
fn otlp_sink(
    endpoint: Option<&str>,
    capture_content: bool,
    redactor: Arc<Redactor>,
) -> Option<Box<dyn FrameSink>> {
    let started = ExportConfig::from_env(endpoint, capture_content).and_then(|config| {
        config
            .map(|config| OtlpSink::new(&config, redactor))
            .transpose()
    });
    match started {
        Ok(sink) => sink.map(|sink| Box::new(sink) as Box<dyn FrameSink>),
        Err(err) => {
            tracing::warn!(
                "ctxopt-proxy: OpenTelemetry export: {err}; relaying continues without export"
            );
            None
        }
    }
}
