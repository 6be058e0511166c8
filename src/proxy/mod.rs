//! The proxy: its options ([`options`]), its adapters to the relay, and the wiring that runs
//! them ([`run`]).
//!
//! The adapters: [`ingest_sink::IngestSink`] (a [`FrameSink`]: the tap hands it every frame,
//! it stores tool results) and [`intercept::Interceptor`] (a [`FrameHandler`]: it extends
//! `tools/list` results and answers calls to injected tools).
//!
//! Exit status (docs/exit-codes.md): the server's own, passed through (128 + N when signal N
//! killed it); 127 when the server command was not found, 126 when it could not be executed;
//! [`PROXY_FAILED`] (125) when the proxy itself failed (bad arguments, a workspace it cannot
//! use, a relay it could not set up), the code `env(1)` and `timeout(1)` use for theirs.

pub(crate) mod ingest_sink;
pub(crate) mod intercept;
pub mod options;

use std::sync::Arc;

use crate::evidence::catalog_watch::CatalogWatch;
use crate::evidence::hold_back::HoldBack;
use crate::evidence::pins::PinTracker;
use crate::injected::Bridge;
use crate::otel::live::OtlpSink;
use crate::otel::ExportConfig;
use crate::redact::Redactor;
use crate::relay::{self, FrameHandler, FrameSink, ProxyConfig, RelayError, Remote, Signals};
use crate::store::Store;
use crate::upstream::http::{ConfigError, HttpRemote};
use ingest_sink::IngestSink;
use intercept::Interceptor;
pub use options::{hold_from_env, OptionsError, ProxyArgs, ProxyOptions};

/// The proxy's own failure, distinct from anything the wrapped server reports but its own 125.
pub const PROXY_FAILED: u8 = 125;

/// Runs the proxy: the store opened beside the relay, the injected tools, compaction and the
/// tool filter wired into the relay, the live export when configured. The server's exit
/// status, or why the relay could not run.
///
/// `signals` comes from [`Signals::block`], called before the process started any thread:
/// the threads started here (the store's opening, the OpenTelemetry export) inherit the mask.
pub fn run(options: ProxyOptions, signals: &Signals) -> Result<u8, RunError> {
    // The installation's redactor; tool content put into OpenTelemetry spans is redacted
    // with it even under --no-redact (that flag is about what this machine keeps).
    let keyed = Arc::new(Redactor::for_store(options.store_file.as_deref()));
    let redactor = if options.redact {
        Some(keyed.clone())
    } else {
        tracing::warn!(
            "ctxopt-proxy: --no-redact: the frame log and the store keep secrets in clear"
        );
        None
    };
    for name in options.tool_filter.injected_names_hidden() {
        tracing::warn!(
            "ctxopt-proxy: --hide-tools {name}: ctxopt-proxy's own {name} is not hidden (its tools are chosen with --inject, and get_result comes with --compact-results); only a server tool of that name is"
        );
    }
    // Resolving the options made sure a hold has a store file to keep its catalogs beside.
    let hold = options
        .store_file
        .as_deref()
        .filter(|_| options.hold_changed_tools)
        .map(|file| HoldBack::new(file, &options.server_name, options.store.as_deref()));
    // Opened beside the relay: a store another process holds locked never delays the
    // server's start.
    let store = options.store;
    let store_redactor = redactor.clone();
    let bridge = Bridge::opening(
        move || {
            Store::open_without_waiting(&Store::location_arg(store.as_deref())?)
                .map(|s| s.redacting(store_redactor.clone()))
        },
        options.scope,
    )
    .with_selection(options.inject)
    .with_tool_filter(options.tool_filter);
    let bridge = match options.compaction {
        Some(limits) => bridge
            .with_compaction(limits)
            .with_kept_cap(options.max_kept_bytes),
        None => bridge,
    };
    tracing::debug!(
        "ctxopt-proxy: server {} {:?}, log {:?}, inject {:?}",
        options.server_name,
        options.command,
        options.log,
        options.inject
    );
    let bridge = Arc::new(bridge);
    let handler = (bridge.takes_part() || hold.is_some()).then(|| {
        let interceptor = Interceptor::new(bridge.clone());
        Arc::new(match hold {
            Some(hold) => interceptor.holding_back(hold),
            None => interceptor,
        }) as Arc<dyn FrameHandler>
    });
    let mut sinks: Vec<Box<dyn FrameSink>> = vec![
        Box::new(IngestSink::new(bridge)),
        Box::new(PinTracker::default()),
    ];
    if let Some(store_file) = options.store_file.as_deref() {
        sinks.push(Box::new(CatalogWatch::beside(
            store_file,
            options.tokenizer,
            options.hold_changed_tools,
        )));
    }
    sinks.extend(otlp_sink(
        options.otlp_endpoint.as_deref(),
        options.otlp_capture_content,
        keyed,
    ));
    let remote = match options.http {
        Some(config) => Some(Box::new(HttpRemote::new(config)?) as Box<dyn Remote>),
        None => None,
    };
    Ok(relay::run(
        ProxyConfig {
            server_name: options.server_name,
            command: options.command,
            remote,
            log: options.log,
            tokenizer: options.tokenizer,
            grace: options.grace,
            sinks,
            handler,
            answer_delay: options.answer_delay,
            redactor,
        },
        signals,
    )?)
}

/// Why the proxy could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The relay could not be set up.
    #[error(transparent)]
    Relay(#[from] RelayError),
    /// The remote server's settings cannot be used (a `--ca-cert` without a certificate).
    #[error(transparent)]
    Http(#[from] ConfigError),
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
