//! Frame logs as evidence you can run: serve a recorded session back as an MCP server
//! (`ctxopt replay`), and re-send it to a live server to see what changed (`ctxopt verify`).
//!
//! # Layout
//! - [`recording`]: a frame log read as a recorded session (and refused, with line and
//!   reason, when it cannot be replayed faithfully).
//! - [`volatile`]: the fields left out when messages are compared.
//! - [`json_diff`]: where two JSON values differ (redaction placeholders matched by length).
//! - [`replay_server`]: the replaying stdio server.
//! - [`verify`]: the recorded client's requests re-sent to a live server, its answers
//!   compared with the recorded ones.
//! - [`catalog`]: the digest of a tool catalog, and what changed between two.
//! - [`trusted`]: the catalogs the proxy trusts, one file per server beside the store.
//! - [`catalog_watch`]: the proxy's memory of each server's catalog across sessions.
//! - [`hold_back`]: a changed catalog held back on the wire until `ctxopt trust`.
//! - [`pins`]: what a session ran with (peers, revisions, catalogs, ctxopt), for the
//!   log trailer and `ctxopt report`.

pub mod catalog;
pub mod catalog_watch;
pub(crate) mod hold_back;
pub mod json_diff;
pub mod pins;
pub mod recording;
pub mod replay_server;
pub mod trusted;
pub mod verify;
pub mod volatile;

/// What can go wrong with a recorded session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvidenceError {
    /// The log cannot be used: where and why.
    #[error("{path}: line {line}: {reason}")]
    Log {
        /// The log file.
        path: String,
        /// The 1-based line.
        line: u64,
        /// Why.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("{0}")]
    Io(String),
    /// The options do not fit the log.
    #[error("{0}")]
    Usage(String),
    /// The live server could not be started or did not answer.
    #[error(transparent)]
    Server(#[from] crate::measure::MeasureError),
}
