//! Measurement over frame logs and tool lists: `report`, `audit`, `gap`. Logs are read
//! with [`crate::framelog::exchanges`].
//!
//! # Layout
//! - [`canonical`]: the canonical serialization of a tool list (the text audits count).
//! - [`toollist`]: what a server listed, from a capture, a frame log or a live server.
//! - [`live_server`]: a server started over stdio, fed and read a line at a time.
//! - [`probe`]: starts a server and asks it for its lists (both protocol eras).
//! - [`audit`]: the tool-definition footprint of one listing.
//! - [`claude_estimate`]: Claude tokens estimated from o200k, fitted on public paired counts.
//! - [`gap`]: client-reported tool calls beside the calls on the wire.
//! - [`report`]: per-tool cost and anomalies over frame logs.
//! - [`stats`]: nearest-rank order statistics.

pub mod audit;
pub(crate) mod canonical;
pub mod claude_estimate;
pub mod gap;
pub mod live_server;
pub mod probe;
pub mod report;
pub(crate) mod stats;
pub mod toollist;

/// What can go wrong while measuring.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeasureError {
    /// The input is not a `tools/list` response.
    #[error("not a tools/list response: {0}")]
    NotAToolList(String),
    /// Reading a frame log failed.
    #[error(transparent)]
    Log(#[from] crate::framelog::reader::ReadError),
    /// The server could not be started or did not answer as MCP requires.
    #[error("server: {0}")]
    Server(String),
    /// A client's output is not in the format expected.
    #[error("client output: {0}")]
    ClientOutput(String),
    /// A frame log holds no usable `tools/list` response.
    #[error("{0}")]
    NoListing(String),
}
