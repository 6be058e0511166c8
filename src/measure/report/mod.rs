//! `report`: per server and tool, what the calls in one or more frame logs cost, plus the
//! anomalies the proxy saw. The logs are read line by line (see [`collect()`]); only
//! per-tool figures are kept, never frames, so memory grows with the number of calls,
//! not the size of the log.

mod collect;
pub mod html;
pub mod text;

use serde::Serialize;

pub use collect::collect;

pub use crate::framelog::Identity;

use super::claude_estimate::ClaudeEstimate;
use super::stats::{Latency, Summary};

/// Most anomalies listed one by one per kind (all are counted).
pub(crate) const MAX_LISTED_ANOMALIES: usize = 200;

/// The whole report. Its JSON form is a public interface (see `docs/report.md`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The tokenizer of every figure (the logs' own, from their headers).
    pub tokenizer: String,
    /// One entry per log.
    pub sessions: Vec<Session>,
    /// Per server, per tool.
    pub servers: Vec<ServerReport>,
    /// What should not have happened.
    pub anomalies: Anomalies,
    /// The saving ledger of `--compact-results`: per session and tool (absent when no
    /// result was compacted or left whole).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub compaction: Vec<Compaction>,
    /// The server tools the client was offered and no session called, per server by name
    /// (absent when every offered tool was called).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub never_called: Vec<NeverCalled>,
    /// Every change of a server's tool catalog (absent when none changed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub catalog_changes: Vec<CatalogChange>,
    /// What the client hooks injected into sessions' context, per session and event, from
    /// the store's ledger (absent when no store was read or it holds none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hook_injections: Vec<crate::store::injections::InjectionTotal>,
}

impl Report {
    /// Tokens the hooks injected, summed.
    pub fn injected_tokens(&self) -> u64 {
        self.hook_injections.iter().map(|i| i.tokens).sum()
    }

    /// Tokens wire compaction saved, summed.
    pub fn saved_tokens(&self) -> u64 {
        self.compaction.iter().map(|c| c.saved_tokens).sum()
    }
}

/// A server tool offered to the client (in the `tools/list` answers it got, the proxy's
/// injected and hidden tools aside) in some of the sessions, and called in none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NeverCalled {
    /// The server's short name.
    pub server_name: String,
    /// The tool.
    pub tool: String,
    /// Sessions whose client was offered it.
    pub sessions: u64,
    /// Tokens of its definition, as `audit` counts one tool, in the last session that
    /// offered it: what it costs each session that lists it once.
    pub tokens_per_session: u64,
    /// The tokens of its definition summed over the sessions that offered it.
    pub total_tokens: u64,
}

/// The results of one tool the proxy compacted (or left whole over the limit) in one
/// session, counted from the logged frames: the server's (`s2c`, with `left_whole` when it
/// was relayed as it came) and the client's (`p2c` with `compacts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Compaction {
    /// The log's file name.
    pub log: String,
    /// The server's short name.
    pub server_name: String,
    /// The tool.
    pub tool: String,
    /// Results compacted.
    pub results: u64,
    /// Results over the limit relayed whole all the same (their frames' `left_whole`);
    /// their tokens are in neither sum below.
    pub left_whole: u64,
    /// Tokens of the server's frames that were compacted.
    pub server_tokens: u64,
    /// Tokens of the frames the client got instead.
    pub client_tokens: u64,
    /// `server_tokens - client_tokens`.
    pub saved_tokens: u64,
}

/// One frame log (one proxy run: one client, one server).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Session {
    /// The log's file name.
    pub log: String,
    /// The server's short name, from the header.
    pub server_name: String,
    /// When the proxy started.
    pub started: String,
    /// Protocol revisions seen, in order of first appearance.
    pub protocols: Vec<String>,
    /// The client, from `initialize` params or the request `_meta`.
    pub client: Option<Identity>,
    /// The server, from the `initialize` / `server/discover` result.
    pub server: Option<Identity>,
    /// Frames per direction.
    pub frames: DirectionCounts,
    /// Wire bytes per direction (line endings included).
    pub bytes: DirectionCounts,
    /// Frame tokens per direction, as the log recorded them.
    pub tokens: DirectionCounts,
    /// Envelope (`_meta`) tokens per direction, as the log recorded them.
    pub meta_tokens: DirectionCounts,
    /// `tools/call` requests.
    pub calls: u64,
    /// Sum of the call tokens of every answered call.
    pub call_tokens: u64,
    /// JSON-RPC error answers of any method, both directions.
    pub jsonrpc_errors: u64,
    /// Lines of the log that are not frame-log records (damage, truncation).
    pub unreadable_log_lines: u64,
    /// Frames the proxy relayed but could not log (from the trailer).
    pub frames_unlogged: u64,
    /// `false` when the log ends without a trailer (the proxy did not finish).
    pub complete: bool,
    /// The ctxopt version that wrote the log (its header's `proxy_version`).
    pub ctxopt_version: String,
    /// The digest of each tool catalog the server listed, in order, a repeat of the one
    /// before left out (`docs/replay.md`, "The catalog digest").
    pub catalog_digests: Vec<String>,
    /// What changed during the session: `client` (its name or version), `server` (its
    /// name or version), `protocol` (the revision of successful answers), `catalog`.
    pub changed_mid_run: Vec<String>,
    /// The server's last tool catalog of the session in Claude's context, as the native
    /// tools parameter: an estimate (`docs/audit.md`), absent when it listed no tools.
    pub claude_tool_list: Option<ClaudeEstimate>,
}

/// A server's tool catalog that differs from the one it listed before (in an earlier
/// session of the same server, by short name and `serverInfo` name, in start order, or
/// earlier in the same session).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogChange {
    /// The server's short name.
    pub server_name: String,
    /// The log of the catalog before.
    pub log_then: String,
    /// The log of the catalog after (the same log for a change within a session).
    pub log_now: String,
    /// What changed.
    pub diff: crate::evidence::catalog::CatalogDiff,
}

/// Counts per direction: relayed (`c2s`, `s2c`) and proxy-local (`c2p`, `p2c`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DirectionCounts {
    /// Client to server.
    pub c2s: u64,
    /// Server to client.
    pub s2c: u64,
    /// Client to proxy (injected tools).
    pub c2p: u64,
    /// Proxy to client.
    pub p2c: u64,
}

/// The tools of one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerReport {
    /// The server's short name (from the log headers).
    pub name: String,
    /// One entry per tool, by name; proxy-injected tools after the server's own.
    pub tools: Vec<ToolReport>,
}

/// What one tool's calls cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolReport {
    /// The tool name.
    pub tool: String,
    /// `server` for relayed calls, `proxy` for tools the proxy injected and answered.
    pub origin: String,
    /// `tools/call` requests.
    pub calls: u64,
    /// Calls that got an answer (result or error).
    pub answered: u64,
    /// Tokens per answered call: request `params` plus response `result` (or `error`).
    pub call_tokens: Summary,
    /// The same with every `_meta` member removed.
    pub stripped_tokens: Summary,
    /// Sum of call tokens minus stripped tokens.
    pub envelope_tokens: u64,
    /// `envelope_tokens / call_tokens.total` (0 when there are no tokens).
    pub envelope_share: f64,
    /// Wire bytes per answered call (request frame plus response frame).
    pub bytes: Summary,
    /// Request-to-answer latency.
    pub latency: Latency,
    /// Answers that were JSON-RPC errors.
    pub jsonrpc_errors: u64,
    /// Results with `isError: true`.
    pub is_error_results: u64,
    /// The call tokens' total in Claude's context as JSON text: an estimate
    /// (`docs/audit.md`), given when the logs count in `o200k_base`.
    pub claude_estimate: Option<ClaudeEstimate>,
}

/// Anomalies, counted and listed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Anomalies {
    /// Requests with no answer by the end of their log.
    pub unanswered_requests: u64,
    /// Responses whose id matches no pending request.
    pub unknown_id_responses: u64,
    /// `tools/call` requests naming a tool the server never listed in that session.
    pub unadvertised_tool_calls: u64,
    /// `notifications/cancelled` frames.
    pub cancellations: u64,
    /// Frames that are not JSON-RPC (banners, garbage, invalid UTF-8).
    pub unparseable_frames: u64,
    /// The first [`MAX_LISTED_ANOMALIES`] of each kind.
    pub listed: Vec<Anomaly>,
}

/// One anomaly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anomaly {
    /// `unanswered_request`, `unknown_id_response`, `unadvertised_tool_call`,
    /// `cancellation` or `unparseable_frame`.
    pub kind: String,
    /// The log's file name.
    pub log: String,
    /// The frame's sequence number.
    pub seq: u64,
    /// Direction of the frame.
    pub dir: String,
    /// What it was (method and id, tool, first bytes of the text).
    pub detail: String,
}
