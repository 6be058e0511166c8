//! The records of a frame log (JSON Lines): one header, one line per frame, one trailer.
//!
//! This is a public interface, specified in `docs/frame-log.md` with a JSON Schema in
//! `docs/frame-log.schema.json`. Any change that a reader could notice bumps
//! [`FORMAT_VERSION`].

use serde::{Deserialize, Serialize};

/// The version of the frame-log format written into every header.
pub const FORMAT_VERSION: u32 = 5;

/// Which way a frame travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Client to server, relayed.
    C2s,
    /// Server to client, relayed.
    S2c,
    /// Client to proxy: a frame the proxy consumed itself (an injected tool call).
    C2p,
    /// Proxy to client: a frame the proxy originated (an injected tool result).
    P2c,
}

impl Direction {
    /// The short name used in logs and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::C2s => "c2s",
            Direction::S2c => "s2c",
            Direction::C2p => "c2p",
            Direction::P2c => "p2c",
        }
    }
}

/// What a frame is, by its JSON-RPC shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FrameKind {
    /// Has `method` and `id`.
    Request,
    /// Has `id` and `result`.
    Response,
    /// Has `id` and `error`.
    Error,
    /// Has `method` and no `id`.
    Notification,
    /// A JSON array of messages.
    Batch,
    /// Anything else: not JSON, not an object or array, not JSON-RPC, not UTF-8.
    Unparseable,
}

/// How the frame's line ended on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LineEnding {
    /// `\n`.
    Lf,
    /// `\r\n`.
    Crlf,
    /// End of stream with no line ending.
    None,
}

/// The first line of a log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`FORMAT_VERSION`] at the time of writing.
    pub format_version: u32,
    /// The proxy's crate version.
    pub proxy_version: String,
    /// The tokenizer that produced every `tokens` figure (`o200k_base`, `cl100k_base`, `chars/4`).
    pub tokenizer: String,
    /// When the proxy started, RFC 3339 UTC.
    pub started: String,
    /// A short name for the wrapped server (from `--name`, or derived from its argv).
    pub server_name: String,
    /// The server's command and arguments.
    pub server_argv: Vec<String>,
    /// The working directory the server was started in.
    pub cwd: String,
    /// The server's process id (absent if it could not be started, and for a remote
    /// server).
    pub server_pid: Option<u32>,
    /// The proxy's own process id.
    pub proxy_pid: u32,
    /// How the proxy reaches a remote server (`streamable-http`; `server_argv` is then its
    /// URL); absent for a server the proxy started (stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
}

/// What the HTTP transport adds to a server frame that reached the proxy over HTTP (a
/// frame's `http`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpFacts {
    /// Which exchange carried it: `post` (the answer to a client message the proxy POSTed),
    /// `get` (the standalone stream for server-initiated messages), or `proxy` (made by the
    /// proxy in place of an answer the server did not give: see `fault`).
    pub via: HttpVia,
    /// The HTTP status of the response that carried it (absent when there was none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// That response's `Content-Type` (its media type only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The `Mcp-Session-Id` in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The SSE event's `id`, when the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// With `via: proxy`: why the proxy answered in the server's place (connection
    /// refused, a timeout, HTTP 503, a stream cut mid-event, an expired session, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
}

/// The exchange that carried a frame (see [`HttpFacts::via`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HttpVia {
    /// The response to a POSTed client message (JSON, or an event of its SSE stream).
    Post,
    /// An event of the standalone GET stream.
    Get,
    /// Made by the proxy for a transport fault.
    Proxy,
    /// A value this reader does not know (written by a later version).
    #[serde(other)]
    Other,
}

/// Per-item accounting of a batch member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchItem {
    /// The item's kind (never `batch`).
    pub kind: FrameKind,
    /// The id as its JSON text on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The method, or for a response the method of the request it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The tool name for `tools/call` requests and their responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Microseconds since the paired request was relayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<u64>,
    /// `true` when a `tools/call` result says `isError: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The JSON-RPC error code of an error response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i64>,
    /// Tokens of the item's compact JSON text.
    pub tokens: u64,
    /// Tokens attributable to `_meta` members inside the item.
    pub meta_tokens: u64,
}

/// One relayed (or proxy-originated) frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// Monotonic sequence number across both directions, starting at 0.
    pub seq: u64,
    /// When the frame was relayed, RFC 3339 UTC with microseconds.
    pub ts: String,
    /// Which way it went.
    pub dir: Direction,
    /// Bytes on the wire, line ending included.
    pub bytes: u64,
    /// How the line ended.
    pub line_ending: LineEnding,
    /// The JSON-RPC shape.
    pub kind: FrameKind,
    /// The id exactly as its JSON text on the wire (`1`, `"\"abc\""`, `18446744073709551616`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The method; for a response, the method of the request it answers (paired by id per direction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The tool name for `tools/call` requests and their responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// For a response: microseconds since its request was relayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<u64>,
    /// The protocol revision in effect for this frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// `true` when a `tools/call` result says `isError: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The JSON-RPC error code of an error response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i64>,
    /// The result's `resultType` when it is not `complete` (2026-07-28: `input_required`,
    /// or `task` for a task handle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<String>,
    /// On a client request that retries an `input_required` result (with its
    /// `requestState`, or its `inputResponses` for the same method and tool): the `seq` of
    /// that result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u64>,
    /// The task a frame is about (the tasks extension): on a `tools/call` answer that is a
    /// task handle, on the `tasks/*` requests naming it and on their answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// On a notification of a `subscriptions/listen` stream: the subscription, the listen
    /// request's id as its JSON text (its `_meta["io.modelcontextprotocol/subscriptionId"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<String>,
    /// Tokens of the frame text (without the line ending).
    pub tokens: u64,
    /// Tokens of the frame minus tokens of the frame with every `_meta` member removed.
    pub meta_tokens: u64,
    /// Per-item accounting when `kind` is `batch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<BatchItem>>,
    /// The frame text exactly, without the line ending (when it is valid UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// The frame bytes, base64 (standard alphabet, padded), when they are not valid UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_b64: Option<String>,
    /// Present only on a server frame the proxy rewrote before relaying it (a `tools/list`
    /// result extended with the injected tools, an `initialize` / `server/discover` result
    /// given the tools capability): the server's original text, without the line ending.
    /// `raw`, `bytes` and the counts are then those of the frame the client received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_raw: Option<String>,
    /// Present only on a `p2c` frame the proxy sent in place of a server's `tools/call`
    /// result it compacted (`--compact-results`): the `seq` of that server frame, logged
    /// just before as `s2c`, as received. `method`, `tool` and `latency_us` are the server
    /// frame's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacts: Option<u64>,
    /// Present only on an `s2c` frame answering a `tools/call` whose text counted more
    /// than the compaction limit (`--compact-results`), or whose result has no text and
    /// whose frame counted more, and that the proxy relayed whole all the same: why, and
    /// the figures behind it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_whole: Option<LeftWhole>,
    /// How many secrets were replaced by placeholders in `raw`, `raw_b64` and `server_raw`
    /// (absent when none were, or the proxy ran with `--no-redact`). `bytes` and the token
    /// counts are those of the frame as relayed, before redaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redactions: Option<u64>,
    /// Present only on a server frame that came over HTTP (`ctxopt-proxy --url`): the
    /// exchange, status, content type, session and event id that carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpFacts>,
}

/// Why a `tools/call` result over the compaction limit reached the client whole (a
/// frame's `left_whole`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftWhole {
    /// Why.
    pub reason: LeftWholeReason,
    /// The compaction limit, in tokens.
    pub limit: u64,
    /// Tokens of the result's `structuredContent` (apart from members repeating the text),
    /// with [`LeftWholeReason::StructuredContent`] only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_tokens: Option<u64>,
    /// The most bytes the store keeps, with [`LeftWholeReason::OverKeptCap`] only (the
    /// frame's own `bytes` say how far over it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_cap: Option<u64>,
}

/// The reasons of [`LeftWhole`], as stable strings in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeftWholeReason {
    /// `structured_content`: its `structuredContent` must stay valid against the tool's
    /// `outputSchema` (declared, or unknown because the tool was never listed) and takes
    /// more than half the limit.
    StructuredContent,
    /// `over_kept_cap`: the frame is larger than the store keeps (`--max-kept-bytes`), and
    /// a result is never cut unless its whole is kept.
    OverKeptCap,
    /// `not_kept`: the store was unavailable or could not write the original.
    NotKept,
    /// `store_busy`: another writer held the store (or it was still being opened) when the
    /// result came: the relay does not wait for the store, so the original could not be
    /// kept at once.
    StoreBusy,
    /// `no_text`: the result has no `text` block to compact (only `image`, `audio`,
    /// `resource` or `resource_link` blocks), and the frame counts more than the limit.
    NoText,
    /// A reason this reader does not know (written by a later version).
    #[serde(other)]
    Other,
}

impl Frame {
    /// The frame's wire text parsed as JSON, when it is UTF-8 text that is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        self.raw
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw).ok())
    }

    /// What the server sent, parsed as JSON: its original text (`server_raw`) where the
    /// proxy rewrote the frame (a `tools/list` answer extended with the injected tools), the
    /// wire text otherwise.
    pub(crate) fn server_json(&self) -> Option<serde_json::Value> {
        match &self.server_raw {
            Some(raw) => serde_json::from_str(raw).ok(),
            None => self.json(),
        }
    }
}

/// How the server ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitStatus {
    /// The exit code, if it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal number, if a signal killed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

/// Counts per relayed direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerDirection {
    /// Client to server.
    pub c2s: u64,
    /// Server to client.
    pub s2c: u64,
}

/// The last line of a log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trailer {
    /// When the proxy finished, RFC 3339 UTC.
    pub ts: String,
    /// How the server ended.
    pub exit: ExitStatus,
    /// Frames relayed each way.
    pub frames_relayed: PerDirection,
    /// Frame records written to this log.
    pub frames_logged: u64,
    /// Frames relayed but not logged (log write or accounting failures).
    pub frames_unlogged: u64,
    /// Bytes relayed each way.
    pub bytes: PerDirection,
    /// Logging and accounting errors, one line each.
    pub errors: Vec<String>,
    /// What the session ran with (since format version 5; absent in older logs, and when
    /// the server never started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pins: Option<Box<Pins>>,
}

/// What a session ran with: the pins a figure of its log is re-derived against (a
/// trailer's `pins`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pins {
    /// The client, from `initialize` params or a request's `_meta` (the last one seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Identity>,
    /// The server, from its `initialize` or `server/discover` result (the last one seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Identity>,
    /// Every protocol revision the frames carried, in order of first appearance.
    pub protocols: Vec<String>,
    /// The digest of each tool catalog the server listed, in order, a repeat of the one
    /// before left out.
    pub catalog_digests: Vec<String>,
    /// The ctxopt version that wrote the log.
    pub ctxopt_version: String,
    /// What changed during the session, sorted: `catalog`, `client` (its name or
    /// version), `protocol` (the revision of the server's answers), `server`.
    pub changed: Vec<String>,
}

/// A peer's name and version (`clientInfo`, `serverInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// `name`.
    pub name: String,
    /// `version` (`null` when the peer gave none).
    #[serde(default)]
    pub version: Option<String>,
}

/// Any line of a frame log, tagged by its `type` member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum LogLine {
    /// The header.
    Header(Header),
    /// A frame.
    Frame(Box<Frame>),
    /// The trailer.
    Trailer(Trailer),
}
