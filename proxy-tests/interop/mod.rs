//! Interop tests against real peers: the TypeScript SDK client and the Python SDK's
//! `ClientSession` and `Client`, against `@modelcontextprotocol/server-filesystem`,
//! `-everything`, `-memory` and a Python SDK server, each session run direct and through
//! `ctxopt-proxy`; and a cross-check of our token counts with an independent tokenizer.
//!
//! # Layout
//! - `peers`: where the installed peers are and the command lines that start them.
//! - `session`: running a client driver (direct or proxied) with a deadline.
//! - `log_check`: checks a frame log against the schema, its trailer and the client's view.
//! - `sessions`: the client × server tests.
//! - `evidence`: a session recorded through the proxy, replayed to the same client (`ctxopt
//!   replay`) and verified against the live server and a changed one (`ctxopt verify`).
//! - `remote`: remote servers over Streamable HTTP (server-everything, the Python SDK server)
//!   reached by the TypeScript SDK client directly and through `ctxopt-proxy --url`.
//! - `revision_peers`: the 2026-07-28 multi-round features (`input_required`, `subscriptions/listen`)
//!   with the Python SDK on both ends, direct and through the proxy.
//! - `auth`: `ctxopt auth login` against the TypeScript SDK's example OAuth server, then a
//!   session through `ctxopt-proxy --url` with the stored token, and `logout`.
//! - `recorded_logs`: the sample logs in `frame-logs/` are valid, paired and consistent.
//! - `tasks`: a tool call run as a task (TypeScript SDK, server-everything), accounted when
//!   its result comes.
//! - `token_crosscheck`: o200k_base counts versus npm `gpt-tokenizer` on real frames.
//! - `wrap_remote`: a Claude Code and a Codex remote entry wrapped by `ctxopt wrap`, run as the
//!   client runs it against a live server-everything, and unwrapped.

mod auth;
mod evidence;
mod log_check;
pub(crate) mod peers;
mod recorded_logs;
mod remote;
mod revision_peers;
pub(crate) mod session;
mod sessions;
mod tasks;
mod token_crosscheck;
mod wrap_remote;
