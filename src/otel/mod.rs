//! OpenTelemetry export: every request/response pair (and every notification) of a session
//! as a span following the MCP semantic conventions, with ctxopt's exact token figures under
//! `ctxopt.*`, sent over OTLP/HTTP (protobuf) to the collector a team already runs.
//!
//! Off unless configured ([`config`]): with no `OTEL_EXPORTER_OTLP_*ENDPOINT` variable and no
//! `--otlp-endpoint`, no exporter exists and nothing opens a socket. See `docs/otel.md`.
//!
//! # Layout
//! - [`config`]: the standard `OTEL_*` variables and the command-line endpoint.
//! - [`spans`]: frame-log records of one session in, finished spans out (pairing, names,
//!   attributes, parents from a request's `traceparent`).
//! - [`trace_context`]: span and trace ids (derived from the log, so a re-export gives the
//!   same ids) and W3C `traceparent` parsing.
//! - [`metrics`]: the `mcp.client.operation.duration` histogram and token counters per tool.
//! - [`encode`]: spans and metrics as OTLP protobuf requests.
//! - [`exporter`]: the bounded queue and the exporter thread; what it drops is counted.
//! - [`log_spans`]: existing frame logs as the same spans (`ctxopt export --otlp`).
//! - [`live`]: the proxy's export of the session it relays.

pub mod config;
pub(crate) mod encode;
pub mod exporter;
pub(crate) mod live;
pub mod log_spans;
pub(crate) mod metrics;
pub(crate) mod spans;
pub(crate) mod trace_context;

pub use config::ExportConfig;
pub use exporter::{ExportReport, Exporter};

/// What goes wrong in export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// A variable or option has a value export cannot use.
    #[error("{name}: {reason}")]
    Config {
        /// The variable or option.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The exporter thread could not be started.
    #[error("cannot start the OTLP exporter: {0}")]
    Start(#[source] std::io::Error),
    /// A frame log could not be read.
    #[error(transparent)]
    Log(#[from] crate::framelog::reader::ReadError),
}
