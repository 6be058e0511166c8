//! Servers the proxy reaches over the network instead of starting them.
//!
//! - [`http`]: the Streamable HTTP transport (`ctxopt-proxy --url`), relayed as a
//!   [`crate::relay::Remote`] and usable on its own ([`http::Connection`]).
//!
//! This layer sits beside the relay: it names the relay's [`crate::relay::Remote`]
//! interface and the frame log's records, nothing above them.

pub mod http;
