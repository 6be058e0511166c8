//! The Streamable HTTP transport (MCP 2025-03-26 and later), and the legacy HTTP+SSE one
//! (2024-11-05), toward a remote server: the client keeps talking stdio to the proxy, the
//! proxy POSTs each client message and relays the answers (docs/http.md).
//!
//! # Layout
//! - [`config`]: the URL, the static headers (`${ENV}` references resolved), the timeout,
//!   the trusted CAs, and the HTTP client (`ureq`) made from them.
//! - [`outgoing`]: what a client message's headers and answer depend on (method, name,
//!   revision, request ids), read from its text.
//! - [`connection`]: one POST per client message, answers as JSON or as an event stream
//!   handed on message by message, the session, the GET stream, DELETE.
//! - [`legacy_sse`]: the legacy HTTP+SSE transport (2024-11-05): one GET stream for every
//!   server message, each client message POSTed to the endpoint it names.
//! - [`sse`]: server-sent events read one at a time as they arrive.
//! - [`fault`]: what can go wrong, and the JSON-RPC error the client gets for it.
//! - [`serve`]: the relay's [`crate::relay::Remote`] over a [`Connection`].
//! - `workers`: the threads requests run on, reused once idle.
//! - [`auth`]: the MCP authorization flow (`ctxopt auth login`) and the stored token the
//!   connection sends and refreshes.

pub mod auth;
pub mod config;
pub mod connection;
pub mod fault;
pub mod legacy_sse;
pub mod outgoing;
pub mod serve;
pub mod sse;
pub(crate) mod workers;

pub use config::{ConfigError, HttpConfig, Transport};
pub use connection::{Connection, Outcome, ServerMessage};
pub use fault::Fault;
pub use serve::HttpRemote;
