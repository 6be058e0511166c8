//! `ctxopt-proxy [OPTIONS] -- <command> [args…]` (or `--url URL` for a remote server over
//! Streamable HTTP, docs/http.md): wraps an MCP stdio server, relays every
//! frame byte for byte and logs each with its token cost, stores tool results in the
//! session store and offers the injected tools (`build_context` and friends). The options
//! and the wiring are [`ctxopt::proxy`]; exit statuses are in docs/exit-codes.md.

use std::process::ExitCode;

use clap::Parser;
use ctxopt::proxy::{self, ProxyArgs, ProxyOptions, PROXY_FAILED};
use ctxopt::relay::Signals;

fn main() -> ExitCode {
    ctxopt::diagnostics::init();
    // Before any thread exists, so that every thread inherits the mask: a signal handed to a
    // thread that does not block it would end the proxy unforwarded.
    let signals = match Signals::block() {
        Ok(signals) => signals,
        Err(err) => {
            tracing::error!("ctxopt-proxy: cannot block the forwarded signals: {err}");
            return ExitCode::from(PROXY_FAILED);
        }
    };
    let mut args = match ProxyArgs::try_parse() {
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
    match proxy::hold_from_env(std::env::var("CTXOPT_HOLD_CHANGED_TOOLS").ok().as_deref()) {
        Ok(on) => args.hold_changed_tools |= on,
        Err(err) => {
            tracing::error!("ctxopt-proxy: {err}");
            return ExitCode::from(PROXY_FAILED);
        }
    }
    let compact_env = std::env::var("CTXOPT_COMPACT_RESULTS").ok();
    let options = match ProxyOptions::resolve(args, compact_env.as_deref()) {
        Ok(options) => options,
        Err(err) => {
            tracing::error!("ctxopt-proxy: {err}");
            return ExitCode::from(PROXY_FAILED);
        }
    };
    match proxy::run(options, &signals) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            tracing::error!("ctxopt-proxy: {err}");
            ExitCode::from(PROXY_FAILED)
        }
    }
}
